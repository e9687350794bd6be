"""What ``config check`` resolves before anything runs: every program and file operand.

Declarations can be valid TOML with valid keys and still name a program that does not exist
(``pyhton3``), an operand path that is not there (``{tests}/test_nope.py``) or a Human tool
file that is missing; ``verify`` would find out only when it ran the eval. Here each is
resolved exactly as a run would resolve it (``CommandResolver``, ``Preflight``), without
starting anything, and reported with the file, line and key like a declaration error:

- each runtime eval's program and ``{name}`` operands, in the eval's admitted scope;
- each Agent command tool's program (and its session's start and stop programs);
- each Human tool: a command tool's program and operands, a built-in's fixed file.

An Artifact outside a tool's scope is ``tool_scopes``' report, not repeated here. A runtime
program that runs on artifactize's own interpreter is a warning, not an error: it may be
what the author wants, but it is how a project's tests come to import artifactize's
packages instead of the checkout (docs/runtime-evals.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from artifactize.domain.declarations.diagnostics import Problem
from artifactize.domain.declarations.model import (
    CommandAgentTool,
    RuntimeProfile,
)
from artifactize.domain.declarations.toml_source import KeyLocator
from artifactize.domain.project.program_paths import is_absolute_program
from artifactize.domain.project.runtime_programs import (
    ARGUMENT_UNRESOLVED,
    program_document,
    program_problem,
)
from artifactize.domain.project.scope import artifact_scope, eval_scope
from artifactize.domain.project.workspace import Artifact, EvalRef, Workspace
from artifactize.domain.tools.commands.prep import CommandResolver
from artifactize.domain.tools.preflight import Preflight
from artifactize.domain.tools.results import ToolError
from artifactize.ports.filesystem import Filesystem
from artifactize.ports.programs import ProgramFinder, ProgramIdentity

if TYPE_CHECKING:  # a TypedDict, for annotations: config check needs no ports.documents
    from artifactize.ports.documents import ProgramDocument

OUTSIDE_REVIEW = "Artifact is outside this review: "  # tool_scopes reports these


@dataclass
class ProgramReport:
    """Errors (``config check`` exits 1) and warnings (printed, exit 0)."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


@dataclass
class RuntimeCheck:
    """One runtime eval: its program (None when it cannot be resolved) and each problem
    as (key path, message)."""

    program: ProgramDocument | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self, eval_id: str) -> dict[str, object]:
        return {
            "evalId": eval_id,
            "ok": not self.problems,
            "program": self.program,
            "problems": [{"keyPath": key, "message": message} for key, message in self.problems],
        }


