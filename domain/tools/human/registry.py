"""The Human tool registry: the tools a person reviewing one Human eval (or one Artifact) may
run, and how a run goes.

Built for a Human eval (an Agent or runtime eval is refused) or, for diagnostics, for one
Artifact and its children and mounts. Every Human tool of the scope is published as
``<name>_<artifactId>``; a tool may also be named by its short name when exactly one tool of
the scope has it. Listing runs nothing and creates nothing.

A call takes no arguments and always returns a ``HumanToolResult``. Before anything runs it
re-checks the scope's file Artifacts and resolves the tool's program, operands or target
again (no symlinks, still in scope); a failure runs nothing. A command runs with the
reviewer's complete real environment (``ARTIFACTIZE_*`` included, no private directories)
in the declaring Artifact's working directory:

- ``output`` waits (``timeout_ms``, default 120000) and returns its bounded, cleaned stdout
  and stderr; a timeout or a cancellation kills its process group;
- ``launch`` hands the program over (new session, stdin disconnected) and returns the
  launch block right after the spawn; nothing limits or cancels it afterwards.

These are low-level operations: they do not authorize anyone. Recorded Human requests go
through the Human review lifecycle, which calls this registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from artifactize.domain.declarations.model import BuiltinHumanTool, CommandHumanTool, HumanProfile
from artifactize.domain.project.scope import artifact_scope, eval_scope, working_directory
from artifactize.domain.project.workspace import Artifact, UnknownName, Workspace
from artifactize.domain.tools.cancellation import Cancellation, in_worker_thread, until_cancelled
from artifactize.domain.tools.commands.prep import CommandResolver
from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.human.builtins import (
    LAUNCH_BUILTINS,
    LOGGED_LAUNCHES,
    graph_argv,
    help_text,
    is_url,
    list_text,
    open_argv,
    read_text,
    section_text,
)
from artifactize.domain.tools.human.descriptions import HumanToolDefinition, human_tools_of
from artifactize.domain.tools.human.lines import LineSink, LineSplitter
from artifactize.domain.tools.human.prep import (
    BuiltinTarget,
    HumanCommand,
    HumanResolver,
    ProgramUnavailable,
)
from artifactize.domain.tools.human.results import (
    CANCELLED,
    HUMAN_CAPTURE_MAX_BYTES,
    NOT_LAUNCHED,
    HumanToolResult,
    output_result,
)
from artifactize.domain.tools.registry import RegistryError
from artifactize.domain.tools.results import ToolError
from artifactize.ports.filesystem import Filesystem
from artifactize.ports.launch import DetachedLauncher
from artifactize.ports.process import ProcessRunner, ProcessSpec
from artifactize.ports.programs import ProgramFinder
from artifactize.ports.regex import RegexEngine
from artifactize.ports.threads import WorkerThreads

UNKNOWN_TOOL = "Unknown registered Human tool."
AMBIGUOUS_TOOL = "Human tool name {name} is ambiguous here ({choices}); use the published name."
PREPARATION_FAILED = "Human tool preparation failed: {reason}"
NO_COMMAND_LINE = "Built-in tools have no command line."
NOT_A_HUMAN_EVAL = "Human tools require a Human eval."
OPENER_UNAVAILABLE = "The desktop opener is unavailable: {opener}"
GRAPH_UNAVAILABLE = "The project graph viewer is unavailable: artifactize cannot start itself here."

T = TypeVar("T")


@dataclass(frozen=True)
class HumanToolPorts:
    """The adapters Human tool calls need, injected by the composition root.

    ``environment`` is the reviewer's real environment, read at each call (a live mapping
    such as ``os.environ`` is fine). ``desktop_opener`` is the program ``open`` hands its
    target to (``xdg-open``, ``open`` on macOS), looked up on that environment's PATH.
    ``self_command`` is the argv that starts artifactize itself (for ``graph``).
    """

    filesystem: Filesystem
    regex: RegexEngine
    processes: ProcessRunner
    programs: ProgramFinder
    launcher: DetachedLauncher
    environment: Mapping[str, str]
    desktop_opener: str = "xdg-open"
    self_command: tuple[str, ...] = ()
    threads: WorkerThreads = field(kw_only=True)  # blocking tool work, off the event loop


@dataclass(frozen=True)
class _Launch:
    """A prepared launch: what to start, where, with which environment."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]


