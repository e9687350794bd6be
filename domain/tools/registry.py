"""The Agent tool registry: the tools one Agent eval may call, and how a call is made.

Constructed for an Agent eval (or, for diagnostics, one Artifact), it publishes every Agent
tool of the admitted scope as ``<name>_<artifactId>``. Listing creates nothing and runs
nothing. A call admits its arguments (size, then schema) and re-checks file Artifact
targets before anything runs, and always returns a ``ToolResult``: success, an authored
error and a system error look the same to the caller.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from artifactize.domain.declarations.model import (
    AgentProfile,
    AgentTool,
    ArtifactKind,
    BuiltinAgentTool,
    CommandAgentTool,
)
from artifactize.domain.declarations.templates import render_description
from artifactize.domain.json_schema import compile_validator
from artifactize.domain.project.scope import artifact_scope, eval_scope, working_directory
from artifactize.domain.project.workspace import UnknownName, Workspace, published_name
from artifactize.domain.tools.arguments import ArgumentsRefused, admit_arguments
from artifactize.domain.tools.builtins.fixed import (
    run_fixed_read,
    run_graph,
    run_section,
    run_view_image,
)
from artifactize.domain.tools.builtins.help import run_help
from artifactize.domain.tools.builtins.list_page import run_list
from artifactize.domain.tools.builtins.read import run_read
from artifactize.domain.tools.builtins.search import run_glob, run_grep
from artifactize.domain.tools.builtins.specs import default_description, input_schema_for
from artifactize.domain.tools.cancellation import (
    CANCELLED_MESSAGE,
    Cancellation,
    InlineFirst,
    in_worker_thread,
    inline_first,
    until_cancelled,
)
from artifactize.domain.tools.commands.prep import CommandResolver
from artifactize.domain.tools.commands.running import CommandRunner
from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.locations import open_directory_at
from artifactize.domain.tools.results import ToolError, ToolResult
from artifactize.domain.tools.sessions import SessionPorts, ToolSessions
from artifactize.ports.filesystem import EntryKind, Filesystem, FilesystemError
from artifactize.ports.process import ProcessRunner
from artifactize.ports.programs import ProgramFinder
from artifactize.ports.regex import RegexEngine
from artifactize.ports.scratch import ScratchSpace
from artifactize.ports.threads import WorkerThreads

UNKNOWN_TOOL = "Unknown registered Agent tool."
TARGET_CHANGED = "File Artifact target must remain a regular file."
SESSIONS_NOT_YET = "This tool is bound to a tool session, and no session set is attached."
# The built-ins whose every step between two checks of the token is bounded, so they may
# start on the event loop (``inline_first``): ``read`` opens one path, skips 1 MiB per check
# and decodes at most a 64 KiB page; ``list`` reads at most 10,001 entries of one directory
# (more are refused) and builds one page of at most 200. ``glob`` and ``grep`` walk a whole
# tree between checks, and the others never check: they always run in a worker thread.
INLINE_FIRST_BUILTINS = frozenset({"read", "list"})


class RegistryError(Exception):
    """The registry cannot be built (unknown eval, wrong kind, colliding names)."""


@dataclass(frozen=True)
class ToolPorts:
    """The adapters tool calls need, injected by the composition root."""

    filesystem: Filesystem
    regex: RegexEngine
    processes: ProcessRunner
    environment: Mapping[str, str] = field(default_factory=dict)
    programs: ProgramFinder | None = None  # needed by command tools and preflight
    scratch: ScratchSpace | None = None  # needed by command tools
    threads: WorkerThreads = field(kw_only=True)  # blocking tool work, off the event loop


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    artifact_id: str
    description: str
    input_schema: Mapping[str, Any]
    declaration: AgentTool
    audience: str = "agent"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "artifactId": self.artifact_id,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }


class AgentToolRegistry:
    def __init__(self, workspace: Workspace, scope: tuple[str, ...], ports: ToolPorts) -> None:
        self.workspace = workspace
        self.scope = scope
        self.ports = ports
        self._tools = self._definitions()
        self._validators: dict[str, Any] = {}
        self._sessions: ToolSessions | None = None
        self._inline: InlineFirst | None = None
        self._has_file_targets = any(
            workspace.artifact(name).kind is ArtifactKind.FILE for name in scope
        )

    @classmethod
    def for_eval(cls, workspace: Workspace, eval_id: str, ports: ToolPorts) -> AgentToolRegistry:
        try:
            found = workspace.find_eval(eval_id)
        except UnknownName as exc:
            raise RegistryError(str(exc)) from None
        if not isinstance(found.eval.profile, AgentProfile):
            raise RegistryError("Agent tools require an Agent eval.")
        return cls(workspace, eval_scope(workspace, eval_id), ports)

    @classmethod
    def for_artifact(
        cls, workspace: Workspace, artifact: str, ports: ToolPorts
    ) -> AgentToolRegistry:
        try:
            scope = artifact_scope(workspace, artifact)
        except UnknownName as exc:
            raise RegistryError(str(exc)) from None
        return cls(workspace, scope, ports)

    def _definitions(self) -> dict[str, ToolDefinition]:
        tools: dict[str, ToolDefinition] = {}
        for name in self.scope:
            artifact = self.workspace.artifact(name)
            for tool in artifact.agent_tools:
                published = published_name(tool.name, name)
                if published in tools:
                    raise RegistryError(f"Artifact tool names collide: {published}")
                template = tool.description or (
                    default_description(tool, name) if isinstance(tool, BuiltinAgentTool) else ""
                )
                schema = (
                    input_schema_for(tool)
                    if isinstance(tool, BuiltinAgentTool)
                    else tool.input_schema
                )
                tools[published] = ToolDefinition(
                    published, name, render_description(template, name), schema, tool
                )
        return dict(sorted(tools.items()))

    def list(self) -> list[ToolDefinition]:
        return list(self._tools.values())

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def _validator(self, definition: ToolDefinition) -> Any:
        if definition.name not in self._validators:
            self._validators[definition.name] = compile_validator(definition.input_schema)
        return self._validators[definition.name]

    async def call(
        self,
        name: str,
        args: Any,
        output_root: str | None = None,
        cancellation: Cancellation | None = None,
    ) -> ToolResult:
        """Call a published tool. Never raises for a tool failure: the result says it."""
        token = cancellation or Cancellation()
        definition = self._tools.get(name)
        if definition is None:
            return ToolResult.error(UNKNOWN_TOOL)
        try:
            admitted = admit_arguments(args, self._validator(definition))
            token.check()
            if self._has_file_targets:
                await in_worker_thread(self.ports.threads, self._check_file_targets, token)
            return await self._dispatch(
                definition, admitted, token, output_root, watch=cancellation is not None
            )
        except ArgumentsRefused as exc:
            return ToolResult.error(exc.message)
        except ToolError as exc:
            return ToolResult.error(exc.message)

    def _check_file_targets(self) -> None:
        """Every call re-checks admitted file Artifacts: a swapped target runs nothing."""
        for name in self.scope:
            artifact = self.workspace.artifact(name)
            if artifact.kind is not ArtifactKind.FILE or artifact.target is None:
                continue
            folder = tuple(artifact.folder.split("/")) if artifact.folder else ()
            try:
                with open_directory_at(
                    self.ports.filesystem, self.workspace.root_path, folder
                ) as parent:
                    kind = parent.entry(artifact.target).kind
            except FilesystemError:
                raise ToolError(TARGET_CHANGED) from None
            if kind is not EntryKind.FILE:
                raise ToolError(TARGET_CHANGED)

    def sessions(self, ports: SessionPorts, selected_tool: str | None = None) -> ToolSessions:
        """A lazy session set for one review: nothing starts until a bound tool is called.

        With ``selected_tool``, only that tool's session may start (``tools check``)."""
        allowed = None
        if selected_tool is not None:
            definition = self._tools.get(selected_tool)
            tool = definition.declaration if definition else None
            session = tool.session if isinstance(tool, CommandAgentTool) else None
            allowed = frozenset(
                [published_name(session, definition.artifact_id)] if session and definition else []
            )
        return ToolSessions(
            lambda: replace(self.command_runner(), launcher=ports.launcher), ports, allowed
        )

    def with_sessions(self, sessions: ToolSessions) -> AgentToolRegistry:
        """This registry with bound tools running in ``sessions``."""
        bound = copy.copy(self)
        bound._sessions = sessions
        bound._validators = self._validators
        return bound

    def with_inline_first(self, inline: InlineFirst) -> AgentToolRegistry:
        """This registry with the built-ins of INLINE_FIRST_BUILTINS starting on the event
        loop (``inline_first``), as ``artifactize mcp`` serves them; a review keeps every
        built-in in a worker thread."""
        bound = copy.copy(self)
        bound._inline = inline
        return bound

    def command_runner(self) -> CommandRunner:
        ports = self.ports
        if ports.programs is None or ports.scratch is None:
            raise ToolError("Command tools need the program and scratch ports; none are wired.")
        resolver = CommandResolver(
            self.workspace, ports.filesystem, ports.programs, ports.environment, self.scope
        )
        return CommandRunner(
            self.workspace,
            ports.filesystem,
            resolver,
            ports.processes,
            ports.scratch,
            ports.environment,
            threads=ports.threads,
        )

    def _context(self, definition: ToolDefinition, token: Cancellation) -> BuiltinContext:
        return BuiltinContext(
            self.workspace,
            self.ports.filesystem,
            self.ports.regex,
            definition.artifact_id,
            self.scope,
            token,
        )

    async def _dispatch(
        self,
        definition: ToolDefinition,
        args: dict[str, Any],
        token: Cancellation,
        output_root: str | None,
        *,
        watch: bool,
    ) -> ToolResult:
        tool = definition.declaration
        if not isinstance(tool, BuiltinAgentTool):
            owner = self.workspace.artifact(definition.artifact_id)
            if tool.session is not None:
                if self._sessions is None:
                    raise ToolError(SESSIONS_NOT_YET)
                session = self._sessions.session_for(owner, tool.session)
                bound = session.runner

                async def run_bound(
                    work_directory: str, observe: Callable[[Any], None]
                ) -> ToolResult:
                    return await bound.call(owner, tool, args, output_root, work_directory, observe)

                return await _cancellable(session.call(run_bound), token, watch)
            runner = self.command_runner()
            return await _cancellable(runner.call(owner, tool, args, output_root), token, watch)
        if tool.builtin == "help":
            assert tool.args is not None
            owner = self.workspace.artifact(definition.artifact_id)
            cwd = working_directory(self.workspace, owner)
            help_call = run_help(self.ports.processes, tool.args, cwd, self.ports.environment)
            return await _cancellable(help_call, token, watch)
        if self._inline is not None and tool.builtin in INLINE_FIRST_BUILTINS and tool.args is None:

            def work_for(attempt: Cancellation) -> Callable[[], ToolResult]:
                return _builtin_work(tool, self._context(definition, attempt), args)

            return await inline_first(work_for, token, self._inline)
        work = _builtin_work(tool, self._context(definition, token), args)
        return await in_worker_thread(self.ports.threads, work, token)