@dataclass(frozen=True)
class ProgramChecks:
    filesystem: Filesystem
    programs: ProgramFinder
    environment: Mapping[str, str]  # the caller's: PATH decides what a bare name runs

    def memoized(self) -> ProgramChecks:
        """These checks with every program lookup answered once (``MemoProgramFinder``):
        for one command over a workspace, where a thousand evals run the same program."""
        if isinstance(self.programs, MemoProgramFinder):
            return self
        return replace(self, programs=MemoProgramFinder(self.programs))

    def check(self, workspace: Workspace) -> ProgramReport:
        if not isinstance(self.programs, MemoProgramFinder):
            return self.memoized().check(workspace)
        report = ProgramReport()
        for ref in workspace.evals():
            if isinstance(ref.eval.profile, RuntimeProfile):
                self._runtime(workspace, ref, report)
        for owner in workspace.artifacts.values():
            self._tools(workspace, owner, report)
        return report

    def _resolver(self, workspace: Workspace, scope: tuple[str, ...]) -> CommandResolver:
        return CommandResolver(workspace, self.filesystem, self.programs, self.environment, scope)

    def runtime_program(self, workspace: Workspace, ref: EvalRef) -> ProgramDocument | str:
        """The program a runtime eval would run, or why it cannot (``status``): its command
        alone, resolved as ``runtime_check`` resolves it. The eval's scope is computed only
        for a command that names a path in it (``CommandResolver.program`` reads the scope
        for nothing else): ``status`` asks this of every runtime eval."""
        assert isinstance(ref.eval.profile, RuntimeProfile)
        command = ref.eval.profile.command
        scope = eval_scope(workspace, ref.qualified_id) if "/" in command else ()
        check = RuntimeCheck()
        self._command(self._resolver(workspace, scope), ref, check)
        return check.program if check.program is not None else check.problems[0][1]

    def runtime_check(self, workspace: Workspace, ref: EvalRef) -> RuntimeCheck:
        """A runtime eval's program and operands resolved as ``verify`` resolves them."""
        assert isinstance(ref.eval.profile, RuntimeProfile)
        profile, owner = ref.eval.profile, ref.artifact
        resolver = self._resolver(workspace, eval_scope(workspace, ref.qualified_id))
        key = f"evals.{ref.eval.id}.profile"
        check = RuntimeCheck()
        self._command(resolver, ref, check)
        for index, arg in enumerate(profile.args):
            try:
                resolver.operand(owner, arg)
            except ToolError as exc:
                if exc.message.startswith(OUTSIDE_REVIEW):
                    continue  # the eval's scope includes what its args name: not reachable
                message = ARGUMENT_UNRESOLVED.format(arg=arg, reason=exc.message)
                check.problems.append((f"{key}.args[{index}]", message))
        return check

    def _command(self, resolver: CommandResolver, ref: EvalRef, check: RuntimeCheck) -> None:
        """The runtime eval's command into ``check``: its program, or the problem."""
        assert isinstance(ref.eval.profile, RuntimeProfile)
        command, owner = ref.eval.profile.command, ref.artifact
        try:
            program = resolver.program(owner, command)
        except ToolError as exc:
            message = program_problem(owner, command, exc, windows=self.programs.windows_paths)
            check.problems.append((f"evals.{ref.eval.id}.profile.command", message))
        else:
            check.program = program_document(self.programs, program)

    def _runtime(self, workspace: Workspace, ref: EvalRef, report: ProgramReport) -> None:
        check = self.runtime_check(workspace, ref)
        locate = _Locator(ref.artifact)
        report.problems.extend(locate(key, message) for key, message in check.problems)
        if check.program is not None and check.program["warning"] is not None:
            key = f"evals.{ref.eval.id}.profile.command"
            report.warnings.append(locate(key, check.program["warning"]))

    def _tools(self, workspace: Workspace, owner: Artifact, report: ProgramReport) -> None:
        if not owner.agent_tools and not owner.human_tools:
            return
        preflight = Preflight(self._resolver(workspace, artifact_scope(workspace, owner.name)))
        locate = _Locator(owner)
        for tool in owner.agent_tools:
            if isinstance(tool, CommandAgentTool):
                key = f"views.agent_tools.{tool.name}.command"
                for message in _own(preflight.agent_tool(owner, tool), program_only=True):
                    report.problems.append(locate(key, message))
        for human in owner.human_tools:
            key = f"views.human_tools.{human.name}"
            for message in _own(preflight.human_tool(owner, human), program_only=False):
                report.problems.append(locate(key, message))


class MemoProgramFinder:
    """A ``ProgramFinder`` that asks the one it wraps once per question, for the length of
    one command: the programs of a workspace are few, its evals many (``status`` resolved
    ``true`` on PATH and followed its links once per runtime eval). A ``PATH`` search
    depends on the working folder only through a relative ``PATH`` entry, so without one
    the folder is left out of the question."""

    def __init__(self, programs: ProgramFinder) -> None:
        self.programs = programs
        self.windows_paths = programs.windows_paths
        self._found: dict[tuple[str, str, str], str | None] = {}
        self._executable: dict[str, bool] = {}
        self._identity: dict[str, ProgramIdentity] = {}
        self._relative: dict[str, bool] = {}  # PATH value -> whether an entry is relative

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        question = (name, path_variable, cwd if self._relative_entry(path_variable) else "")
        if question not in self._found:
            self._found[question] = self.programs.find_on_path(name, path_variable, cwd)
        return self._found[question]

    def is_executable_file(self, path: str) -> bool:
        if path not in self._executable:
            self._executable[path] = self.programs.is_executable_file(path)
        return self._executable[path]

    def identity(self, path: str) -> ProgramIdentity:
        if path not in self._identity:
            self._identity[path] = self.programs.identity(path)
        return self._identity[path]

    def _relative_entry(self, path_variable: str) -> bool:
        if path_variable not in self._relative:
            separator = ";" if self.windows_paths else ":"  # os.pathsep of each kind of system
            self._relative[path_variable] = any(
                entry and not is_absolute_program(entry, windows=self.windows_paths)
                for entry in path_variable.split(separator)
            )
        return self._relative[path_variable]


def _own(problems: list[str], *, program_only: bool) -> Iterator[str]:
    """The problems this check owns: not an Artifact outside the scope (``tool_scopes``),
    and for an Agent tool, whose operands depend on the review's scope, only its programs."""
    for problem in problems:
        if problem.startswith(OUTSIDE_REVIEW):
            continue
        if program_only and not problem.startswith(("Tool executable", "Program ")):
            continue
        yield problem


class _Locator:
    """A Problem at a key of one Artifact's declaration, its line looked up once."""

    def __init__(self, owner: Artifact) -> None:
        self.owner = owner
        self.locator: KeyLocator | None = None

    def __call__(self, key_path: str, message: str) -> Problem:
        self.locator = self.locator or KeyLocator(self.owner.source.text)
        line = self.locator.line_of(key_path)
        return Problem(self.owner.source.path, line, key_path, message)
