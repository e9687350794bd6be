"""Tool sessions end to end, with real processes: the seed's "Tool sessions" part.

Each test builds a real workspace under ``tmp_path`` whose Artifact ``app`` declares the
session ``app`` (start and stop run ``session_harness.py``) and the bound json tool ``act``
(a ``call`` of the same harness), plus the session ``idle`` with its bound tool ``poke``
that most tests never call. Registries and session sets use the real POSIX adapters;
sessions live in ``tmp_path/sessions``.

The harness appends every invocation to ``tmp_path/records/events.jsonl``, outside the
session directory, so launches, stops and what each process saw survive cleanup. The path
of that directory is in every harness command line: ``harness_processes`` finds a test's
own harness processes (and their grandchildren) with psutil.

Every test ends (autouse fixture ``no_leftovers``) with: no child process of ours, no
harness process of the test, and no session directory anywhere below ``tmp_path``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.adapters.posix.process import PosixProcessRunner
from artifactize.adapters.posix.process_table import PsutilProcessTable
from artifactize.adapters.posix.programs import PosixProgramFinder
from artifactize.adapters.posix.scratch import PosixScratchSpace
from artifactize.adapters.posix.session_process import PosixProcessLauncher
from artifactize.adapters.posix.session_store import PosixSessionStore
from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.adapters.threads import ThreadCleanupExecutor
from artifactize.domain.tools.cancellation import CANCELLED_MESSAGE, Cancellation
from artifactize.domain.tools.registry import UNKNOWN_TOOL, AgentToolRegistry, ToolPorts
from artifactize.domain.tools.results import ToolResult
from artifactize.domain.tools.sessions import (
    SESSION_ENDED,
    SESSION_NOT_READY,
    SESSION_NOT_STARTED,
    STOP_TIMEOUT_SECONDS,
    SWEEP_FAILED,
    SessionPorts,
    ToolSessions,
    sweep,
)
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.domain.use_cases.tools_check import ToolsCheck, ToolsCheckRequest
from artifactize.entrypoints.cli.context import CliContext
from artifactize.ports.sessions import JournalEntry, JournalRole, ProcessIdentity
from tests.fakes.threads import THREADS
from tests.support.cli import run_cli as in_process
from tests.support.workspaces import toml_value as toml

REPO_ROOT = Path(__file__).resolve().parents[2]
HARNESS = str(Path(__file__).resolve().with_name("session_harness.py"))
PYTHON = os.path.realpath(sys.executable)
ACT = "act_app"
# A call that sleeps CALL_SLEEP_SECONDS, or a stop that hangs forever, must be cut short:
# ending within NOT_WAITED_OUT_SECONDS proves it without racing a loaded CI machine.
CALL_SLEEP_SECONDS = 120
NOT_WAITED_OUT_SECONDS = 60
POKE = "poke_idle"  # never used: the tool ``poke`` of Artifact ``app`` is ``poke_app``
ENDED = SESSION_ENDED.format(name="app")
CLEANUP = ThreadCleanupExecutor()  # one per process, as the composition root wires it
NOT_READY = SESSION_NOT_READY.format(name="app")
NOT_STARTED = SESSION_NOT_STARTED.format(name="app")
REFUSED = SWEEP_FAILED.format(name="app")
CALLER_ONLY = {"ARTIFACTIZE_CALLER_SECRET": "caller", "ARTIFACTIZE_SESSION_DIR": "/caller/own"}
OWN_VARIABLES = {
    "ARTIFACTIZE_SESSION_DIR",
    "ARTIFACTIZE_TMP_DIR",
    "ARTIFACTIZE_OUTPUT_DIR",
    "ARTIFACTIZE_WORKSPACE_DIR",
}

pytestmark = pytest.mark.anyio


# --- processes and directories ------------------------------------------------------------------


# How long a test polls for a dropped session set's cleanup thread to finish (a deadline,
# not a pause: the poll ends as soon as the cleanup has), generous for a loaded machine.
CLEANUP_SECONDS = 30.0


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def is_running(pid: int) -> bool:
    """A live process (zombies, which only wait for their parent, do not count)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def harness_processes(marker: Path) -> list[psutil.Process]:
    """Live processes whose command line names ``marker`` (a test's own directory)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.pid == os.getpid() or process.status() == psutil.STATUS_ZOMBIE:
                continue
            if any(str(marker) in part for part in process.cmdline()):
                found.append(process)
        except psutil.Error:
            continue
    return found


def children() -> list[psutil.Process]:
    """Every descendant of this process, zombies included (an unreaped child is a leak)."""
    return psutil.Process().children(recursive=True)


def session_directories(root: Path) -> list[Path]:
    """Session directories (and ones being built) anywhere below ``root``.

    Cleanup threads remove session directories while this looks, so it must tolerate a
    folder vanishing mid-walk: ``os.walk`` skips a folder it can no longer list (``rglob``
    raised FileNotFoundError), and ``is_dir`` is false for one already gone.
    """
    found = []
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(folder, name)
            if (
                fnmatch.fnmatchcase(name, "session-*") or fnmatch.fnmatchcase(name, ".new-*")
            ) and path.is_dir():
                found.append(path)
    return sorted(path for path in found if "records" not in path.parts)


@pytest.fixture(autouse=True)
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    # Children that were there before the test (another module's fixture sharing this
    # worker, say) are not this test's to count or kill.
    before = {p.pid for p in children()}
    yield

    def ours() -> list[psutil.Process]:
        return [p for p in children() if p.pid not in before]

    def leftovers() -> list[str]:
        return (
            [f"child {p.pid}" for p in ours()]
            + [f"harness {p.pid}" for p in harness_processes(tmp_path)]
            + [str(d) for d in session_directories(tmp_path)]
        )

    if wait_until(lambda: not leftovers()):
        return
    found = leftovers()
    for process in harness_processes(tmp_path) + ours():
        with contextlib.suppress(OSError, psutil.Error):
            process.kill()
    pytest.fail(f"left behind: {found}")


def spawn_sleeper(new_group: bool = True) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], start_new_session=new_group)


def identity_of(pid: int) -> ProcessIdentity:
    return ProcessIdentity(pid, psutil.Process(pid).create_time())


def dead_identity() -> ProcessIdentity:
    """The identity of a process that existed and has exited (and was waited for)."""
    sleeper = spawn_sleeper()
    identity = identity_of(sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    return identity


# --- workspace, ports, calls --------------------------------------------------------------------


@dataclass
class Setup:
    """One test's workspace, records and sessions parent, and its ports."""

    root: Path
    start: tuple[str, ...] = ()
    stop: tuple[str, ...] = ()
    start_command: str = PYTHON
    start_execution_paths: tuple[str, ...] = ()
    stop_timeout: float = STOP_TIMEOUT_SECONDS
    environment: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    table: PsutilProcessTable = field(default_factory=PsutilProcessTable)

    def __post_init__(self) -> None:
        self.repo = self.root / "repo"
        self.records = self.root / "records"
        self.parent = self.root / "sessions"
        self.repo.mkdir(exist_ok=True)
        self.records.mkdir(exist_ok=True)
        self.declare()

    def command(self, mode: str, options: tuple[str, ...] = ()) -> list[str]:
        return ["-S", HARNESS, mode, str(self.records), *options]

    def declare(self) -> None:
        start: dict[str, Any] = {
            "command": self.start_command,
            "args": self.command("start", self.start),
        }
        if self.start_execution_paths:
            start["execution_paths"] = list(self.start_execution_paths)
        stop = {"command": PYTHON, "args": self.command("stop", self.stop)}
        schema = {
            "type": "object",
            "properties": {"sleep": {"type": "number"}},
            "additionalProperties": False,
        }
        lines = [
            'name = "app"',
            "[views.agent_tools]",
            'read = { builtin = "read" }',
            "[views.agent_sessions.app]",
            f"start = {toml(start)}",
            f"stop = {toml(stop)}",
            "[views.agent_sessions.idle]",
            f"start = {toml({'command': PYTHON, 'args': self.command('start')})}",
            f"stop = {toml(stop)}",
            "[views.agent_tools.act]",
            'session = "app"',
            'description = "Act on {artifactName}."',
            'protocol = "json"',
            f"command = {toml(PYTHON)}",
            f"args = {toml(self.command('call'))}",
            f"input_schema = {toml(schema)}",
            "[views.agent_tools.peek]",
            'session = "app"',
            'description = "Peek at {artifactName}."',
            'protocol = "plain"',
            f"command = {toml(PYTHON)}",
            f"args = {toml(self.command('call', ('--plain',)))}",
            "[views.agent_tools.poke]",
            'session = "idle"',
            'description = "Poke {artifactName}."',
            'protocol = "json"',
            f"command = {toml(PYTHON)}",
            f"args = {toml(self.command('call'))}",
        ]
        (self.repo / "index.artf").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def tool_ports(self) -> ToolPorts:
        return ToolPorts(
            PosixFilesystem(),
            RyRegexEngine(),
            PosixProcessRunner(),
            self.environment,
            programs=PosixProgramFinder(),
            scratch=PosixScratchSpace(),
            threads=THREADS,
        )

    def session_ports(self) -> SessionPorts:
        return SessionPorts(
            PosixProcessLauncher(),
            self.table,
            PosixSessionStore(),
            parent=str(self.parent),
            cleanup=CLEANUP,
            stop_timeout_seconds=self.stop_timeout,
            threads=THREADS,
        )

    def registry(self) -> AgentToolRegistry:
        workspace = ConfigService(PosixFilesystem()).load(str(self.repo))
        return AgentToolRegistry.for_artifact(workspace, "app", self.tool_ports())

    def sessions(self, registry: AgentToolRegistry | None = None) -> ToolSessions:
        return (registry or self.registry()).sessions(self.session_ports())

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        path = self.records / "events.jsonl"
        if not path.exists():
            return []
        text = path.read_text()
        # A harness may be appending right now, and a reader can see the first part of its
        # line: a line without its newline is not written yet.
        complete = text[: text.rfind("\n") + 1]
        entries = [json.loads(line) for line in complete.splitlines()]
        return [e for e in entries if kind is None or e["event"] == kind]

    def wait_event(self, kind: str, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        assert wait_until(lambda: len(self.events(kind)) >= count, timeout), self.events()
        return self.events(kind)

    def session_directories(self) -> list[Path]:
        return session_directories(self.parent) if self.parent.exists() else []

    def harness_processes(self) -> list[psutil.Process]:
        return harness_processes(self.records)


def data(result: ToolResult) -> dict[str, Any]:
    assert not result.is_error, result.to_json()
    block = result.content[0]
    assert block["type"] == "json"
    value: dict[str, Any] = block["data"]
    return value


def error(result: ToolResult) -> str:
    assert result.is_error, result.to_json()
    return result.error_text or ""


async def call(sessions: ToolSessions, registry: AgentToolRegistry, **args: Any) -> ToolResult:
    return await registry.with_sessions(sessions).call(ACT, args)


# --- lazy start, reuse, nothing when never called -------------------------------------------------


async def test_two_bound_calls_share_one_harness(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()
    async with setup.sessions(registry) as sessions:
        bound = registry.with_sessions(sessions)
        first = data(await bound.call(ACT, {}))
        second = data(await bound.call(ACT, {}))
        (start,) = setup.events("start")
        assert first["harness"] == second["harness"] == start["pid"]
        assert (first["count"], second["count"]) == (1, 2)
        assert first["session_dir"] == second["session_dir"] == start["session_dir"]
        (directory,) = setup.session_directories()
        assert is_running(start["pid"])
        # The directory records its owner (us), an active lease and every admitted group.
        owner = json.loads((directory / "owner.json").read_text())
        assert (owner["pid"], owner["createTime"]) == (os.getpid(), psutil.Process().create_time())
        assert (directory / "lease").exists()
        journal = [
            json.loads(line) for line in (directory / "journal.jsonl").read_text().splitlines()
        ]
        calls = [e["pid"] for e in setup.events("call")]
        assert [(e["role"], e["pid"]) for e in journal if e["role"] != "released"] == [
            ("start", start["pid"]),
            *(("call", pid) for pid in calls),
        ]
        # each finished call's group was confirmed gone and released: never signalled again
        assert {e["pid"] for e in journal if e["role"] == "released"} == set(calls)
        assert Path(start["session_dir"]) == directory / "work"
        assert not str(directory).startswith(str(setup.repo))
    assert len(setup.events("start")) == 1
    assert len(setup.events("stop")) == 1
    assert not is_running(start["pid"])
    assert setup.session_directories() == []


async def test_a_session_never_called_starts_nothing(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()
    names = [definition.name for definition in registry.list()]
    # The Agent sees the bound tools only: no start, no stop, no instance id.
    assert names == [ACT, "peek_app", "poke_app", "read_app"]
    for definition in registry.list():
        assert "session-" not in json.dumps(definition.to_json())
    sessions = setup.sessions(registry)
    bound = registry.with_sessions(sessions)
    assert error(await bound.call("start_app", {})) == UNKNOWN_TOOL
    assert error(await bound.call("app.start", {})) == UNKNOWN_TOOL
    read = await bound.call("read_app", {"path": "index.artf"})
    assert not read.is_error
    assert not setup.parent.exists()
    assert await sessions.close() == []
    assert not setup.parent.exists()
    assert setup.events() == []


async def test_a_bound_tool_without_a_session_set_runs_nothing(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    result = await setup.registry().call(ACT, {})
    assert result.is_error
    assert setup.events() == []
    assert not setup.parent.exists()


async def test_only_the_session_of_the_called_tool_starts(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()
    async with setup.sessions(registry) as sessions:
        data(await call(sessions, registry))
        assert len(setup.events("start")) == 1  # ``idle`` never started
    assert len(setup.events("stop")) == 1


# --- startup failures ---------------------------------------------------------------------------


async def test_exit_before_readiness_is_the_call_error_and_is_never_retried(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path, start=("--exit-before-ready",))
    registry = setup.registry()
    sessions = setup.sessions(registry)
    assert error(await call(sessions, registry)) == NOT_READY
    # Cleaned up at once: no process, no directory, before the review ends.
    assert setup.harness_processes() == []
    assert setup.session_directories() == []
    assert error(await call(sessions, registry)) == NOT_READY
    assert error(await call(sessions, registry, sleep=0)) == NOT_READY
    assert len(setup.events("start")) == 1  # launched once: no restart
    assert setup.events("call") == []
    assert await sessions.close() == []
    assert setup.events("stop") == []  # it never became ready: nothing to stop


async def test_spawn_failure_is_the_call_error_and_is_never_retried(tmp_path: Path) -> None:
    setup = Setup(tmp_path, start_command=str(tmp_path / "missing-harness"))
    registry = setup.registry()
    sessions = setup.sessions(registry)
    first = error(await call(sessions, registry))
    assert first == NOT_STARTED
    assert first != "Agent tool preparation failed."
    assert error(await call(sessions, registry)) == NOT_STARTED
    assert setup.session_directories() == []
    assert await sessions.close() == []
    assert setup.events() == []


async def test_readiness_has_no_fixed_bound_of_its_own(tmp_path: Path) -> None:
    setup = Setup(tmp_path, start=("--ready-delay=1.5",))
    registry = setup.registry()
    async with setup.sessions(registry) as sessions:
        assert data(await call(sessions, registry))["count"] == 1


async def test_after_readiness_output_is_drained_and_discarded(tmp_path: Path) -> None:
    setup = Setup(tmp_path, start=("--flood",))
    registry = setup.registry()
    async with setup.sessions(registry) as sessions:
        assert data(await call(sessions, registry))["count"] == 1
        # 4 MiB on each stream: a harness whose pipes were not drained would block.
        setup.wait_event("flooded", timeout=10)
        assert data(await call(sessions, registry))["count"] == 2


# --- the harness exits during the review ----------------------------------------------------------


async def test_start_exit_after_readiness_cancels_calls_and_kills_the_group(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path, start=("--grandchild", "--exit-after=1.0"))
    registry = setup.registry()
    sessions = setup.sessions(registry)
    began = time.monotonic()
    in_flight = await call(sessions, registry, sleep=CALL_SLEEP_SECONDS)
    elapsed = time.monotonic() - began
    assert error(in_flight) == ENDED
    assert elapsed < NOT_WAITED_OUT_SECONDS, elapsed
    (sleeping,) = setup.events("call-sleeping")
    (grandchild,) = setup.events("grandchild")
    # The group was killed at once (the grandchild ignores SIGTERM), and the in-flight call
    # too, before the review ends.
    assert wait_until(lambda: not is_running(grandchild["pid"]))
    assert not is_running(sleeping["pid"])
    assert setup.harness_processes() == []
    assert error(await call(sessions, registry)) == ENDED
    assert len(setup.events("start")) == 1  # no restart
    assert await sessions.close() == []
    assert len(setup.events("stop")) == 1  # stop is still attempted
    assert setup.session_directories() == []


async def test_start_exit_while_idle_kills_the_group_at_once(tmp_path: Path) -> None:
    setup = Setup(tmp_path, start=("--grandchild", "--exit-after=0.5"))
    registry = setup.registry()
    sessions = setup.sessions(registry)
    assert data(await call(sessions, registry))["count"] == 1
    (grandchild,) = setup.events("grandchild")
    setup.wait_event("exiting")
    # Nobody calls: the group is still killed promptly.
    assert wait_until(lambda: not is_running(grandchild["pid"]))
    assert error(await call(sessions, registry)) == ENDED
    assert len(setup.events("start")) == 1
    assert await sessions.close() == []


class UnrecordableReleases(PosixSessionStore):
    """A session store whose disk refuses the RELEASED journal entry (and only that)."""

    def append(self, directory: str, entry: JournalEntry) -> None:
        if entry.role is JournalRole.RELEASED:
            raise OSError(28, "No space left on device")
        super().append(directory, entry)


RETIRE_FAILURE = "Tool session cleanup failed: could not record that a process group of app_app"


async def test_a_failure_to_retire_the_start_group_is_reported_not_suppressed(
    tmp_path: Path,
) -> None:
    setup = Setup(tmp_path, start=("--exit-after=0.5",))
    registry = setup.registry()
    ports = setup.session_ports()
    sessions = registry.sessions(replace(ports, store=UnrecordableReleases()))
    assert data(await call(sessions, registry))["count"] == 1
    setup.wait_event("exiting")
    assert wait_until(lambda: setup.harness_processes() == [])
    assert error(await call(sessions, registry)) == ENDED
    problems = await sessions.close()
    # Each unrecorded release (the start group's, the bound call's; a group confirmed gone
    # on two paths at once may be released twice) is reported, none suppressed.
    assert len(problems) >= 2, problems
    assert all(p.startswith(RETIRE_FAILURE) and "No space left" in p for p in problems)
    assert len(setup.events("stop")) == 1  # the stop was not skipped
    assert setup.session_directories() == []  # nor the removal


async def test_releases_that_fail_during_cleanup_are_reported_too(tmp_path: Path) -> None:
    """The start group's release and the stop's happen during cleanup when the harness is
    still running: theirs are reported with the bound call's (they used to be dropped, and
    the test above flaked when cleanup came before the harness's exit was seen)."""
    setup = Setup(tmp_path)
    registry = setup.registry()
    ports = setup.session_ports()
    sessions = registry.sessions(replace(ports, store=UnrecordableReleases()))
    assert data(await call(sessions, registry))["count"] == 1
    problems = await sessions.close()
    assert len(problems) >= 3, problems  # the bound call's, the stop's, the start group's
    assert all(p.startswith(RETIRE_FAILURE) and "No space left" in p for p in problems)
    assert setup.harness_processes() == [] and setup.session_directories() == []


# --- cleanup: stop, kill, reap, remove ----------------------------------------------------------


async def test_stop_hangs_cleanup_still_kills_reaps_and_removes(tmp_path: Path) -> None:
    setup = Setup(tmp_path, start=("--grandchild",), stop=("--hang",), stop_timeout=0.5)
    registry = setup.registry()
    sessions = setup.sessions(registry)
    harness = data(await call(sessions, registry))["harness"]
    began = time.monotonic()
    assert await sessions.close() == []
    assert time.monotonic() - began < NOT_WAITED_OUT_SECONDS
    (hanging,) = setup.events("stop-hanging")
    (grandchild,) = setup.events("grandchild")
    for pid in (hanging["pid"], grandchild["pid"], harness):
        assert not is_running(pid), pid
    assert setup.harness_processes() == []
    assert setup.session_directories() == []


async def test_stop_fails_cleanup_still_kills_reaps_and_removes(tmp_path: Path) -> None:
    setup = Setup(tmp_path, start=("--grandchild",), stop=("--fail",))
    registry = setup.registry()
    sessions = setup.sessions(registry)
    harness = data(await call(sessions, registry))["harness"]
    assert await sessions.close() == []
    assert len(setup.events("stop")) == 1
    (grandchild,) = setup.events("grandchild")
    assert not is_running(harness)
    assert not is_running(grandchild["pid"])
    assert setup.session_directories() == []


def test_stop_bound_defaults_to_thirty_seconds(tmp_path: Path) -> None:
    assert STOP_TIMEOUT_SECONDS == 30.0
    assert Setup(tmp_path).session_ports().stop_timeout_seconds == 30.0
    assert CliContext.services().session_ports().stop_timeout_seconds == 30.0


async def test_close_cancels_and_awaits_in_flight_calls_before_stop(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()
    sessions = setup.sessions(registry)
    results: list[ToolResult] = []

    async def long_call() -> None:
        results.append(await call(sessions, registry, sleep=30))

    async with anyio.create_task_group() as group:
        group.start_soon(long_call)
        while not setup.events("call-sleeping"):
            await anyio.sleep(0.02)
        assert await sessions.close() == []
    (sleeping,) = setup.events("call-sleeping")
    (stop,) = setup.events("stop")
    assert stop["calls_alive"] == []  # the bound call was gone before stop ran
    assert not is_running(sleeping["pid"])
    assert error(results[0]) == ENDED


async def test_review_timeout_cleans_up_the_session(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()
    with anyio.move_on_after(1.0) as deadline:
        async with setup.sessions(registry) as sessions:
            assert data(await call(sessions, registry))["count"] == 1
            await call(sessions, registry, sleep=30)
    assert deadline.cancelled_caught
    assert len(setup.events("stop")) == 1
    assert setup.harness_processes() == []


async def test_review_timeout_during_readiness_cleans_up(tmp_path: Path) -> None:
    setup = Setup(tmp_path, start=("--ready-delay=30",))
    registry = setup.registry()
    with anyio.move_on_after(0.5) as deadline:
        async with setup.sessions(registry) as sessions:
            await call(sessions, registry)
    assert deadline.cancelled_caught  # startup and readiness count toward the deadline
    setup.wait_event("start")
    assert setup.events("ready") == []
    assert setup.harness_processes() == []


async def test_a_call_cancelled_during_readiness_leaves_nothing_behind(tmp_path: Path) -> None:
    setup = Setup(tmp_path, start=("--ready-delay=1.0",))
    registry = setup.registry()
    sessions = setup.sessions(registry)
    bound = registry.with_sessions(sessions)
    token = Cancellation()
    async with anyio.create_task_group() as group:

        async def cancel_soon() -> None:
            await anyio.to_thread.run_sync(setup.wait_event, "start")
            token.cancel()

        group.start_soon(cancel_soon)
        cancelled = await bound.call(ACT, {}, None, token)
    assert error(cancelled) == CANCELLED_MESSAGE
    # The review goes on: a later call works, and closing leaves nothing behind.
    assert data(await bound.call(ACT, {}))["count"] >= 1
    assert await sessions.close() == []
    assert setup.harness_processes() == []
    assert setup.session_directories() == []


async def test_an_error_inside_the_review_cleans_up(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()
    with pytest.raises(RuntimeError):
        async with setup.sessions(registry) as sessions:
            data(await call(sessions, registry))
            raise RuntimeError("review failed")
    assert len(setup.events("stop")) == 1
    assert setup.harness_processes() == []


# --- environment and directories ----------------------------------------------------------------


async def test_bound_calls_and_stop_share_the_session_directory_only(tmp_path: Path) -> None:
    setup = Setup(
        tmp_path,
        environment=dict(os.environ, HARNESS_CANARY="author", **CALLER_ONLY),
        start_execution_paths=("index.artf",),
    )
    registry = setup.registry()
    async with setup.sessions(registry) as sessions:
        first = data(await call(sessions, registry))
        second = data(await call(sessions, registry))
        work = Path(first["session_dir"])
        # ARTIFACTIZE_SESSION_DIR is <parent>/session-*/work, never in the repository.
        assert work.name == "work"
        assert work.parent.parent == setup.parent
        assert work.parent.name.startswith("session-")
        for call_data in (first, second):
            assert not Path(call_data["context"]["outputDir"]).exists()  # removed
            assert not Path(call_data["context"]["tmpDir"]).exists()
    (start,) = setup.events("start")
    (stop,) = setup.events("stop")
    calls = setup.events("call")
    for entry in (start, stop, *calls):
        assert entry["session_dir"] == str(work)
        assert set(entry["artifactize_env"]) == OWN_VARIABLES, entry["artifactize_env"]
        assert entry["artifactize_env"]["ARTIFACTIZE_SESSION_DIR"] == str(work)
        assert entry["canary"] == "author"  # the author's own environment
        assert entry["home"] == os.environ.get("HOME")
        assert entry["cwd"] == str(setup.repo)
        assert entry["tmpdir"] == entry["artifactize_env"]["ARTIFACTIZE_TMP_DIR"]
    # Each invocation has its own private output and temporary directories.
    outputs = {e["artifactize_env"]["ARTIFACTIZE_OUTPUT_DIR"] for e in (start, stop, *calls)}
    tmps = {e["artifactize_env"]["ARTIFACTIZE_TMP_DIR"] for e in (start, stop, *calls)}
    assert len(outputs) == len(tmps) == 4
    for path in outputs | tmps:
        assert not path.startswith(str(work))
    assert start["args"] == {}
    assert start["version"] == 1
    assert start["context"]["executionPaths"] == {"index.artf": str(setup.repo / "index.artf")}


async def test_plain_and_json_bound_tools_share_the_session(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()
    async with setup.sessions(registry) as sessions:
        bound = registry.with_sessions(sessions)
        json_call = data(await bound.call(ACT, {}))
        plain = await bound.call("peek_app", {})
        assert not plain.is_error, plain.to_json()
        plain_call = json.loads(str(plain.content[0]["text"]))
        assert plain_call["harness"] == json_call["harness"]
        assert plain_call["session_dir"] == json_call["session_dir"]
        assert (json_call["count"], plain_call["count"]) == (1, 2)
        assert set(plain_call["artifactize_env"]) == OWN_VARIABLES


async def test_concurrent_reviews_of_one_artifact_are_independent(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    first_registry, second_registry = setup.registry(), setup.registry()
    first_sessions = setup.sessions(first_registry)
    second_sessions = setup.sessions(second_registry)
    results: dict[str, ToolResult] = {}

    async def review(key: str, sessions: ToolSessions, registry: AgentToolRegistry) -> None:
        results[key] = await call(sessions, registry, sleep=0.5)

    async with anyio.create_task_group() as group:
        group.start_soon(review, "first", first_sessions, first_registry)
        group.start_soon(review, "second", second_sessions, second_registry)
    first, second = data(results["first"]), data(results["second"])
    assert first["harness"] != second["harness"]
    assert first["session_dir"] != second["session_dir"]
    assert first["count"] == second["count"] == 1
    assert len(setup.session_directories()) == 2
    assert await first_sessions.close() == []
    assert len(setup.session_directories()) == 1
    assert is_running(second["harness"])
    assert data(await call(second_sessions, second_registry))["count"] == 2
    assert await second_sessions.close() == []
    assert len(setup.events("stop")) == 2


# --- dropped session sets, finished event loops ----------------------------------------------


async def test_a_dropped_session_set_is_still_cleaned_up(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()
    sessions = setup.sessions(registry)
    harness = data(await call(sessions, registry))["harness"]
    del sessions
    gc.collect()
    await anyio.to_thread.run_sync(
        lambda: wait_until(
            lambda: not setup.session_directories() and not is_running(harness), CLEANUP_SECONDS
        )
    )
    assert not is_running(harness)
    assert setup.session_directories() == []
    assert len(setup.events("stop")) == 1


def test_close_from_a_fresh_event_loop_after_the_callers_loop_ended(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()

    async def review() -> tuple[ToolSessions, int]:
        sessions = setup.sessions(registry)
        return sessions, data(await call(sessions, registry))["harness"]

    sessions, harness = anyio.run(review, backend="asyncio")
    assert is_running(harness)  # the caller's loop is gone, the session is not
    assert anyio.run(sessions.close, backend="asyncio") == []
    assert not is_running(harness)
    assert len(setup.events("stop")) == 1


def test_dropping_after_the_callers_loop_ended_still_cleans_up(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()

    async def review() -> tuple[ToolSessions, int]:
        sessions = setup.sessions(registry)
        return sessions, data(await call(sessions, registry))["harness"]

    sessions, harness = anyio.run(review, backend="asyncio")
    del sessions
    gc.collect()
    assert wait_until(
        lambda: not is_running(harness) and not setup.session_directories(), CLEANUP_SECONDS
    )
    assert len(setup.events("stop")) == 1


DRIVER = """\
import json, sys
import anyio
from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.adapters.posix.process import PosixProcessRunner
from artifactize.adapters.posix.programs import PosixProgramFinder
from artifactize.adapters.posix.scratch import PosixScratchSpace
from artifactize.adapters.posix.session_process import PosixProcessLauncher
from artifactize.adapters.posix.session_store import PosixSessionStore
from artifactize.adapters.posix.process_table import PsutilProcessTable
from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.adapters.threads import ThreadCleanupExecutor
from artifactize.adapters.worker_threads import AnyioWorkerThreads
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.domain.tools.registry import AgentToolRegistry, ToolPorts
from artifactize.domain.tools.sessions import SessionPorts

repo, parent, mode = sys.argv[1], sys.argv[2], sys.argv[3]
ports = ToolPorts(PosixFilesystem(), RyRegexEngine(), PosixProcessRunner(), {"PATH": "/usr/bin:/bin"},
                  programs=PosixProgramFinder(), scratch=PosixScratchSpace(),
                  threads=AnyioWorkerThreads())
session_ports = SessionPorts(PosixProcessLauncher(), PsutilProcessTable(), PosixSessionStore(), parent,
                             ThreadCleanupExecutor(), threads=AnyioWorkerThreads())

async def main():
    workspace = ConfigService(PosixFilesystem()).load(repo)
    registry = AgentToolRegistry.for_artifact(workspace, "app", ports)
    sessions = registry.sessions(session_ports)
    result = await registry.with_sessions(sessions).call("act_app", {})
    print(json.dumps(result.to_json()), flush=True)
    if mode == "crash":
        await anyio.sleep(3600)
    # "exit": drop the set without close(); "global": keep it until the interpreter exits
    KEPT.append(sessions if mode == "global" else None)

KEPT = []

anyio.run(main)
"""


def run_driver(setup: Setup, mode: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    script = setup.root / "driver.py"
    script.write_text(DRIVER, encoding="utf-8")
    driver = subprocess.Popen(
        [sys.executable, str(script), str(setup.repo), str(setup.parent), mode],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
    )
    assert driver.stdout is not None
    line = driver.stdout.readline()
    result = json.loads(line)
    assert not result.get("isError"), result
    value: dict[str, Any] = result["content"][0]["data"]
    return driver, value


@pytest.mark.parametrize("leader_exits", [False, True], ids=["leader-alive", "leader-exited"])
async def test_a_killed_owner_is_cleaned_up_by_the_next_session(
    tmp_path: Path, leader_exits: bool
) -> None:
    # The first leader exits a while after readiness: long enough for the driver's call to
    # land first on a loaded machine (0.3 s was not).
    options = ("--grandchild", "--exit-after=1.0") if leader_exits else ("--grandchild",)
    setup = Setup(tmp_path, start=options)
    driver, first = await anyio.to_thread.run_sync(run_driver, setup, "crash")
    orphan = first["harness"]
    (grandchild,) = setup.events("grandchild")
    (abandoned,) = setup.session_directories()
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    assert driver.stdout is not None
    driver.stdout.close()
    # Stop could not run: the harness (or, once its leader exited, the rest of its group)
    # outlives the owner.
    if leader_exits:
        assert wait_until(lambda: not is_running(orphan))
        # The next session's leader stays, so its call cannot race an exit of its own.
        setup.start = ("--grandchild",)
        setup.declare()
    else:
        assert is_running(orphan)
    assert is_running(grandchild["pid"])
    registry = setup.registry()
    async with setup.sessions(registry) as sessions:
        second = data(await call(sessions, registry))
        # The sweep ran before this session started.
        assert second["harness"] != orphan
        assert not is_running(orphan)
        assert not is_running(grandchild["pid"])
        assert abandoned not in setup.session_directories()
        assert len(setup.session_directories()) == 1
    assert len(setup.events("stop")) == 1  # only the second session's stop
    assert setup.harness_processes() == []


@pytest.mark.parametrize("mode", ["exit", "global"])
async def test_an_owner_that_exits_without_close_leaves_nothing_running(
    tmp_path: Path, mode: str
) -> None:
    setup = Setup(tmp_path)
    driver, first = await anyio.to_thread.run_sync(run_driver, setup, mode)
    assert driver.stdout is not None
    driver.stdout.read()
    driver.stdout.close()
    assert await anyio.to_thread.run_sync(driver.wait) == 0
    assert wait_until(lambda: not is_running(first["harness"]))
    assert setup.session_directories() == []


# --- the sweep ----------------------------------------------------------------------------------


async def test_a_reused_pid_in_a_journal_is_never_signalled(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    store = PosixSessionStore()
    sleeper = spawn_sleeper()
    try:
        live = identity_of(sleeper.pid)
        reused = ProcessIdentity(live.pid, live.create_time - 1000)
        directory = store.create(str(setup.parent), dead_identity())
        store.append(directory, JournalEntry(JournalRole.START, reused))
        registry = setup.registry()
        async with setup.sessions(registry) as sessions:
            data(await call(sessions, registry))
            assert not Path(directory).exists()
            assert len(setup.session_directories()) == 1
        assert sleeper.poll() is None
        assert is_running(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()


async def test_an_owner_that_exited_unwaited_counts_as_gone(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    store = PosixSessionStore()
    owner = spawn_sleeper()
    victim = spawn_sleeper()
    try:
        directory = store.create(str(setup.parent), identity_of(owner.pid))
        store.append(directory, JournalEntry(JournalRole.CALL, identity_of(victim.pid)))
        owner.kill()
        assert wait_until(lambda: psutil.Process(owner.pid).status() == psutil.STATUS_ZOMBIE)
        assert store.has_lease(directory)
        await anyio.to_thread.run_sync(sweep, setup.session_ports())
        assert not Path(directory).exists()
        assert wait_until(lambda: not is_running(victim.pid))
    finally:
        for process in (owner, victim):
            process.kill()
            process.wait()


async def test_sweep_leaves_active_leases_and_removes_released_ones(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    store = PosixSessionStore()
    me = PsutilProcessTable().own_identity()
    kept_group, swept_group = spawn_sleeper(), spawn_sleeper()
    try:
        active = store.create(str(setup.parent), me)
        store.append(active, JournalEntry(JournalRole.START, identity_of(kept_group.pid)))
        released = store.create(str(setup.parent), me)
        store.append(released, JournalEntry(JournalRole.START, identity_of(swept_group.pid)))
        store.release_lease(released)
        registry = setup.registry()
        async with setup.sessions(registry) as sessions:
            data(await call(sessions, registry))
            assert Path(active).exists()
            assert not Path(released).exists()
            assert is_running(kept_group.pid)
            assert wait_until(lambda: not is_running(swept_group.pid))
        assert Path(active).exists()  # our own close does not touch another review's
        assert is_running(kept_group.pid)
    finally:
        for process in (kept_group, swept_group):
            process.kill()
            process.wait()
        store.remove(active)


async def test_a_sweep_that_cannot_confirm_refuses_the_new_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = Setup(tmp_path)
    store = PosixSessionStore()
    entry = JournalEntry(JournalRole.START, dead_identity())
    directory = store.create(str(setup.parent), dead_identity())
    store.append(directory, entry)
    monkeypatch.setattr(setup.table, "kill_group", lambda leader: False)
    registry = setup.registry()
    sessions = setup.sessions(registry)
    assert error(await call(sessions, registry)) == REFUSED
    assert error(await call(sessions, registry)) == REFUSED
    assert setup.events() == []  # nothing was started
    assert setup.session_directories() == [Path(directory)]
    assert store.journal(directory) == [entry]  # the journal is kept
    assert not store.has_lease(directory)
    assert await sessions.close() == []
    monkeypatch.undo()
    await anyio.to_thread.run_sync(sweep, setup.session_ports())
    assert setup.session_directories() == []


async def test_unconfirmed_cleanup_keeps_the_journal_for_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = Setup(tmp_path)
    registry = setup.registry()
    sessions = setup.sessions(registry)
    data(await call(sessions, registry))
    monkeypatch.setattr(setup.table, "kill_group", lambda leader: False)
    problems = await sessions.close()
    assert len(problems) == 1 and problems[0].startswith("Tool session cleanup failed")
    (kept,) = setup.session_directories()
    store = PosixSessionStore()
    assert not store.has_lease(str(kept))
    roles = [(e.role.value, e.leader.pid) for e in store.journal(str(kept))]
    (start,), (bound,), (stop,) = setup.events("start"), setup.events("call"), setup.events("stop")
    admitted = [r for r in roles if r[0] != "released"]
    assert admitted == [("start", start["pid"]), ("call", bound["pid"]), ("stop", stop["pid"])]
    # groups confirmed gone before the failure are released; only the others stay signallable
    released = {pid for role, pid in roles if role == "released"}
    assert {pid for _, pid in admitted} - released
    monkeypatch.undo()
    # The next start finishes the job (our process still owns it: the lease decides).
    async with setup.sessions(registry) as later:
        data(await call(later, registry))
        assert kept not in setup.session_directories()


# --- tools check ----------------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """``artifactize ARGV`` in process (``tests/support/cli.py``); ``capsys`` kept for callers."""
    done = in_process(*argv)
    return done.code, done.json()


def test_tools_check_execute_runs_a_fresh_session_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    setup = Setup(tmp_path)
    state = tmp_path / "state"
    monkeypatch.setenv("ARTIFACTIZE_STATE_HOME", str(state))
    argv: tuple[str, ...] = ("--repo", str(setup.repo), "tools", "check", "--artifact", "app")
    argv += ("--audience", "agent", "--tool", "act", "--execute", "--args", "{}")
    code, report = run_cli(capsys, *argv)
    assert code == 0, report
    assert report["ok"] is True
    first = report["result"]["content"][0]["data"]
    assert first["count"] == 1
    assert Path(first["session_dir"]).is_relative_to(state / "tool-sessions")
    assert "ARTIFACTIZE_STATE_HOME" not in first["artifactize_env"]
    assert session_directories(state) == []
    assert not is_running(first["harness"])
    assert len(setup.events("stop")) == 1
    # A second check gets a fresh session of its own.
    code, report = run_cli(capsys, *argv)
    assert code == 0
    second = report["result"]["content"][0]["data"]
    assert second["count"] == 1
    assert second["harness"] != first["harness"]
    assert len(setup.events("start")) == 2


def test_tools_check_execute_reports_the_startup_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    setup = Setup(tmp_path, start=("--exit-before-ready",))
    monkeypatch.setenv("ARTIFACTIZE_STATE_HOME", str(tmp_path / "state"))
    argv = ("--repo", str(setup.repo), "tools", "check", "--artifact", "app")
    code, report = run_cli(capsys, *argv, "--audience", "agent", "--tool", "act", "--execute")
    assert code == 1
    assert report["result"]["content"][0]["text"] == NOT_READY
    assert session_directories(tmp_path / "state") == []


async def test_tools_check_reports_a_cleanup_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = Setup(tmp_path)
    monkeypatch.setattr(setup.table, "kill_group", lambda leader: False)
    check = ToolsCheck(
        load=ConfigService(PosixFilesystem()).load,
        ports=setup.tool_ports(),
        programs=PosixProgramFinder(),
        session_ports=setup.session_ports(),
    )
    request = ToolsCheckRequest(
        artifact="app", audience="agent", tool="act", execute=True, args={}, args_given=True
    )
    report, code = await check.run(str(setup.repo), request)
    assert code == 1
    assert report["ok"] is False
    assert not report["result"].get("isError")  # the call itself succeeded
    messages = [c["message"] or "" for c in report["checks"] if c["stage"] == "execute"]
    assert any(m.startswith("Tool session cleanup failed") for m in messages), report
    monkeypatch.undo()
    await anyio.to_thread.run_sync(sweep, setup.session_ports())


def test_static_tools_check_checks_session_commands_without_running_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    setup = Setup(tmp_path, start_command=str(tmp_path / "missing-harness"))
    state = tmp_path / "state"
    monkeypatch.setenv("ARTIFACTIZE_STATE_HOME", str(state))
    code, report = run_cli(
        capsys, "--repo", str(setup.repo), "tools", "check", "--artifact", "app", "--tool", "act"
    )
    assert code == 1
    (check,) = report["checks"]
    assert check["ok"] is False and "missing-harness" in check["message"], check
    assert setup.events() == []
    assert not state.exists()


def test_static_tools_check_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    setup = Setup(tmp_path)
    state = tmp_path / "state"
    monkeypatch.setenv("ARTIFACTIZE_STATE_HOME", str(state))
    code, report = run_cli(capsys, "--repo", str(setup.repo), "tools", "check")
    assert code == 0, report
    code, report = run_cli(
        capsys, "--repo", str(setup.repo), "tools", "check", "--artifact", "app", "--tool", "act"
    )
    assert code == 0, report
    assert setup.events() == []
    assert not state.exists()
