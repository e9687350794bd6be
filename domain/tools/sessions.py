"""Tool sessions: a harness started on the first bound call and cleaned up on every ending.

Lifecycle of one session (one declared ``[views.agent_sessions.NAME]`` of one Artifact, in
one review):

- nothing happens until a tool bound to it is first called; then earlier sessions that were
  abandoned (owner gone, or lease released after a failed cleanup) are swept, a private
  directory is created (owner record + active lease), and ``start`` is launched with the
  JSON envelope (``args: {}``) and ``ARTIFACTIZE_SESSION_DIR``; its group is journaled
  before it is admitted. It is ready when it prints one newline-terminated line.
- a spawn failure or an exit before readiness is that call's error, and every later call
  to the session returns the same error; there is no restart.
- after readiness, an exit of ``start`` kills its group at once, cancels in-flight bound
  calls, and later bound calls return ``The tool session `NAME` ended.``
- on every ending (``close()``, or a dropped session set) in-flight calls are cancelled and
  awaited, then ``stop`` runs with its own bound, then every journaled group is killed and
  reaped. Only when that is confirmed are the directory and its journal removed; otherwise
  the lease is released and the journal kept, so the next session start finishes the job.

Cleanup runs on the cleanup executor (``ports.cleanup``: a thread with an event loop of its
own), so it does not depend on the caller's event loop staying alive; so does the watcher
that notices an exit of ``start`` after readiness.
"""

from __future__ import annotations

import contextlib
import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from artifactize.domain.declarations.model import (
    DEFAULT_INPUT_SCHEMA,
    AgentSession,
    CommandAgentTool,
    SessionCommand,
)
from artifactize.domain.project.workspace import Artifact, published_name
from artifactize.domain.tools.cancellation import cancelled_by
from artifactize.domain.tools.commands.running import CommandRunner
from artifactize.domain.tools.results import ToolError, ToolResult
from artifactize.ports.cleanup import CleanupExecutor, DropGuard
from artifactize.ports.sessions import (
    JournalEntry,
    JournalRole,
    ProcessIdentity,
    ProcessLauncher,
    ProcessTable,
    RunningProcess,
    SessionStore,
)
from artifactize.ports.threads import WorkerThreads

STOP_TIMEOUT_SECONDS = 30.0
SESSION_ENDED = "The tool session `{name}` ended."
SESSION_NOT_READY = "The tool session `{name}` exited before it was ready."
SESSION_NOT_STARTED = "The tool session `{name}` could not start."
SWEEP_FAILED = (
    "The tool session `{name}` was refused: an earlier session could not be cleaned up "
    "(its records are kept for the next attempt)."
)
CLEANUP_FAILED = "Tool session cleanup failed: {detail}"
RETIRE_FAILED = "could not record that a process group of {key} is gone ({error})"


class State(enum.Enum):
    IDLE = "idle"
    READY = "ready"
    FAILED = "failed"  # never became ready: the startup error is returned to every call
    ENDED = "ended"  # start exited after readiness, or the session was closed


@dataclass(frozen=True)
class SessionPorts:
    launcher: ProcessLauncher
    table: ProcessTable
    store: SessionStore
    parent: str  # the directory that holds every session directory (in the state home)
    cleanup: CleanupExecutor  # where cleanup and the harness watcher run
    stop_timeout_seconds: float = STOP_TIMEOUT_SECONDS
    threads: WorkerThreads = field(kw_only=True)  # session directories, reaping groups


def _as_tool(session: AgentSession, command: SessionCommand, part: str) -> CommandAgentTool:
    """A start or stop command, prepared and run like a json tool with ``args: {}``."""
    return CommandAgentTool(
        name=f"{session.name}.{part}",
        description=f"{part} of the tool session {session.name}",
        protocol="json",
        command=command.command,
        args=command.args,
        input_schema=DEFAULT_INPUT_SCHEMA,
        execution_paths=command.execution_paths,
        timeout_ms=2_147_483_647,
        session=None,
    )


