"""Static readiness checks of a tool: everything that can be known without running it.

Used by ``tools check`` (which must start nothing and create nothing) and, later, by command
preparation. Each check returns a problem text or None; nothing here spawns a process.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from domain.declarations.model import (
    AgentTool,
    BuiltinAgentTool,
    BuiltinHumanTool,
    HumanTool,
    SessionCommand,
)
from domain.logical_paths import logical_path_problem
from domain.scope import working_directory
from domain.templates import TemplateError, parse_operand
from domain.tools.locations import open_directory_at, resolve_location
from domain.tools.results import ToolError
from domain.workspace import Artifact, Workspace
from ports.filesystem import EntryKind, Filesystem, FilesystemError
from ports.programs import ProgramFinder

EXECUTABLE_UNAVAILABLE = "Tool executable is unavailable: {command}"
EXECUTABLE_OUTSIDE = "Tool executable path is unavailable or outside scope."


@dataclass(frozen=True)
class Preflight:
    workspace: Workspace
    filesystem: Filesystem
    programs: ProgramFinder
    environment: Mapping[str, str]
    scope: tuple[str, ...]

    # --- physical existence -----------------------------------------------------------

    def _kind_at(self, components: tuple[str, ...]) -> EntryKind | None:
        """Kind of the entry at physical ``components`` (no-follow), or None when missing."""
        if not components:
            return EntryKind.DIRECTORY
        try:
            with open_directory_at(
                self.filesystem, self.workspace.root_path, components[:-1]
            ) as parent:
                return parent.entry(components[-1]).kind
        except FilesystemError:
            return None

    def owner_folder(self, owner: Artifact) -> str | None:
        folder = tuple(owner.folder.split("/")) if owner.folder else ()
        if self._kind_at(folder) is not EntryKind.DIRECTORY:
            return f"The working folder of {owner.name} is missing or not a plain directory."
        if (
            owner.target is not None
            and self._kind_at((*folder, owner.target)) is not EntryKind.FILE
        ):
            return "File Artifact target must remain a regular file."
        return None

    def logical_target(self, owner: Artifact, path: str, expected: EntryKind) -> str | None:
        """A fixed built-in target: a logical path that must reach an entry of ``expected``."""
        try:
            location = resolve_location(
                self.workspace, owner.name, path, self.scope, allow_virtual_root=True
            )
        except ToolError as exc:
            return exc.message
        kind = (
            EntryKind.DIRECTORY
            if location.is_file_artifact_root
            else self._kind_at(location.components)
        )
        if kind is None:
            return f"Fixed target {path!r} does not exist in {owner.name}."
        if kind is EntryKind.SYMLINK:
            return f"Fixed target {path!r} is a symbolic link."
        if kind is not expected:
            return f"Fixed target {path!r} is not a {'file' if expected is EntryKind.FILE else 'directory'}."
        return None

    def execution_path(self, path: str) -> str | None:
        if logical_path_problem(path) is not None or not path:
            return f"Execution path {path!r} is not a safe workspace-relative path."
        kind = self._kind_at(tuple(path.split("/")))
        if kind is None:
            return f"Execution path {path!r} does not exist."
        if kind is EntryKind.SYMLINK:
            return f"Execution path {path!r} is a symbolic link."
        if kind is EntryKind.OTHER:
            return f"Execution path {path!r} is a special file."
        return None

    # --- programs and operands ---------------------------------------------------------

    def executable(self, owner: Artifact, command: str) -> str | None:
        if command.startswith("/"):
            return (
                None
                if self.programs.is_executable_file(command)
                else EXECUTABLE_UNAVAILABLE.format(command=command)
            )
        if "/" in command:
            relative = command.removeprefix("./")
            try:
                location = resolve_location(self.workspace, owner.name, relative, self.scope)
            except ToolError:
                return EXECUTABLE_OUTSIDE
            if self._kind_at(location.components) is not EntryKind.FILE:
                return EXECUTABLE_OUTSIDE
            return None
        cwd = working_directory(self.workspace, owner)
        found = self.programs.find_on_path(command, self.environment.get("PATH", ""), cwd)
        return None if found else EXECUTABLE_UNAVAILABLE.format(command=command)

    def operand(self, owner: Artifact, arg: str) -> str | None:
        try:
            operand = parse_operand(arg)
        except TemplateError as exc:
            return str(exc)
        if operand is None or operand.name == "artifactPath":
            return None
        target = self.workspace.resolve_name(owner, operand.name)
        if target is None:
            return f"Unknown Artifact or mount alias: {operand.name}"
        if target.name not in self.scope:
            return f"Artifact is outside this review: {target.name}"
        if not operand.suffix:
            return None
        try:
            location = resolve_location(self.workspace, target.name, operand.suffix, self.scope)
        except ToolError as exc:
            return exc.message
        kind = self._kind_at(location.components)
        if kind is None:
            return f"Artifact input does not exist: {operand.suffix}"
        if kind is EntryKind.SYMLINK:
            return "Artifact symlinks are not supported."
        return None

    # --- whole tools -------------------------------------------------------------------

    def agent_tool(self, owner: Artifact, tool: AgentTool) -> list[str]:
        problems = [p for p in [self.owner_folder(owner)] if p]
        if isinstance(tool, BuiltinAgentTool):
            problems.extend(self._builtin(owner, tool.builtin, tool.args))
            return problems
        problems.extend(
            self._command(owner, tool.command, tool.args if tool.protocol == "json" else ())
        )
        problems.extend(p for p in map(self.execution_path, tool.execution_paths) if p)
        if tool.session is not None:
            session = next(s for s in owner.agent_sessions if s.name == tool.session)
            for command in (session.start, session.stop):
                problems.extend(self._session_command(owner, command))
        return problems

    def human_tool(self, owner: Artifact, tool: HumanTool) -> list[str]:
        problems = [p for p in [self.owner_folder(owner)] if p]
        if isinstance(tool, BuiltinHumanTool):
            problems.extend(self._builtin(owner, tool.builtin, tool.args))
        else:
            problems.extend(self._command(owner, tool.command, tool.args))
        return problems

    def _session_command(self, owner: Artifact, command: SessionCommand) -> Iterator[str]:
        yield from self._command(owner, command.command, command.args)
        yield from (p for p in map(self.execution_path, command.execution_paths) if p)

    def _command(self, owner: Artifact, command: str, operands: tuple[str, ...]) -> Iterator[str]:
        problem = self.executable(owner, command)
        if problem:
            yield problem
        yield from (p for p in (self.operand(owner, arg) for arg in operands) if p)

    def _builtin(
        self, owner: Artifact, builtin: str, args: tuple[str, ...] | None
    ) -> Iterator[str]:
        if args is None or builtin == "graph":
            return
        if builtin == "help":
            problem = self.executable(owner, args[0]) if "/" not in args[0] else EXECUTABLE_OUTSIDE
            if problem:
                yield problem
            return
        target = args[0]
        if builtin == "open" and target.startswith(("http://", "https://")):
            return
        if "{" in target:
            yield from (p for p in [self._placeholder_target(owner, target)] if p)
            return
        expected = EntryKind.DIRECTORY if builtin == "list" else EntryKind.FILE
        if builtin == "open":
            return
        problem = self.logical_target(owner, target, expected)
        if problem:
            yield problem

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
            return self._exists(owner, operand.suffix)
        return self.operand(owner, target)

    def _exists(self, owner: Artifact, path: str) -> str | None:
        for expected in (EntryKind.FILE, EntryKind.DIRECTORY):
            if self.logical_target(owner, path, expected) is None:
                return None
        return f"Fixed target {path!r} does not exist in {owner.name}."
