"""The tool-session state machine (``ToolSession``/``ToolSessions``/``sweep``) with fakes.

The fakes below implement the session ports (``ProcessLauncher``, ``RunningProcess``,
``ProcessTable``, ``SessionStore``) in memory and write every port call to one shared log,
so a test asserts what happened and in which order. The workspace is an in-memory ``.artf``
declaration: Artifact ``app`` with the sessions ``app`` and ``idle`` and their bound json
tools ``act`` and ``poke``; every command is the program ``harness`` found on ``PATH``.

The fakes are thread-safe and loop-agnostic (they poll, like the real adapters), because
the domain watches a harness from its own thread and cleans up on the cleanup executor.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Never

import anyio
import pytest

from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.adapters.threads import ThreadCleanupExecutor
from artifactize.domain.tools.cancellation import CANCELLED_MESSAGE, Cancellation
from artifactize.domain.tools.registry import AgentToolRegistry, ToolPorts
from artifactize.domain.tools.results import ToolResult
from artifactize.domain.tools.sessions import (
    CLEANUP_FAILED,
    SESSION_ENDED,
    SESSION_NOT_READY,
    SESSION_NOT_STARTED,
    STOP_TIMEOUT_SECONDS,
    SWEEP_FAILED,
    SessionPorts,
    State,
    ToolSessions,
    sweep,
)
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.ports.process import ProcessOutcome, ProcessSpec
from artifactize.ports.programs import ProgramIdentity
from artifactize.ports.sessions import JournalEntry, JournalRole, ProcessIdentity, SpawnObserver
from tests.fakes.filesystem import MemoryFilesystem
from tests.fakes.threads import THREADS

pytestmark = pytest.mark.anyio

PARENT = "/state/tool-sessions"
ME = ProcessIdentity(1, 1.0)
ACT, POKE = "act_app", "poke_app"
# A fake stop that hangs sleeps 3600 s; close() ending well within that proves the bound
# held, with room for a loaded CI machine.
HUNG_STOP_BOUND_SECONDS = 60
OK_OUTPUT = b'{"content":[{"type":"text","text":"ok"}]}'
ENDED = SESSION_ENDED.format(name="app")
CLEANUP = ThreadCleanupExecutor()  # one per process, as the composition root wires it
DECLARATION = """\
name = "app"

[views.agent_sessions.app]
start = { command = "harness", args = ["start"] }
stop = { command = "harness", args = ["stop"] }

[views.agent_sessions.idle]
start = { command = "harness", args = ["start-idle"] }
stop = { command = "harness", args = ["stop-idle"] }

[views.agent_tools.act]
session = "app"
description = "Act."
protocol = "json"
command = "harness"
args = ["act"]
input_schema = { type = "object", properties = { hang = { type = "boolean" } } }