def sweep(ports: SessionPorts) -> None:
    """Remove abandoned session directories after killing what their journals name.

    A directory is abandoned when its owner has exited (or its owner record is unreadable)
    or its lease was released; one with a live owner and an active lease is left alone.
    Raises ``OSError`` when a group could not be confirmed dead or a directory removed.
    """
    for directory in ports.store.directories(ports.parent):
        owner = ports.store.owner(directory)
        alive = owner is not None and ports.table.is_alive(owner)
        if alive and ports.store.has_lease(directory):
            continue
        _retire(ports, directory)


def unreleased(journal: list[JournalEntry]) -> list[JournalEntry]:
    """The journaled groups not yet confirmed dead: only these may still be signalled."""
    released = {e.leader for e in journal if e.role is JournalRole.RELEASED}
    return [e for e in journal if e.role is not JournalRole.RELEASED and e.leader not in released]


def _retire(ports: SessionPorts, directory: str) -> None:
    entries = unreleased(ports.store.journal(directory))
    confirmed = all(ports.table.kill_group(e.leader) for e in entries)
    if not confirmed:
        ports.store.release_lease(directory)
        raise OSError(f"process cleanup of {directory} is not confirmed")
    ports.store.remove(directory)


@dataclass
class ToolSession:
    """One declared session of one Artifact, for one review."""

    owner: Artifact
    declaration: AgentSession
    runner: CommandRunner
    ports: SessionPorts
    state: State = State.IDLE
    directory: str | None = None
    work_directory: str | None = None
    process: RunningProcess | None = None
    error: str | None = None
    _in_flight: set[anyio.CancelScope] = field(default_factory=set)
    _lock: anyio.Lock | None = None
    _start_dirs: list[str] = field(default_factory=list)
    # Start groups whose termination was confirmed: released, never signalled again.
    _released: set[ProcessIdentity] = field(default_factory=set)
    # Failures to record a release (the seed: reported, without skipping the cleanup).
    _retire_problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.declaration.name

    @property
    def provenance_key(self) -> str:
        return published_name(self.declaration.name, self.owner.name)

    def _ended(self) -> ToolError:
        return ToolError(SESSION_ENDED.format(name=self.name))

    async def ensure_ready(self) -> str:
        """The session directory bound tools use; starts the harness on first use."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self.state is State.READY and self.process is not None and self.process.has_exited():
                await self.on_harness_exit()
            if self.state is State.FAILED:
                raise ToolError(self.error or SESSION_NOT_STARTED.format(name=self.name))
            if self.state is State.ENDED:
                raise self._ended()
            if self.state is State.IDLE:
                try:
                    await self._start()
                except anyio.get_cancelled_exc_class():
                    # The call was cancelled before readiness: its harness and directory go
                    # at once (they would leak otherwise), and a later call starts afresh.
                    await self._cleanup_now()
                    self.process = None
                    self.work_directory = None
                    raise
            assert self.work_directory is not None
            return self.work_directory

    async def _start(self) -> None:
        try:
            await self.ports.threads.run(sweep, self.ports)
        except OSError:
            self._fail(SWEEP_FAILED.format(name=self.name))
        store = self.ports.store
        self.directory = await self.ports.threads.run(
            store.create, self.ports.parent, self.ports.table.own_identity()
        )
        self.work_directory = await self.ports.threads.run(store.work_directory, self.directory)
        tool = _as_tool(self.declaration, self.declaration.start, "start")
        try:
            spec, _ = await self.ports.threads.run(
                self.runner.start_spec,
                self.owner,
                tool,
                {},
                self.directory,
                self.work_directory,
                self._start_dirs,
            )
            self.process = await self.ports.launcher.start(spec, self._journal(JournalRole.START))
        except (ToolError, OSError):
            await self._cleanup_now()
            self._fail(SESSION_NOT_STARTED.format(name=self.name))
        assert self.process is not None
        line = await self.process.ready_line()
        if line is None:
            await self._cleanup_now()
            self._fail(SESSION_NOT_READY.format(name=self.name))
        self.state = State.READY
        self.ports.cleanup.start_watcher(
            self._retire_on_exit, f"artifactize-session-{self.provenance_key}"
        )

    async def _retire_on_exit(self) -> None:
        """Runs on a watcher thread of its own for the whole session: an exit of ``start``
        after readiness kills the rest of its group at once (bound calls in flight notice
        it themselves)."""
        assert self.process is not None
        await self.process.wait_exit()
        if self.state is State.READY:
            self.state = State.ENDED
        await self._kill_start_group()

    async def _kill_start_group(self) -> bool:
        """Kill what is left of the start group. Once that is confirmed the group is
        released, so later cleanup does not signal its old numeric group id again."""
        assert self.process is not None
        confirmed = await self.process.kill_group()
        if confirmed and self.process.identity not in self._released:
            self._released.add(self.process.identity)
            self._release(self.process.identity)
        return confirmed

    def _release(self, identity: ProcessIdentity) -> None:
        """Record durably that a group is gone, so no later cleanup or sweep signals its old
        numeric group id (which the system may since have given to someone else)."""
        if self.directory is None:
            return
        try:
            self.ports.store.append(self.directory, JournalEntry(JournalRole.RELEASED, identity))
        except OSError as exc:  # unrecorded: a later kill re-checks identity; reported at cleanup
            self._retire_problems.append(
                CLEANUP_FAILED.format(
                    detail=RETIRE_FAILED.format(key=self.provenance_key, error=exc)
                )
            )

    async def _released_after(self, spawned: list[ProcessIdentity]) -> None:
        """After a bound call or stop returned, confirm its group is gone and release it."""
        for identity in spawned:
            if await self.ports.threads.run(self.ports.table.kill_group, identity):
                self._released.add(identity)
                self._release(identity)

    def _fail(self, message: str) -> None:
        self.state = State.FAILED
        self.error = message
        raise ToolError(message)

    def _journal(
        self, role: JournalRole, spawned: list[ProcessIdentity] | None = None
    ) -> Callable[[Any], None]:
        """An observer that journals a group before it runs on (and remembers it)."""
        directory = self.directory
        assert directory is not None

        def record(identity: ProcessIdentity) -> None:
            self.ports.store.append(directory, JournalEntry(role, identity))
            if spawned is not None:
                spawned.append(identity)

        return record

    async def _cleanup_now(self) -> None:
        """A start that never became ready is cleaned up at once, on the cleanup executor."""
        with anyio.CancelScope(shield=True):
            await self.ports.cleanup.run(lambda: self.cleanup(run_stop=False))

    async def on_harness_exit(self) -> None:
        """Start exited after readiness: kill its group now, cancel in-flight calls."""
        self.state = State.ENDED
        if self.process is not None:
            with anyio.CancelScope(shield=True):
                await self._kill_start_group()
        for scope in list(self._in_flight):
            scope.cancel()

    async def call(self, run: Callable[[str, Callable[[Any], None]], Any]) -> ToolResult:
        """Run one bound call with the session directory; the harness's exit cancels it."""
        work_directory = await self.ensure_ready()
        result: ToolResult | None = None
        spawned: list[ProcessIdentity] = []
        with anyio.CancelScope() as scope:
            self._in_flight.add(scope)
            try:
                work = run(work_directory, self._journal(JournalRole.CALL, spawned))
                result = await cancelled_by(work, self._harness_exited)
            finally:
                self._in_flight.discard(scope)
                with anyio.CancelScope(shield=True):
                    await self._released_after(spawned)
        if result is None:
            raise self._ended()
        return result

    async def _harness_exited(self) -> None:
        """Return once ``start`` exited, its group killed and in-flight calls cancelled."""
        assert self.process is not None
        await self.process.wait_exit()
        await self.on_harness_exit()

    # --- cleanup, on the cleanup executor -------------------------------------------------

    async def cleanup(self, run_stop: bool = True) -> list[str]:
        """Stop, kill, confirm, remove. Returns the problems; runs on the cleanup executor,
        in an event loop of its own."""
        if self.directory is None:
            return self._retire_reported()
        if run_stop and self.state in (State.READY, State.ENDED) and self.process is not None:
            await self._run_stop()
        confirmed = True
        if self.process is not None:
            confirmed = await self._kill_start_group()
        journal = await self.ports.threads.run(self.ports.store.journal, self.directory)
        for entry in unreleased(journal):
            if entry.leader in self._released:
                continue
            confirmed = (
                await self.ports.threads.run(self.ports.table.kill_group, entry.leader)
                and confirmed
            )
        self.runner.remove(self._start_dirs)
        if not confirmed:
            self.ports.store.release_lease(self.directory)
            survive = CLEANUP_FAILED.format(detail=f"processes of {self.provenance_key} survive")
            return [*self._retire_reported(), survive]
        removal: list[str] = []
        try:
            self.ports.store.remove(self.directory)
        except OSError as exc:
            self.ports.store.release_lease(self.directory)
            removal.append(CLEANUP_FAILED.format(detail=str(exc)))
        self.directory = None
        return [*self._retire_reported(), *removal]

    def _retire_reported(self) -> list[str]:
        """The releases that could not be recorded so far, taken once cleanup is done with
        its own: a release that fails during cleanup (the start group's, when its exit was
        not seen first, or the stop's) is reported with the others, never dropped."""
        problems, self._retire_problems = self._retire_problems, []
        return problems

    async def _run_stop(self) -> None:
        tool = _as_tool(self.declaration, self.declaration.stop, "stop")
        spawned: list[ProcessIdentity] = []
        # A failed stop is survived: the groups are killed and reaped right after it anyway.
        with anyio.move_on_after(self.ports.stop_timeout_seconds), contextlib.suppress(ToolError):
            await self.runner.call(
                self.owner,
                tool,
                {},
                self.directory,
                self.work_directory,
                observe=self._journal(JournalRole.STOP, spawned),
            )
        await self._released_after(spawned)


