"""``tools check``: declarations, scopes, schemas and per-tool readiness, and one explicit call.

Runtime evals are checked too, always statically: each one's program (shown, with where
its links lead) and ``{name}`` operands are resolved as ``verify`` would resolve them.

Static by default: it starts no owner process and creates no directory, database, Run,
verdict or cache entry. ``--execute`` calls exactly one selected tool, as a reviewer would:
an Agent tool in the author's environment, a Human tool in the reviewer's real environment
(a ``launch`` tool is handed over with its stdout and stderr disconnected).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from artifactize.domain.declarations.diagnostics import ConfigError
from artifactize.domain.declarations.model import (
    AgentProfile,
    CommandAgentTool,
    HumanProfile,
    RuntimeProfile,
)
from artifactize.domain.declarations.toml_source import KeyLocator
from artifactize.domain.errors import InvocationError as InvocationError  # raised here
from artifactize.domain.project.scope import artifact_scope, eval_scope
from artifactize.domain.project.workspace import Artifact, EvalRef, UnknownName, Workspace
from artifactize.domain.tools.commands.diagnostics import recording
from artifactize.domain.tools.commands.prep import CommandResolver
from artifactize.domain.tools.human.descriptions import human_tools_of
from artifactize.domain.tools.human.registry import HumanToolPorts, HumanToolRegistry
from artifactize.domain.tools.preflight import Preflight
from artifactize.domain.tools.registry import AgentToolRegistry, RegistryError, ToolPorts
from artifactize.domain.tools.sessions import SessionPorts
from artifactize.ports.callbacks import WorkspaceLoader
from artifactize.ports.clock import Clock
from artifactize.ports.programs import ProgramFinder

if TYPE_CHECKING:
    from artifactize.domain.project.program_checks import ProgramChecks

AUDIENCES = ("agent", "human")
TOOL_NOT_REGISTERED = "The selected tool is not registered for this Artifact and audience."
TOOL_RETURNED_ERROR = "The tool returned an error; no review result was created."
CANCELLED = "Cancelled by a signal: the call was stopped and its processes and directories removed."
RUNTIME_NOT_EXECUTED = (
    "A runtime eval is checked statically (its program and operands); `verify` runs it."
)
NOT_WIRED = "This artifactize cannot run tools of this audience: no process ports are wired."


@dataclass(frozen=True)
class ToolsCheckRequest:
    eval_id: str | None = None
    artifact: str | None = None
    audience: str | None = None
    tool: str | None = None
    execute: bool = False
    args: Mapping[str, Any] | None = None
    args_given: bool = False


def validate_request(request: ToolsCheckRequest) -> None:
    """Refuse impossible combinations before anything is read."""
    if request.audience is not None and request.audience not in AUDIENCES:
        raise InvocationError("--audience must be agent or human.")
    if request.eval_id is not None and (
        request.artifact is not None or request.audience is not None
    ):
        raise InvocationError(
            "An eval selector determines scope and audience; do not combine it with "
            "--artifact or --audience."
        )
    if request.execute and (
        request.tool is None
        or (request.eval_id is None and (request.artifact is None or request.audience is None))
    ):
        raise InvocationError(
            "--execute requires --tool and either an eval selector or both --artifact and --audience."
        )
    if request.args_given and not request.execute:
        raise InvocationError(
            "--args requires Agent tool execution; Human tools take no free arguments."
        )
    if request.args_given and request.audience == "human":
        raise InvocationError(
            "--args requires Agent tool execution; Human tools take no free arguments."
        )


@dataclass
class _Scope:
    eval_id: str | None
    artifact_id: str | None
    audience: str
    names: tuple[str, ...]
    tools: list[Any] = field(default_factory=list)  # ToolDefinition or HumanToolDefinition
    registry: AgentToolRegistry | None = None
    human_registry: HumanToolRegistry | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "evalId": self.eval_id,
            "artifactId": self.artifact_id,
            "audience": self.audience,
            "tools": [t.to_json() for t in self.tools],
        }

    @property
    def label(self) -> str:
        """How the grouped report names the scope: ``eval docs/signoff``, ``docs (agent)``."""
        if self.eval_id is not None:
            return f"eval {self.eval_id}"
        return f"Artifact {self.artifact_id} ({self.audience})"


@dataclass
class Report:
    scopes: list[_Scope] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    diagnostics: dict[str, Any] | None = None  # for the tool's author, beside ``result``
    grouped: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # id(scope) ->
    executing: str | None = None  # the tool being called, while it is
    cancelled: bool = False
    runtime: list[dict[str, Any]] = field(default_factory=list)  # runtime evals, static

    def cancel(self) -> None:
        """The command was cancelled (SIGINT/SIGTERM); its cleanup has already run."""
        self.cancelled = True
        self.check("execute", self.executing, CANCELLED)

    def check(
        self, stage: str, tool: str | None, problem: str | None, scope: _Scope | None = None
    ) -> None:
        entry = {"stage": stage, "tool": tool, "ok": problem is None, "message": problem}
        self.checks.append(entry)
        if scope is not None:
            self.grouped.setdefault(id(scope), []).append(entry)

    def by_scope(self) -> list[dict[str, Any]]:
        """The checks grouped by the scope (eval or Artifact) they ran in, so a failure says
        which scope failed even when the same tool appears in several."""
        groups = []
        for scope in self.scopes:
            checks = self.grouped.get(id(scope), [])
            groups.append(
                {
                    "scope": scope.label,
                    "evalId": scope.eval_id,
                    "artifactId": scope.artifact_id,
                    "audience": scope.audience,
                    "ok": all(c["ok"] for c in checks),
                    "checks": checks,
                }
            )
        return groups

    @property
    def ok(self) -> bool:
        return all(c["ok"] for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "ok": self.ok,
            "scopes": [s.to_json() for s in self.scopes],
            "checks": self.checks,
            "byScope": self.by_scope(),
        }
        if self.result is not None:
            data["result"] = self.result
        if self.diagnostics is not None:
            data["diagnostics"] = self.diagnostics
        if self.cancelled:
            data["cancelled"] = True
        if self.runtime:
            data["runtime"] = self.runtime
        return data


@dataclass(frozen=True)
class ToolsCheck:
    load: WorkspaceLoader[Workspace]
    ports: ToolPorts
    programs: ProgramFinder
    session_ports: SessionPorts | None = None
    human_ports: HumanToolPorts | None = None  # needed only to execute a Human tool
    clock: Clock | None = None  # the diagnostics' duration; none without it
    runtime: ProgramChecks | None = None  # runtime evals' programs and operands; None: skipped

    async def run(
        self, repo: str, request: ToolsCheckRequest, report: Report | None = None
    ) -> tuple[dict[str, Any], int]:
        """The report and the exit code (0 ready, 1 not ready); raises ``InvocationError``.

        ``report`` is filled as the check goes, so a caller that cancels the check (on a
        signal) still has it to print, with ``Report.cancel``."""
        validate_request(request)
        report = Report() if report is None else report
        try:
            workspace = self.load(repo)
        except ConfigError as exc:
            report.check("declarations", None, str(exc))
            return report.to_json(), 1
        runtime = self._runtime_refs(workspace, request)
        if runtime is not None:
            self._check_runtime(workspace, runtime, report)
            if request.eval_id is not None:  # a runtime eval: checked statically, nothing else
                return report.to_json(), 0 if report.ok else 1
        scopes = self._scopes(workspace, request, report)
        if request.args_given and any(scope.audience == "human" for scope in scopes):
            raise InvocationError(  # a Human eval selector: its tools take no free arguments
                "--args requires Agent tool execution; Human tools take no free arguments."
            )
        selected = self._select(scopes, request.tool, report)
        for scope, definition in selected:
            environment = self.ports.environment
            if scope.audience == "human" and self.human_ports is not None:
                environment = self.human_ports.environment  # where Human tools run
            preflight = Preflight(
                CommandResolver(
                    workspace, self.ports.filesystem, self.programs, environment, scope.names
                ),
                self.human_ports.desktop_opener if self.human_ports is not None else None,
            )
            owner = workspace.artifact(definition.artifact_id)
            problems = (
                preflight.agent_tool(owner, definition.declaration)
                if scope.audience == "agent"
                else preflight.human_tool(owner, definition.declaration)
            )
            located = located_problems(owner, scope.audience, definition.declaration, problems)
            report.check("preflight", definition.name, located, scope)
        if request.execute and report.ok and len(selected) == 1:
            await self._execute(selected[0], request, report)
        return report.to_json(), 0 if report.ok else 1

    def _runtime_refs(
        self, workspace: Workspace, request: ToolsCheckRequest
    ) -> list[EvalRef] | None:
        """The runtime evals to check: every one when nothing narrows the check, the one
        selected eval when it is a runtime eval; None when none is checked."""
        if self.runtime is None:
            return None
        if request.eval_id is not None:
            try:
                found = workspace.find_eval(request.eval_id)
            except UnknownName as exc:
                raise InvocationError(str(exc)) from None
            if not isinstance(found.eval.profile, RuntimeProfile):
                return None
            if request.execute:
                raise InvocationError(RUNTIME_NOT_EXECUTED)
            return [found]
        if request.artifact is not None or request.audience is not None or request.tool:
            return None
        return [ref for ref in workspace.evals() if isinstance(ref.eval.profile, RuntimeProfile)]

    def _check_runtime(self, workspace: Workspace, refs: list[EvalRef], report: Report) -> None:
        """Each runtime eval's program (shown) and operands, resolved as verify would."""
        assert self.runtime is not None
        for ref in refs:
            check = self.runtime.runtime_check(workspace, ref)
            report.runtime.append(check.to_json(ref.qualified_id))
            line = KeyLocator(ref.artifact.source.text)
            problems = [
                f"{ref.artifact.source.path}:{line.line_of(key)}: {key}: {message}"
                for key, message in check.problems
            ]
            report.check("runtime", ref.qualified_id, "; ".join(problems) or None)

    def _scopes(
        self, workspace: Workspace, request: ToolsCheckRequest, report: Report
    ) -> list[_Scope]:
        if request.eval_id is not None:
            return [self._eval_scope(workspace, request.eval_id, report)]
        if request.artifact is None and request.audience is None and request.tool is None:
            return [
                self._eval_scope(workspace, ref.qualified_id, report)
                for ref in workspace.evals()
                if isinstance(ref.eval.profile, AgentProfile | HumanProfile)
            ]
        if request.artifact is not None and request.artifact not in workspace.artifacts:
            raise InvocationError(f"Unknown Artifact: {request.artifact}")
        artifacts = [request.artifact] if request.artifact else list(workspace.artifacts)
        audiences = [request.audience] if request.audience else list(AUDIENCES)
        return [
            self._fill(
                workspace, _Scope(None, name, audience, artifact_scope(workspace, name)), report
            )
            for name in artifacts
            for audience in audiences
        ]

    def _eval_scope(self, workspace: Workspace, eval_id: str, report: Report) -> _Scope:
        try:
            found = workspace.find_eval(eval_id)
        except UnknownName as exc:
            raise InvocationError(str(exc)) from None
        if isinstance(found.eval.profile, AgentProfile):
            audience = "agent"
        elif isinstance(found.eval.profile, HumanProfile):
            audience = "human"
        else:
            raise InvocationError("Select a declared Agent, Human or runtime eval.")
        return self._fill(
            workspace, _Scope(eval_id, None, audience, eval_scope(workspace, eval_id)), report
        )

    def _fill(self, workspace: Workspace, scope: _Scope, report: Report) -> _Scope:
        if scope.audience == "human":
            if self.human_ports is None:
                scope.tools = list(human_tools_of(workspace, scope.names))
                return scope
            try:
                scope.human_registry = HumanToolRegistry(workspace, scope.names, self.human_ports)
            except RegistryError as exc:
                report.check("preflight", None, str(exc))
                return scope
            scope.tools = scope.human_registry.list()
            return scope
        try:
            scope.registry = AgentToolRegistry(workspace, scope.names, self.ports)
        except RegistryError as exc:
            report.check("preflight", None, str(exc))
            return scope
        scope.tools = scope.registry.list()
        return scope

    def _select(
        self, scopes: list[_Scope], tool: str | None, report: Report
    ) -> list[tuple[_Scope, Any]]:
        report.scopes = scopes
        if tool is None:
            return [(scope, definition) for scope in scopes for definition in scope.tools]
        chosen: list[tuple[_Scope, Any]] = []
        for scope in scopes:
            names = {tool}
            if scope.artifact_id is not None:
                names.add(f"{tool}_{scope.artifact_id}")
            matched = [d for d in scope.tools if d.name in names]
            scope.tools = matched
            chosen.extend((scope, d) for d in matched)
        if not chosen:
            report.check("preflight", tool, TOOL_NOT_REGISTERED)
        return chosen

    async def _execute(
        self, selected: tuple[_Scope, Any], request: ToolsCheckRequest, report: Report
    ) -> None:
        scope, definition = selected
        report.executing = definition.name
        if scope.audience == "human":
            await self._execute_human(scope, definition.name, report)
            return
        if scope.registry is None:
            report.check("execute", definition.name, NOT_WIRED)
            return
        args = dict(request.args) if request.args is not None else {}
        registry = scope.registry
        cleanup: list[str] = []
        # Diagnostics are recorded for this one call only, for the author reading this
        # report; nothing a reviewer sees or a review stores ever records them.
        with recording() as recorder:
            started = self.clock.monotonic() if self.clock is not None else None
            if self.session_ports is not None and _is_bound(definition.declaration):
                # A fresh lazy session: it starts on this call and is cleaned up right after.
                sessions = registry.sessions(self.session_ports, definition.name)
                try:
                    result = await registry.with_sessions(sessions).call(
                        definition.name, args, None
                    )
                finally:
                    cleanup = await sessions.close()
            else:
                result = await registry.call(definition.name, args, None)
            if started is not None and self.clock is not None:
                recorder.duration_ms = round((self.clock.monotonic() - started) * 1000)
        report.result = result.to_json()
        report.diagnostics = recorder.to_json()
        problem = TOOL_RETURNED_ERROR if result.is_error else None
        report.check("execute", definition.name, problem, scope)
        if cleanup:
            report.check("execute", definition.name, "; ".join(cleanup), scope)

    async def _execute_human(self, scope: _Scope, name: str, report: Report) -> None:
        """A real call in the reviewer's environment; a launch keeps its output disconnected."""
        if scope.human_registry is None:
            report.check("execute", name, NOT_WIRED)
            return
        result = await scope.human_registry.call(name)
        report.result = result.to_json()
        report.check("execute", name, TOOL_RETURNED_ERROR if result.is_error else None, scope)


OUTSIDE_REVIEW = "Artifact is outside this review: "
OUTSIDE_FIX = (
    ' (add a mount to {owner}: mounts = {{ {name} = "{name}" }}, or reference {{{name}}} in '
    "the eval's instruction)"
)


def located_problems(
    owner: Artifact, audience: str, declaration: Any, problems: list[str]
) -> str | None:
    """The preflight problems of one tool as ``config check`` names them: the declaration
    file, line and key, then each problem (an Artifact outside the review with its fix)."""
    if not problems:
        return None
    key = f"views.{'agent_tools' if audience == 'agent' else 'human_tools'}.{declaration.name}"
    line = KeyLocator(owner.source.text).line_of(key)
    where = owner.source.path if line is None else f"{owner.source.path}:{line}"
    texts = [
        p + OUTSIDE_FIX.format(owner=owner.name, name=p.removeprefix(OUTSIDE_REVIEW))
        if p.startswith(OUTSIDE_REVIEW)
        else p
        for p in problems
    ]
    return f"{where}: {key}: {'; '.join(texts)}"


def _is_bound(tool: Any) -> bool:
    return isinstance(tool, CommandAgentTool) and tool.session is not None