class HumanToolRegistry:
    def __init__(self, workspace: Workspace, scope: tuple[str, ...], ports: HumanToolPorts) -> None:
        self.workspace = workspace
        self.scope = scope
        self.ports = ports
        self._tools: dict[str, HumanToolDefinition] = {}
        for definition in human_tools_of(workspace, scope):
            if definition.name in self._tools:
                raise RegistryError(f"Artifact tool names collide: {definition.name}")
            self._tools[definition.name] = definition

    @classmethod
    def for_eval(
        cls, workspace: Workspace, qualified_eval_id: str, ports: HumanToolPorts
    ) -> HumanToolRegistry:
        try:
            found = workspace.find_eval(qualified_eval_id)
        except UnknownName as exc:
            raise RegistryError(str(exc)) from None
        if not isinstance(found.eval.profile, HumanProfile):
            raise RegistryError(NOT_A_HUMAN_EVAL)
        return cls(workspace, eval_scope(workspace, qualified_eval_id), ports)

    @classmethod
    def for_artifact(
        cls, workspace: Workspace, artifact: str, ports: HumanToolPorts
    ) -> HumanToolRegistry:
        try:
            scope = artifact_scope(workspace, artifact)
        except UnknownName as exc:
            raise RegistryError(str(exc)) from None
        return cls(workspace, scope, ports)

    def list(self) -> list[HumanToolDefinition]:
        return list(self._tools.values())

    def get(self, name: str) -> HumanToolDefinition | None:
        """By published name, else by short name when exactly one tool has it."""
        try:
            return self._lookup(name)
        except ToolError:
            return None

    def _lookup(self, name: str) -> HumanToolDefinition:
        found = self._tools.get(name)
        if found is not None:
            return found
        short = [d for d in self._tools.values() if d.declaration.name == name]
        if len(short) == 1:
            return short[0]
        if short:
            choices = ", ".join(d.name for d in short)
            raise ToolError(AMBIGUOUS_TOOL.format(name=name, choices=choices))
        raise ToolError(UNKNOWN_TOOL)

    # --- resolution -------------------------------------------------------------------

    def _resolver(self, environment: Mapping[str, str]) -> HumanResolver:
        ports = self.ports
        commands = CommandResolver(
            self.workspace, ports.filesystem, ports.programs, environment, self.scope
        )
        return HumanResolver(commands)

    def _resolve_for(
        self, definition: HumanToolDefinition
    ) -> tuple[Artifact, dict[str, str], HumanResolver]:
        """The tool's owning Artifact, a copy of the real environment, a resolver on that."""
        owner = self.workspace.artifact(definition.artifact_id)
        environment = dict(self.ports.environment)
        return owner, environment, self._resolver(environment)

    def command(self, name: str) -> HumanCommand:
        """The resolved command line of a command tool; runs nothing. Raises ``ToolError``."""
        definition = self._lookup(name)
        tool = definition.declaration
        if not isinstance(tool, CommandHumanTool):
            raise ToolError(NO_COMMAND_LINE)
        owner, _, resolver = self._resolve_for(definition)
        try:
            resolver.check_inputs(owner)
            return resolver.command(owner, tool)
        except ToolError as exc:
            raise ToolError(PREPARATION_FAILED.format(reason=exc.message)) from None

    # --- calls ------------------------------------------------------------------------

    async def call(
        self,
        name: str,
        cancellation: Cancellation | None = None,
        on_line: LineSink | None = None,
    ) -> HumanToolResult:
        """Run a tool. Never raises for a tool failure: the result says it.

        ``on_line`` receives the run's lines as they are printed (a launched program's also
        after this returns, from other threads) and how the program ended.
        """
        token = cancellation or Cancellation()
        lines = LineSplitter(on_line) if on_line is not None else None
        try:
            definition = self._lookup(name)
            if token.cancelled:
                return HumanToolResult.error(CANCELLED)
            tool = definition.declaration
            if isinstance(tool, CommandHumanTool):
                return await self._call_command(definition, tool, token, lines)
            return await self._call_builtin(definition, tool, token, lines)
        except ToolError as exc:
            return HumanToolResult.error(exc.message)

    async def _prepare(self, work: Callable[[], T], token: Cancellation) -> T:
        """Blocking resolution in a worker thread; its failures are preparation failures."""
        try:
            return await in_worker_thread(self.ports.threads, work, token)
        except ProgramUnavailable:
            raise  # the caller decides: a launch that cannot start, or a preparation failure
        except ToolError as exc:
            raise ToolError(PREPARATION_FAILED.format(reason=exc.message)) from None

    async def _call_command(
        self,
        definition: HumanToolDefinition,
        tool: CommandHumanTool,
        token: Cancellation,
        lines: LineSplitter | None,
    ) -> HumanToolResult:
        owner, environment, resolver = self._resolve_for(definition)

        def prepare() -> HumanCommand:
            resolver.check_inputs(owner)
            return resolver.command(owner, tool)

        try:
            command = await self._prepare(prepare, token)
        except ProgramUnavailable as exc:
            if tool.kind == "launch":  # nothing to hand over: the launch failed
                return HumanToolResult.error(NOT_LAUNCHED)
            raise ToolError(PREPARATION_FAILED.format(reason=exc.message)) from None
        if tool.kind == "launch":
            launch = _Launch(command.command_line, command.cwd, environment)
            return self._launch(launch, lines, token)
        spec = ProcessSpec(
            argv=command.command_line,
            cwd=command.cwd,
            env=environment,
            timeout_ms=tool.timeout_ms,
            capture_limit_bytes=HUMAN_CAPTURE_MAX_BYTES,
            observe_output=lines.output if lines is not None else None,
        )
        outcome = await until_cancelled(self.ports.processes.run(spec), token)
        if outcome is None:
            return HumanToolResult.error(CANCELLED)
        if lines is not None:
            if outcome.spawn_error is None and not outcome.timed_out:
                lines.exited(outcome.exit_code, outcome.signal)
            else:
                lines.flush()
        return output_result(outcome)

    def _launch(
        self, launch: _Launch, lines: LineSplitter | None, token: Cancellation
    ) -> HumanToolResult:
        """Spawn and hand over (unless cancelled first); only a failed spawn is an error."""
        if token.cancelled:
            return HumanToolResult.error(CANCELLED)
        try:
            self.ports.launcher.launch(launch.argv, launch.cwd, launch.env, lines)
        except OSError:
            return HumanToolResult.error(NOT_LAUNCHED)
        return HumanToolResult.launched()

    async def _call_builtin(
        self,
        definition: HumanToolDefinition,
        tool: BuiltinHumanTool,
        token: Cancellation,
        lines: LineSplitter | None,
    ) -> HumanToolResult:
        owner, environment, resolver = self._resolve_for(definition)
        if tool.builtin in LAUNCH_BUILTINS:
            launch = await self._prepare(
                lambda: self._launch_builtin(resolver, owner.name, tool, environment), token
            )
            # Only ``graph`` logs its viewer until it exits; ``open`` ends at the handover
            # (``■ launched``): the desktop opener's own output and exit are nobody's news.
            return self._launch(launch, lines if tool.builtin in LOGGED_LAUNCHES else None, token)
        if tool.builtin == "help":
            await self._prepare(lambda: resolver.check_inputs(owner), token)
            cwd = working_directory(self.workspace, owner)
            run = help_text(self.ports.processes, tool.args, cwd, environment)
            text = await until_cancelled(run, token)
        else:

            def prepare() -> BuiltinTarget:
                resolver.check_inputs(owner)
                return resolver.builtin_target(owner, tool.args[0])

            target = await self._prepare(prepare, token)
            context = BuiltinContext(
                self.workspace,
                self.ports.filesystem,
                self.ports.regex,
                target.artifact,
                self.scope,
                token,
            )
            text = await _in_thread(
                self.ports.threads, lambda: _text_builtin(tool, context, target.path), token
            )
        if text is None:
            return HumanToolResult.error(CANCELLED)
        if lines is not None:
            lines.emit_text(text)
        return HumanToolResult.text(text)

    def _launch_builtin(
        self,
        resolver: HumanResolver,
        owner_name: str,
        tool: BuiltinHumanTool,
        environment: Mapping[str, str],
    ) -> _Launch:
        owner = self.workspace.artifact(owner_name)
        resolver.check_inputs(owner)
        if tool.builtin == "graph":
            if not self.ports.self_command:
                raise ToolError(GRAPH_UNAVAILABLE)
            root = self.workspace.root_path
            return _Launch(graph_argv(self.ports.self_command, root), root, environment)
        target = tool.args[0]
        if not is_url(target):
            located = resolver.builtin_target(owner, target)
            target = resolver.absolute(self.workspace.artifact(located.artifact), located.path)
        cwd = working_directory(self.workspace, owner)
        opener = self.ports.programs.find_on_path(
            self.ports.desktop_opener, environment.get("PATH", ""), cwd
        )
        if opener is None:
            raise ToolError(OPENER_UNAVAILABLE.format(opener=self.ports.desktop_opener))
        return _Launch(open_argv(opener, target), cwd, environment)


def _text_builtin(tool: BuiltinHumanTool, context: BuiltinContext, path: str) -> str:
    if tool.builtin == "read":
        return read_text(context, path)
    if tool.builtin == "list":
        return list_text(context, path)
    if tool.builtin == "section":
        return section_text(context, path, tool.args[1])
    raise ToolError(f"Unknown Human built-in: {tool.builtin}")


async def _in_thread(
    threads: WorkerThreads, work: Callable[[], str], token: Cancellation
) -> str | None:
    """A built-in in a worker thread; None when ``token`` was cancelled meanwhile."""

    def guarded() -> str | None:
        try:
            return work()
        except ToolError:
            if token.cancelled:
                return None
            raise

    result = await in_worker_thread(threads, guarded, token)
    return None if token.cancelled else result