[views.agent_tools.poke]
session = "idle"
description = "Poke."
protocol = "json"
command = "harness"
args = ["poke"]
"""


async def poll(condition: Callable[[], bool], timeout: float | None = None) -> bool:
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.001
    while not condition():
        if deadline is not None and time.monotonic() > deadline:
            return False
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.02)
    return True


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


# --- fakes ----------------------------------------------------------------------------------------


class Log(list[str]):
    def count_of(self, prefix: str) -> int:
        return sum(1 for item in self if item.startswith(prefix))


class FakeProcess:
    """A harness: ready (or not) at once or when told, exits when told or killed."""

    def __init__(self, identity: ProcessIdentity, log: Log, line: bytes | None) -> None:
        self._identity = identity
        self.log = log
        self.line = line
        self.resolved = threading.Event()
        self.exited = threading.Event()
        self.confirm_kill = True

    @property
    def identity(self) -> ProcessIdentity:
        return self._identity

    def resolve(self, line: bytes | None) -> None:
        self.line = line
        self.resolved.set()

    def exit(self) -> None:
        self.exited.set()
        self.resolved.set()

    async def ready_line(self) -> bytes | None:
        await poll(self.resolved.is_set)
        return None if self.exited.is_set() and self.line is None else self.line

    async def wait_exit(self) -> None:
        await poll(self.exited.is_set)

    def has_exited(self) -> bool:
        return self.exited.is_set()

    async def kill_group(self) -> bool:
        self.log.append(f"process.kill_group {self._identity.pid}")
        if self.confirm_kill:
            self.exit()
        return self.confirm_kill


@dataclass
class FakeLauncher:
    log: Log
    spawn_fails: bool = False
    ready_at_once: bool = True
    line: bytes | None = b"ready\n"
    stop_hangs: bool = False
    processes: list[FakeProcess] = field(default_factory=list)
    specs: list[ProcessSpec] = field(default_factory=list)
    next_pid: int = 100

    def _identity(self) -> ProcessIdentity:
        self.next_pid += 1
        return ProcessIdentity(self.next_pid, float(self.next_pid))

    async def start(self, spec: ProcessSpec, observe: SpawnObserver) -> FakeProcess:
        self.specs.append(spec)
        if self.spawn_fails:
            self.log.append("launcher.start failed")
            raise OSError("no such program")
        identity = self._identity()
        self.log.append(f"launcher.start {identity.pid}")
        observe(identity)
        process = FakeProcess(identity, self.log, self.line)
        if self.ready_at_once:
            process.resolve(self.line)
        self.processes.append(process)
        return process

    async def run_observed(self, spec: ProcessSpec, observe: SpawnObserver) -> ProcessOutcome:
        self.specs.append(spec)
        role = spec.argv[1]
        identity = self._identity()
        observe(identity)
        self.log.append(f"run {role} {identity.pid}")
        request = json.loads(spec.stdin)
        try:
            if (role == "stop" and self.stop_hangs) or request["args"].get("hang"):
                await anyio.sleep(3600)
        except BaseException:
            self.log.append(f"cancelled {role} {identity.pid}")
            raise
        self.log.append(f"done {role} {identity.pid}")
        return ProcessOutcome(exit_code=0, stdout=OK_OUTPUT)

    @property
    def process(self) -> FakeProcess:
        (process,) = self.processes
        return process


@dataclass
class FakeTable:
    log: Log
    alive: set[ProcessIdentity] = field(default_factory=lambda: {ME})
    confirms: bool = True
    killed: list[ProcessIdentity] = field(default_factory=list)

    def own_identity(self) -> ProcessIdentity:
        return ME

    def is_alive(self, identity: ProcessIdentity) -> bool:
        return identity in self.alive

    def kill_group(self, leader: ProcessIdentity) -> bool:
        self.log.append(f"table.kill_group {leader.pid}")
        self.killed.append(leader)
        return self.confirms


@dataclass
class Record:
    owner: ProcessIdentity | None
    lease: bool = True
    journal: list[JournalEntry] = field(default_factory=list)


@dataclass
class FakeStore:
    log: Log
    records: dict[str, Record] = field(default_factory=dict)
    remove_fails: bool = False
    created: int = 0

    def add(self, owner: ProcessIdentity | None, *entries: JournalEntry, lease: bool = True) -> str:
        self.created += 1
        path = f"{PARENT}/session-old{self.created}"
        self.records[path] = Record(owner, lease, list(entries))
        return path

    def create(self, parent: str, owner: ProcessIdentity) -> str:
        self.created += 1
        path = f"{parent}/session-{self.created}"
        self.records[path] = Record(owner)
        self.log.append(f"store.create {path}")
        return path

    def work_directory(self, directory: str) -> str:
        return f"{directory}/work"

    def directories(self, parent: str) -> list[str]:
        self.log.append("store.directories")
        return sorted(p for p in self.records if p.startswith(parent + "/"))

    def owner(self, directory: str) -> ProcessIdentity | None:
        return self.records[directory].owner

    def has_lease(self, directory: str) -> bool:
        return self.records[directory].lease

    def release_lease(self, directory: str) -> None:
        self.log.append(f"store.release_lease {directory}")
        self.records[directory].lease = False

    def append(self, directory: str, entry: JournalEntry) -> None:
        self.log.append(f"store.append {entry.role.value} {entry.leader.pid}")
        if directory not in self.records:  # like the real store: the directory is gone
            raise FileNotFoundError(directory)
        self.records[directory].journal.append(entry)

    def journal(self, directory: str) -> list[JournalEntry]:
        return list(self.records[directory].journal)

    def remove(self, directory: str) -> None:
        if self.remove_fails:
            raise OSError(f"cannot remove {directory}")
        self.log.append(f"store.remove {directory}")
        del self.records[directory]


class FakePrograms:
    windows_paths = False

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        return f"/bin/{name}"

    def is_executable_file(self, path: str) -> bool:
        return True

    def identity(self, path: str) -> ProgramIdentity:
        return ProgramIdentity(real_path=path, own_environment=False)


class FakeScratch:
    def __init__(self) -> None:
        self.live: set[str] = set()
        self.count = 0

    def create_private_directory(self, parent: str | None, prefix: str) -> str:
        self.count += 1
        path = f"{parent or '/tmp'}/{prefix}{self.count}"
        self.live.add(path)
        return path

    def remove_tree(self, path: str) -> None:
        self.live.discard(path)

    def emptied(self, path: str, children: Sequence[str]) -> bool:
        return False


class NoProcesses:
    async def run(self, spec: ProcessSpec) -> ProcessOutcome:
        raise AssertionError("bound calls and stop go through the launcher")

    async def run_between(
        self, before: Callable[[], ProcessSpec], after: Callable[[ProcessOutcome], object]
    ) -> Never:
        raise AssertionError("bound calls and stop go through the launcher")


@dataclass
class World:
    log: Log = field(default_factory=Log)
    stop_timeout: float = STOP_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        self.launcher = FakeLauncher(self.log)
        self.table = FakeTable(self.log)
        self.store = FakeStore(self.log)
        self.scratch = FakeScratch()
        filesystem = MemoryFilesystem({"/repo": {"index.artf": DECLARATION.encode()}})
        workspace = ConfigService(filesystem).load("/repo")
        ports = ToolPorts(
            filesystem,
            RyRegexEngine(),
            NoProcesses(),
            {"PATH": "/bin", "ARTIFACTIZE_CALLER": "x"},
            programs=FakePrograms(),
            scratch=self.scratch,
            threads=THREADS,
        )
        self.registry = AgentToolRegistry.for_artifact(workspace, "app", ports)

    @property
    def ports(self) -> SessionPorts:
        return SessionPorts(
            self.launcher,
            self.table,
            self.store,
            PARENT,
            CLEANUP,
            stop_timeout_seconds=self.stop_timeout,
            threads=THREADS,
        )

    def sessions(self, selected_tool: str | None = None) -> ToolSessions:
        return self.registry.sessions(self.ports, selected_tool)

    async def call(
        self,
        sessions: ToolSessions,
        name: str = ACT,
        token: Cancellation | None = None,
        **args: Any,
    ) -> ToolResult:
        return await self.registry.with_sessions(sessions).call(name, args, None, token)

    def session_directories(self) -> list[str]:
        return sorted(self.store.records)


@pytest.fixture
def world() -> Iterator[World]:
    yield World()


def text(result: ToolResult) -> str:
    return str(result.content[0]["text"])


# --- lazy start and reuse -----------------------------------------------------------------------


async def test_nothing_happens_until_a_bound_tool_is_called(world: World) -> None:
    sessions = world.sessions()
    world.registry.with_sessions(sessions)
    assert world.registry.list()  # listing runs nothing either
    assert world.log == []
    assert await sessions.close() == []
    assert world.log == []
    assert sessions.sessions == {}


async def test_first_call_sweeps_creates_starts_and_journals_then_calls(world: World) -> None:
    async with world.sessions() as sessions:
        result = await world.call(sessions)
        assert not result.is_error and text(result) == "ok"
        (session,) = sessions.sessions.values()
        assert session.state is State.READY
        directory = session.directory
        assert directory is not None
        # Sweep before create, the start group journaled before the call runs.
        assert world.log[:5] == [
            "store.directories",
            f"store.create {directory}",
            "launcher.start 101",
            "store.append start 101",
            "store.append call 102",
        ]
        start, act = world.launcher.specs
        assert start.argv == ("/bin/harness", "start")
        assert json.loads(start.stdin)["args"] == {}
        assert start.env["ARTIFACTIZE_SESSION_DIR"] == f"{directory}/work"
        assert act.env["ARTIFACTIZE_SESSION_DIR"] == f"{directory}/work"
        assert "ARTIFACTIZE_CALLER" not in start.env and "ARTIFACTIZE_CALLER" not in act.env
        # start's private directories live in the session directory, the call's do not.
        assert start.env["TMPDIR"].startswith(directory + "/")
        assert not act.env["TMPDIR"].startswith(directory + "/")


async def test_later_calls_reuse_the_session(world: World) -> None:
    async with world.sessions() as sessions:
        for _ in range(3):
            assert not (await world.call(sessions)).is_error
        assert world.log.count_of("launcher.start") == 1
        assert world.log.count_of("store.create") == 1
        assert world.log.count_of("run act") == 3
    assert world.log.count_of("run stop") == 1


async def test_only_the_called_tools_session_starts(world: World) -> None:
    async with world.sessions() as sessions:
        await world.call(sessions)
        assert list(sessions.sessions) == ["app_app"]
        assert world.launcher.specs[0].argv[1] == "start"
    assert "start-idle" not in [s.argv[1] for s in world.launcher.specs]


async def test_selected_tool_restricts_which_session_may_start(world: World) -> None:
    async with world.sessions(ACT) as sessions:
        refused = await world.call(sessions, POKE)
        assert refused.is_error
        assert text(refused) == SESSION_ENDED.format(name="idle")
        assert world.log == []
        assert not (await world.call(sessions, ACT)).is_error
    async with world.sessions(POKE) as sessions:
        assert (await world.call(sessions, ACT)).is_error
    assert world.log.count_of("launcher.start") == 1


async def test_a_closed_session_set_starts_nothing(world: World) -> None:
    sessions = world.sessions()
    assert await sessions.close() == []
    result = await world.call(sessions)
    assert result.is_error and text(result) == ENDED
    assert world.log == []


# --- startup failures ---------------------------------------------------------------------------


async def test_spawn_failure_is_cached_and_cleaned_at_once(world: World) -> None:
    world.launcher.spawn_fails = True
    sessions = world.sessions()
    for _ in range(3):
        result = await world.call(sessions)
        assert result.is_error and text(result) == SESSION_NOT_STARTED.format(name="app")
    assert world.log.count_of("launcher.start") == 1
    assert world.session_directories() == []  # removed before the first error returned
    assert world.scratch.live == set()
    assert await sessions.close() == []
    assert world.log.count_of("run stop") == 0


async def test_exit_before_readiness_is_cached_and_cleaned_at_once(world: World) -> None:
    world.launcher.line = None
    sessions = world.sessions()
    first = await world.call(sessions)
    assert text(first) == SESSION_NOT_READY.format(name="app")
    assert world.session_directories() == []
    assert "process.kill_group 101" in world.log
    second = await world.call(sessions)
    assert text(second) == SESSION_NOT_READY.format(name="app")
    assert world.log.count_of("launcher.start") == 1
    assert world.log.count_of("run") == 0
    assert await sessions.close() == []
    assert world.log.count_of("run stop") == 0
    assert sessions.sessions["app_app"].state is State.FAILED


async def test_a_call_cancelled_during_readiness_cleans_up_at_once(world: World) -> None:
    world.launcher.ready_at_once = False
    sessions = world.sessions()
    token = Cancellation()
    async with anyio.create_task_group() as group:

        async def cancel_when_launched() -> None:
            await poll(lambda: bool(world.launcher.processes))
            token.cancel()

        group.start_soon(cancel_when_launched)
        result = await world.call(sessions, token=token)
    assert text(result) == CANCELLED_MESSAGE
    assert "process.kill_group 101" in world.log
    assert world.session_directories() == []
    # Nothing failed on its own: a later call starts afresh and works.
    world.launcher.ready_at_once = True
    assert not (await world.call(sessions)).is_error
    assert world.log.count_of("launcher.start") == 2
    assert await sessions.close() == []
    assert world.session_directories() == []


# --- the harness exits after readiness ----------------------------------------------------------


async def test_exit_after_readiness_ends_the_session_without_restart(world: World) -> None:
    sessions = world.sessions()
    assert not (await world.call(sessions)).is_error
    world.launcher.process.exit()
    # The group is killed at once by the session's own watcher, before anyone calls.
    assert await poll(lambda: "process.kill_group 101" in world.log, 5.0)
    result = await world.call(sessions)
    assert result.is_error and text(result) == ENDED
    assert world.log.count_of("launcher.start") == 1
    assert await sessions.close() == []
    assert world.log.count_of("run stop") == 1  # stop is still attempted


async def test_exit_after_readiness_cancels_in_flight_calls(world: World) -> None:
    sessions = world.sessions()
    results: list[ToolResult] = []

    async def hanging_call() -> None:
        results.append(await world.call(sessions, hang=True))

    async with anyio.create_task_group() as group:
        group.start_soon(hanging_call)
        await poll(lambda: world.log.count_of("run act") == 1)
        world.launcher.process.exit()
    assert text(results[0]) == ENDED
    assert world.log.count_of("cancelled act") == 1
    assert await sessions.close() == []


async def test_the_cleaned_start_group_is_not_signalled_again(world: World) -> None:
    sessions = world.sessions()
    assert not (await world.call(sessions)).is_error
    start = world.launcher.process.identity
    world.launcher.process.exit()
    assert text(await world.call(sessions)) == ENDED
    assert await poll(lambda: f"process.kill_group {start.pid}" in world.log, 5.0)
    assert await sessions.close() == []
    # Released once its termination was confirmed: cleanup never names its group again.
    assert start not in world.table.killed


async def test_an_unconfirmed_kill_after_exit_is_reported_without_skipping_stop(
    world: World,
) -> None:
    sessions = world.sessions()
    assert not (await world.call(sessions)).is_error
    world.launcher.process.confirm_kill = False
    results: list[ToolResult] = []

    async def hanging_call() -> None:
        results.append(await world.call(sessions, hang=True))

    async with anyio.create_task_group() as group:
        group.start_soon(hanging_call)
        await poll(lambda: world.log.count_of("run act") == 2)
        world.launcher.process.exit()
    assert text(results[0]) == ENDED
    problems = await sessions.close()
    assert len(problems) == 1 and problems[0].startswith("Tool session cleanup failed")
    assert world.log.count_of("run stop") == 1
    (directory,) = world.session_directories()
    assert not world.store.has_lease(directory)  # kept for the next start's sweep


# --- cleanup ------------------------------------------------------------------------------------


async def test_close_runs_stop_then_kill_then_remove(world: World) -> None:
    sessions = world.sessions()
    await world.call(sessions)
    directory = sessions.sessions["app_app"].directory
    mark = len(world.log)
    assert await sessions.close() == []
    tail = world.log[mark:]
    assert tail[:3] == ["store.append stop 103", "run stop 103", "done stop 103"]
    assert tail.index("done stop 103") < tail.index("process.kill_group 101")
    assert tail.index("process.kill_group 101") < tail.index(f"store.remove {directory}")
    # Every other journaled group is killed (identity-checked) before the directory goes;
    # the start group, confirmed dead through its own handle, is not named again.
    assert "table.kill_group 101" not in tail
    # The call's group (102) was confirmed gone and released right after the call, and the
    # stop group (103) right after stop: both are checked once, before the directory goes.
    for pid in (102, 103):
        assert world.log.index(f"table.kill_group {pid}") < world.log.index(
            f"store.remove {directory}"
        )
    assert world.session_directories() == []
    assert world.scratch.live == set()


async def test_close_cancels_and_awaits_in_flight_calls_before_stop(world: World) -> None:
    sessions = world.sessions()
    results: list[ToolResult] = []

    async def hanging_call() -> None:
        results.append(await world.call(sessions, hang=True))

    async with anyio.create_task_group() as group:
        group.start_soon(hanging_call)
        await poll(lambda: world.log.count_of("run act") == 1)
        assert await sessions.close() == []
    assert world.log.index("cancelled act 102") < world.log.index("run stop 103")
    assert text(results[0]) == ENDED


async def test_a_hanging_stop_is_bounded_and_cleanup_goes_on() -> None:
    world = World(stop_timeout=0.05)
    world.launcher.stop_hangs = True
    sessions = world.sessions()
    await world.call(sessions)
    began = time.monotonic()
    assert await sessions.close() == []
    assert time.monotonic() - began < HUNG_STOP_BOUND_SECONDS  # the stop sleeps an hour
    assert "cancelled stop 103" in world.log
    assert world.session_directories() == []


async def test_failed_confirmation_keeps_the_journal_and_releases_the_lease(
    world: World,
) -> None:
    sessions = world.sessions()
    await world.call(sessions)
    world.table.confirms = False
    problems = await sessions.close()
    assert len(problems) == 1
    assert problems[0].startswith(CLEANUP_FAILED.format(detail=""))
    (directory,) = world.session_directories()
    assert not world.store.has_lease(directory)
    assert [
        e.role for e in world.store.journal(directory) if e.role is not JournalRole.RELEASED
    ] == [
        JournalRole.START,
        JournalRole.CALL,
        JournalRole.STOP,
    ]


async def test_an_unremovable_directory_is_reported_and_swept_later(world: World) -> None:
    sessions = world.sessions()
    await world.call(sessions)
    world.store.remove_fails = True
    problems = await sessions.close()
    assert len(problems) == 1 and problems[0].startswith("Tool session cleanup failed")
    (directory,) = world.session_directories()
    assert not world.store.has_lease(directory)
    world.store.remove_fails = False
    async with world.sessions() as later:  # our own process, but the lease was released
        assert not (await world.call(later)).is_error
        assert directory not in world.session_directories()


async def test_a_dropped_session_set_is_cleaned_up(world: World) -> None:
    sessions = world.sessions()
    await world.call(sessions)
    del sessions
    gc.collect()
    assert await anyio.to_thread.run_sync(lambda: wait_until(lambda: not world.store.records))
    assert world.log.count_of("run stop") == 1


def test_close_from_another_event_loop(world: World) -> None:
    async def review() -> ToolSessions:
        sessions = world.sessions()
        await world.call(sessions)
        return sessions

    sessions = anyio.run(review, backend="asyncio")
    assert anyio.run(sessions.close, backend="asyncio") == []
    assert world.log.count_of("run stop") == 1
    assert world.session_directories() == []


async def test_dropped_at_interpreter_exit_still_kills_what_the_journal_names(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = world.sessions()
    await world.call(sessions)
    stopped = ThreadCleanupExecutor(max_workers=1)
    stopped.shutdown()
    (session,) = sessions.sessions.values()
    monkeypatch.setattr(session, "ports", dataclasses.replace(session.ports, cleanup=stopped))

    async def no_threads(run_stop: bool = True) -> list[str]:
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(session, "cleanup", no_threads)
    sessions._finalizer()
    assert world.session_directories() == []
    assert world.log.count_of("table.kill_group 101") == 1
    await world.launcher.process.kill_group()  # what the real launcher's leader would need


# --- the sweep ----------------------------------------------------------------------------------


def entry(pid: int, role: JournalRole = JournalRole.START) -> JournalEntry:
    return JournalEntry(role, ProcessIdentity(pid, float(pid)))


def test_sweep_decisions(world: World) -> None:
    live_owner = ProcessIdentity(7, 7.0)
    dead_owner = ProcessIdentity(8, 8.0)
    world.table.alive.add(live_owner)
    swept = [
        world.store.add(dead_owner, entry(11), entry(12, JournalRole.CALL)),  # owner exited
        world.store.add(live_owner, entry(21), lease=False),  # cleanup failed, lease released
        world.store.add(None, entry(41)),  # owner record unreadable
    ]
    active = world.store.add(live_owner, entry(31))  # a running review's
    sweep(world.ports)
    assert world.session_directories() == [active]
    assert [f"store.remove {d}" for d in swept] == [i for i in world.log if "remove" in i]
    assert [leader.pid for leader in world.table.killed] == [11, 12, 21, 41]


def test_sweep_that_cannot_confirm_keeps_the_journal(world: World) -> None:
    dead = world.store.add(ProcessIdentity(8, 8.0), entry(11))
    world.table.confirms = False
    with pytest.raises(OSError):
        sweep(world.ports)
    assert world.store.journal(dead) == [entry(11)]
    assert not world.store.has_lease(dead)


async def test_a_failed_sweep_refuses_the_session(world: World) -> None:
    dead = world.store.add(ProcessIdentity(8, 8.0), entry(11))
    world.table.confirms = False
    sessions = world.sessions()
    for _ in range(2):
        result = await world.call(sessions)
        assert text(result) == SWEEP_FAILED.format(name="app")
    assert world.log.count_of("store.create") == 0
    assert world.log.count_of("launcher.start") == 0
    assert world.session_directories() == [dead]
    assert world.store.journal(dead) == [entry(11)]
    assert await sessions.close() == []


async def test_the_sweep_runs_before_a_session_starts(world: World) -> None:
    abandoned = world.store.add(ProcessIdentity(8, 8.0), entry(11))
    async with world.sessions() as sessions:
        assert not (await world.call(sessions)).is_error
        assert abandoned not in world.session_directories()
        assert world.log.index(f"store.remove {abandoned}") < world.log.index("launcher.start 101")


def test_the_stop_bound_defaults_to_thirty_seconds(world: World) -> None:
    assert STOP_TIMEOUT_SECONDS == 30.0
    assert (
        SessionPorts(
            world.launcher, world.table, world.store, PARENT, CLEANUP, threads=THREADS
        ).stop_timeout_seconds
        == 30
    )
