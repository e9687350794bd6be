"""Static readiness checks of a tool: everything that can be known without running it.

Used by ``tools check``, which must start nothing and create nothing. It resolves exactly
what a call would resolve (``CommandResolver``) and reports the first problem of each part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from artifactize.domain.declarations.model import (
    AgentTool,
    BuiltinAgentTool,
    BuiltinHumanTool,
    HumanTool,
    SessionCommand,
)
from artifactize.domain.declarations.templates import TemplateError, parse_operand
from artifactize.domain.project.scope import working_directory
from artifactize.domain.project.workspace import Artifact
from artifactize.domain.tools.commands.prep import EXECUTABLE_OUTSIDE, CommandResolver
from artifactize.domain.tools.human.prep import HumanResolver
from artifactize.domain.tools.locations import resolve_location
from artifactize.domain.tools.results import ToolError
from artifactize.ports.filesystem import EntryKind


def _problem(check: Callable[[], object]) -> str | None:
    try:
        check()
    except ToolError as exc:
        return exc.message
    return None


OPENER_MISSING = (
    "The desktop opener {opener} is not on PATH: `open` cannot hand anything over on this "
    "machine (install it, e.g. Debian's xdg-utils, or declare an output tool instead)."
)


@dataclass(frozen=True)
class Preflight:
    resolver: CommandResolver
    desktop_opener: str | None = None  # what Human `open` hands over to; None: not checked

    def agent_tool(self, owner: Artifact, tool: AgentTool) -> list[str]:
        problems = [p for p in [self.resolver.owner_problem(owner)] if p]
        if isinstance(tool, BuiltinAgentTool):
            problems.extend(self._builtin(owner, tool.builtin, tool.args))
            return problems
        operands = tool.args if tool.protocol == "json" else ()
        problems.extend(self._command(owner, tool.command, operands, tool.execution_paths))
        if tool.session is not None:
            session = next(s for s in owner.agent_sessions if s.name == tool.session)
            for command in (session.start, session.stop):
                problems.extend(self._session_command(owner, command))
        return problems

    def human_tool(self, owner: Artifact, tool: HumanTool) -> list[str]:
        problems = [p for p in [self.resolver.owner_problem(owner)] if p]
        if isinstance(tool, BuiltinHumanTool):
            problems.extend(self._builtin(owner, tool.builtin, tool.args))
        else:  # the same resolution a call makes, each argument reported on its own
            human = HumanResolver(self.resolver)
            checks: list[Callable[[], object]] = [
                partial(self.resolver.program, owner, tool.command)
            ]
            checks.extend(partial(human.argument, owner, arg) for arg in tool.args)
            problems.extend(p for p in map(_problem, checks) if p)
        return problems

    def _session_command(self, owner: Artifact, command: SessionCommand) -> Iterator[str]:
        yield from self._command(owner, command.command, command.args, command.execution_paths)

    def _command(
        self, owner: Artifact, command: str, operands: tuple[str, ...], paths: tuple[str, ...]
    ) -> Iterator[str]:
        checks: list[Callable[[], object]] = [partial(self.resolver.program, owner, command)]
        checks.extend(partial(self.resolver.operand, owner, arg) for arg in operands)
        checks.extend(partial(self.resolver.execution_path, path) for path in paths)
        yield from (p for p in map(_problem, checks) if p)

    def _builtin(
        self, owner: Artifact, builtin: str, args: tuple[str, ...] | None
    ) -> Iterator[str]:
        if builtin == "open" and self.desktop_opener is not None:
            path = self.resolver.environment.get("PATH", "")
            cwd = working_directory(self.resolver.workspace, owner)
            if self.resolver.programs.find_on_path(self.desktop_opener, path, cwd) is None:
                yield OPENER_MISSING.format(opener=self.desktop_opener)
        if args is None or builtin == "graph":
            return
        target = args[0]
        if builtin == "help":
            problem = (
                EXECUTABLE_OUTSIDE
                if "/" in target
                else _problem(lambda: self.resolver.program(owner, target))
            )
        elif builtin == "open" and target.startswith(("http://", "https://")):
            problem = None
        elif "{" in target:
            problem = self._placeholder_target(owner, target)
        else:
            expected = EntryKind.DIRECTORY if builtin == "list" else EntryKind.FILE
            problem = self._logical_target(owner, target, (expected,))
        if problem:
            yield problem

    def _logical_target(
        self, owner: Artifact, path: str, expected: tuple[EntryKind, ...]
    ) -> str | None:
        """A fixed built-in target: a logical path that must reach an entry of ``expected``."""
        try:
            location = resolve_location(
                self.resolver.workspace,
                owner.name,
                path,
                self.resolver.scope,
                allow_virtual_root=True,
            )
        except ToolError as exc:
            return exc.message
        if location.is_file_artifact_root:
            kind: EntryKind | None = EntryKind.DIRECTORY
        else:
            kind = self.resolver.kind_at(location.components)
        if kind is None:
            return f"Fixed target {path!r} does not exist in {owner.name}."
        if kind is EntryKind.SYMLINK:
            return f"Fixed target {path!r} is a symbolic link."
        if kind not in expected:
            return f"Fixed target {path!r} is not a {' or '.join(k.value for k in expected)}."
        return None

    def _placeholder_target(self, owner: Artifact, target: str) -> str | None:
        """Human built-in targets may be ``{artifactPath}[/p]`` or ``{name}[/p]``."""
        try:
            operand = parse_operand(target)
        except TemplateError as exc:
            return str(exc)
        if operand is None:
            return None
        if operand.name == "artifactPath":
            if not operand.suffix:
                return None
            return self._logical_target(
                owner, operand.suffix, (EntryKind.FILE, EntryKind.DIRECTORY)
            )
        return _problem(lambda: self.resolver.operand(owner, target))