async def _cancellable(work: Awaitable[ToolResult], token: Cancellation, watch: bool) -> ToolResult:
    """Await a process-running call; cancelling ``token`` meanwhile cancels it (its group is
    killed and its directories removed) and returns the cancellation error. Without a
    caller's token (``watch`` false) nothing can cancel it but the caller's own scope."""
    if not watch:
        return await work
    result = await until_cancelled(work, token)
    return result if result is not None else ToolResult.error(CANCELLED_MESSAGE)


def _builtin_work(
    tool: BuiltinAgentTool, context: BuiltinContext, args: dict[str, Any]
) -> Callable[[], ToolResult]:
    fixed = tool.args
    if tool.builtin == "read":
        return (
            (lambda: run_read(context, args))
            if fixed is None
            else (lambda: run_fixed_read(context, fixed[0]))
        )
    if tool.builtin == "list":
        return lambda: run_list(context, args if fixed is None else {"path": fixed[0]})
    if tool.builtin == "glob":
        return lambda: run_glob(context, args)
    if tool.builtin == "grep":
        return lambda: run_grep(context, args)
    if tool.builtin == "view_image":
        return lambda: run_view_image(context, args)
    if tool.builtin == "section":
        assert fixed is not None
        heading = fixed[1] if len(fixed) == 2 else str(args["heading"])
        return lambda: run_section(context, fixed[0], heading)
    if tool.builtin == "graph":
        return lambda: run_graph(context)
    raise ToolError(f"Unknown built-in: {tool.builtin}")