class _Unarmed:
    """The drop guard of a set that started no session: there is nothing to clean up."""

    def __call__(self) -> None:
        pass

    def detach(self) -> None:
        pass


_UNARMED: DropGuard = _Unarmed()


@dataclass
class ToolSessions:
    """The sessions of one review (or one ``tools check --execute``), started lazily."""

    runner_for: Callable[[], CommandRunner]
    ports: SessionPorts
    allowed: frozenset[str] | None = None  # provenance keys a selected tool may start
    sessions: dict[str, ToolSession] = field(default_factory=dict)
    closed: bool = False

    # Cleans up what a set dropped without ``close()`` started; armed once a session exists.
    _finalizer: DropGuard = field(default_factory=lambda: _UNARMED, init=False, repr=False)

    def session_for(self, owner: Artifact, name: str) -> ToolSession:
        key = published_name(name, owner.name)
        if self.closed or (self.allowed is not None and key not in self.allowed):
            raise ToolError(SESSION_ENDED.format(name=name))
        if self._finalizer is _UNARMED:
            self._finalizer = self.ports.cleanup.on_drop(
                self, functools.partial(_cleanup_dropped, self.sessions)
            )
        if key not in self.sessions:
            declaration = next(s for s in owner.agent_sessions if s.name == name)
            self.sessions[key] = ToolSession(owner, declaration, self.runner_for(), self.ports)
        return self.sessions[key]

    async def close(self) -> list[str]:
        """Cancel and await in-flight calls, then stop and clean every started session."""
        self.closed = True
        for session in self.sessions.values():
            for scope in list(session._in_flight):
                scope.cancel()
        while any(s._in_flight for s in self.sessions.values()):
            await anyio.sleep(0.01)
        problems: list[str] = []
        with anyio.CancelScope(shield=True):
            for session in self.sessions.values():
                if session.directory is None:
                    continue
                problems.extend(await self.ports.cleanup.run(session.cleanup))
                session.state = State.ENDED
        self._finalizer.detach()
        return problems

    async def __aenter__(self) -> ToolSessions:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _cleanup_dropped(sessions: dict[str, ToolSession]) -> None:
    """A session set dropped without ``close()``: clean up on the cleanup executor anyway.

    A set still open when the interpreter exits is finalized after the executor stopped
    taking work: it is cleaned up right here, and where no thread may start any more
    (Python 3.12+), what its journal names is at least killed before the directory goes."""
    for session in sessions.values():
        if session.directory is None:
            continue
        try:
            session.ports.cleanup.submit(session.cleanup)
        except Exception:  # the inline cleanup of a shutting-down interpreter failed
            if session.directory is not None:
                with contextlib.suppress(OSError):
                    _retire(session.ports, session.directory)
