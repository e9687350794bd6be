"""Human tools with real processes: acceptance cases J (HUM-*) and the process rules behind
them — the real environment, process-group cleanup on timeout and cancellation, launch
handoff (immediate return, survival, no zombie, new session, SIGPIPE ignored), live lines,
file-target rechecks, and ``tools check --execute`` through the CLI.

A launched program survives the call by design, so every test that launches one kills it
itself at the end (``launched`` fixture); everything else a test starts must be gone when
the module ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.domain.declarations.diagnostics import ConfigError
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.tools.human.lines import OutputLine, ProgramEnded, ToolLogEvent
from artifactize.domain.tools.human.registry import HumanToolPorts, HumanToolRegistry
from artifactize.domain.tools.human.results import HumanToolResult
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.entrypoints.container import DESKTOP_OPENER, SELF_COMMAND, Container
from tests.support.cli import CliResult
from tests.support.cli import run_cli as in_process
from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.workspaces import declare, entries_under, write

pytestmark = pytest.mark.anyio

LAUNCHED = {"content": [{"type": "launch", "launched": True}], "isError": False}
MARKER = "\n[output truncated]"
HUMAN_EVAL = {"title": "Check", "profile": {"kind": "human"}, "payload": {"instruction": "Check."}}
SIGPIPE_BIT = 1 << (signal.SIGPIPE - 1)
SLOW_SECONDS = 60  # the slow tool's sleep; its 200 ms timeout must cut it
LAUNCHED_WAIT_SECONDS = 30.0  # a bound for a failing run only; the program ends at once


@pytest.fixture(scope="module", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=3):
        yield


# --- helpers -------------------------------------------------------------------------------------


def wait_until(condition: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def read_pid(path: Path, timeout: float = 30.0) -> int:
    text = wait_until(lambda: path.exists() and path.read_text().strip(), timeout)
    assert text, f"{path} was not written"
    return int(text)


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def our_zombie(pid: int) -> bool:
    try:
        process = psutil.Process(pid)
        return process.ppid() == os.getpid() and process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Launched:
    """Groups of launched programs a test must kill itself (they outlive every call)."""

    def __init__(self) -> None:
        self.groups: list[int] = []

    def track(self, pid: int) -> int:
        self.groups.append(pid)
        return pid

    def kill_all(self) -> None:
        for pgid in self.groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        left = wait_until(lambda: not any(alive(pgid) for pgid in self.groups))
        assert left, f"launched programs survived: {self.groups}"


@pytest.fixture
def launched() -> Iterator[Launched]:
    tracker = Launched()
    try:
        yield tracker
    finally:
        tracker.kill_all()


class Events:
    """A thread-safe sink: launched programs report from the launcher's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[ToolLogEvent] = []

    def __call__(self, event: ToolLogEvent) -> None:
        with self._lock:
            self._events.append(event)

    @property
    def events(self) -> list[ToolLogEvent]:
        with self._lock:
            return list(self._events)

    def wait_ended(self, timeout: float = 30.0) -> list[ToolLogEvent]:
        ended = wait_until(lambda: any(isinstance(e, ProgramEnded) for e in self.events), timeout)
        assert ended, f"no end reported: {self.events}"
        return self.events


def human_tool(kind: str, command: str, *args: str, **extra: Any) -> dict[str, Any]:
    return {
        "description": "A tool.",
        "kind": kind,
        "command": command,
        "args": list(args),
        **extra,
    }


def fx_h(root: Path, tools: dict[str, Any], **extra: Any) -> Path:
    """FX-H: Artifact ``a`` at ``root`` with the Human eval ``check`` and ``tools``."""
    declare(
        root,
        {"name": "a", "views": {"human_tools": tools}, "evals": {"check": HUMAN_EVAL}, **extra},
    )
    return root


def ports(environment: Any = None, **extra: Any) -> HumanToolPorts:
    """The Human tool ports the real composition root builds (its desktop opener and its
    way to start artifactize itself included), with a test's own environment or opener."""
    built: HumanToolPorts = Container().human_tool_ports()
    if environment is not None:
        extra["environment"] = environment
    return replace(built, **extra)


def registry(root: Path, eval_id: str = "a/check", **extra: Any) -> HumanToolRegistry:
    workspace = ConfigService(PosixFilesystem()).load(str(root))
    return HumanToolRegistry.for_eval(workspace, eval_id, ports(**extra))


async def call(root: Path, name: str, **extra: Any) -> HumanToolResult:
    return await registry(root).call(name, **extra)


def texts(result: HumanToolResult) -> list[str]:
    return [str(block["text"]) for block in result.content]


# --- J. Human tools (HUM-*) ----------------------------------------------------------------------


async def test_HUM_01_launch_hands_off_immediately(tmp_path: Path, launched: Launched):
    # The program cannot finish before the test lets it (the go file), so "the call returned
    # while it still runs" is an observed fact, not a race against a 1 s sleep under load.
    W = fx_h(tmp_path / "W", {"open_app": human_tool(
        "launch", "sh", "-c",
        "echo $$ > pid; while [ ! -e go ]; do sleep 0.05; done; touch launched-done",
    )})  # fmt: skip
    result = await call(W, "open_app_a")
    assert result.to_json() == LAUNCHED
    pid = launched.track(read_pid(W / "pid"))
    assert alive(pid) and not (W / "launched-done").exists()  # still running after the call
    (W / "go").touch()
    assert wait_until(lambda: (W / "launched-done").exists(), LAUNCHED_WAIT_SECONDS)


async def test_HUM_02_launch_spawn_failure(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"open_app": human_tool("launch", "no-such-program-xyz")})
    assert (await call(W, "open_app_a")).to_json() == {
        "content": [{"type": "text", "text": "Human tool could not be launched."}],
        "isError": True,
    }


async def test_HUM_03_output_blocks(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"show": human_tool(
        "output", "sh", "-c", "printf out; printf err >&2"
    )})  # fmt: skip
    assert (await call(W, "show_a")).to_json() == {
        "content": [{"type": "text", "text": "out"}, {"type": "text", "text": "stderr:\nerr"}],
        "isError": False,
    }


async def test_HUM_04_nonzero_exit(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"show": human_tool("output", "sh", "-c", "printf x; exit 3")})
    result = await call(W, "show_a")
    assert result.is_error
    assert texts(result) == ["Human tool exited unsuccessfully (exit status: 3).\nx"]


async def test_a_signal_exit_names_the_signal(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"show": human_tool("output", "sh", "-c", "printf x; kill -9 $$")})
    result = await call(W, "show_a")
    assert result.is_error and texts(result) == ["Human tool exited unsuccessfully (signal: 9).\nx"]


async def test_HUM_05_real_environment_no_isolation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("ARTIFACTIZE_FOO", "bar")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "reviewer-tmp"))
    W = fx_h(tmp_path / "W", {"env": human_tool(
        "output", "sh", "-c",
        'printf "%s|%s|%s|%s|%s" "$SECRET_TOKEN" "$HOME" "$ARTIFACTIZE_FOO" "$TMPDIR" "$(pwd)"',
    )})  # fmt: skip
    before = entries_under(tmp_path)
    result = await call(W, "env_a")
    assert texts(result) == [f"hunter2|{os.environ['HOME']}|bar|{tmp_path / 'reviewer-tmp'}|{W}"]
    assert entries_under(tmp_path) == before  # no private directory was created


async def test_HUM_06_scope_placeholders(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"paths": human_tool(
        "output", "printf", "%s\n", "{artifactPath}/notes.md", "--file={artifactPath}/notes.md"
    )})  # fmt: skip
    write(W / "notes.md", "n")
    assert texts(await call(W, "paths_a")) == [f"{W}/notes.md\n--file={W}/notes.md\n"]


async def test_HUM_08_output_timeout_and_truncation(tmp_path: Path):
    W = fx_h(tmp_path / "W", {
        "slow": human_tool("output", "sh", "-c", f"sleep {SLOW_SECONDS}", timeout_ms=200),
        "loud": human_tool("output", "sh", "-c", "head -c 200000 /dev/zero | tr '\\0' a"),
    })  # fmt: skip
    started = time.monotonic()
    slow = await call(W, "slow_a")
    assert slow.to_json() == {
        "content": [{"type": "text", "text": "Human tool timed out."}],
        "isError": True,
    }
    assert time.monotonic() - started < SLOW_SECONDS / 2  # the sleep was cut, not waited out
    loud = await call(W, "loud_a")
    (text,) = texts(loud)
    assert not loud.is_error
    assert text.endswith(MARKER) and len(text.encode("utf-8")) <= 65536
    assert set(text.removesuffix(MARKER)) == {"a"}


async def test_HUM_09_file_artifact_artifact_path(tmp_path: Path):
    W = tmp_path / "W"
    write(W / "sub" / "doc.md", "# Doc\n")
    declare(W / "sub" / "doc.md.artf", {
        "name": "doc",
        "views": {"human_tools": {
            "where": human_tool("output", "sh", "-c", 'printf "%s|%s" "$1" "$(pwd)"', "x",
                                "{artifactPath}"),
        }},
        "evals": {"check": HUMAN_EVAL},
    })  # fmt: skip
    result = await registry(W, "doc/check").call("where_doc")
    assert texts(result) == [f"{W}/sub/doc.md|{W}/sub"]
    declare(W / "sub" / "doc.md.artf", {
        "name": "doc",
        "views": {"human_tools": {"below": human_tool("output", "cat", "{artifactPath}/x")}},
    })  # fmt: skip
    with pytest.raises(ConfigError, match="no /path suffix"):
        ConfigService(PosixFilesystem()).load(str(W))


async def test_output_lines_reach_the_sink_while_the_tool_runs(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"talk": human_tool(
        "output", "sh", "-c", "echo first; echo oops >&2; while [ ! -e go ]; do sleep 0.02; done; printf last"
    )})  # fmt: skip
    sink = Events()

    async def release_when_first_line_shown() -> None:
        while OutputLine("stdout", "first") not in sink.events:
            await anyio.sleep(0.02)
        (W / "go").touch()  # the tool finishes only once its first line was seen

    async with anyio.create_task_group() as group:
        group.start_soon(release_when_first_line_shown)
        with anyio.fail_after(10):
            result = await call(W, "talk_a", on_line=sink)
    assert texts(result) == ["first\nlast", "stderr:\noops\n"]
    events = sink.events
    assert events[-1] == ProgramEnded(0, None)
    assert [e for e in events if isinstance(e, OutputLine) and e.stream == "stdout"] == [
        OutputLine("stdout", "first"),
        OutputLine("stdout", "last"),
    ]
    assert OutputLine("stderr", "oops") in events


# --- process-group cleanup -----------------------------------------------------------------------


async def test_a_timeout_kills_a_grandchild_that_ignores_sigterm(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"stubborn": human_tool(
        "output", "sh", "-c",
        "sh -c 'trap \"\" TERM; echo $$ > grandchild.pid; exec sleep 30' & wait",
        timeout_ms=500,
    )})  # fmt: skip
    result = await call(W, "stubborn_a")
    assert result.error_text == "Human tool timed out."
    grandchild = read_pid(W / "grandchild.pid")
    assert wait_until(lambda: not alive(grandchild)), "the grandchild survived the timeout"


async def test_cancelling_an_output_tool_kills_its_group(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"wait": human_tool(
        "output", "sh", "-c", "echo $$ > pid; exec sleep 30"
    )})  # fmt: skip
    token = Cancellation()

    async def cancel_when_started() -> None:
        while not (W / "pid").exists():
            await anyio.sleep(0.02)
        token.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(cancel_when_started)
        with anyio.fail_after(10):
            result = await call(W, "wait_a", cancellation=token)
    assert result.error_text == "Human tool call was cancelled."
    assert wait_until(lambda: not alive(read_pid(W / "pid")))


async def test_an_abandoned_call_kills_its_group(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"wait": human_tool(
        "output", "sh", "-c", "echo $$ > pid; exec sleep 30"
    )})  # fmt: skip
    with anyio.move_on_after(1):
        await call(W, "wait_a")
    assert wait_until(lambda: not alive(read_pid(W / "pid")))


# --- launch handoff ------------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
async def test_a_launch_gets_its_own_session_and_no_stdio(tmp_path: Path, launched: Launched):
    W = fx_h(tmp_path / "W", {"app": human_tool(
        "launch", "sh", "-c", "echo $$ > pid; exec sleep 30"
    )})  # fmt: skip
    assert (await call(W, "app_a")).to_json() == LAUNCHED
    pid = launched.track(read_pid(W / "pid"))
    assert os.getsid(pid) == pid and os.getpgid(pid) == pid
    assert os.getsid(pid) != os.getsid(0)
    for fd in (0, 1, 2):
        assert os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/null"


async def test_a_launched_program_that_exits_is_not_our_zombie(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"quick": human_tool("launch", "sh", "-c", "echo $$ > pid")})
    assert (await call(W, "quick_a")).to_json() == LAUNCHED
    pid = read_pid(W / "pid")
    assert wait_until(lambda: not our_zombie(pid) and not alive(pid)), "left a zombie"


async def test_a_later_failure_does_not_undo_the_handoff(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"fails": human_tool("launch", "sh", "-c", "exit 7")})
    assert (await call(W, "fails_a")).to_json() == LAUNCHED


async def test_a_timeout_does_not_limit_a_launched_program(tmp_path: Path, launched: Launched):
    W = fx_h(tmp_path / "W", {"app": human_tool(
        "launch", "sh", "-c", "echo $$ > pid; sleep 0.6; touch done", timeout_ms=100
    )})  # fmt: skip
    assert (await call(W, "app_a")).to_json() == LAUNCHED
    launched.track(read_pid(W / "pid"))
    assert wait_until(lambda: (W / "done").exists())


async def test_a_launch_with_a_sink_drains_its_lines_and_reports_the_exit(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"talk": human_tool(
        "launch", "sh", "-c", "echo out; echo err >&2; printf tail; exit 3"
    )})  # fmt: skip
    sink = Events()
    assert (await call(W, "talk_a", on_line=sink)).to_json() == LAUNCHED
    events = sink.wait_ended()
    assert events[-1] == ProgramEnded(3, None)
    lines = [e for e in events if isinstance(e, OutputLine)]
    assert [e for e in lines if e.stream == "stdout"] == [
        OutputLine("stdout", "out"),
        OutputLine("stdout", "tail"),
    ]
    assert [e for e in lines if e.stream == "stderr"] == [OutputLine("stderr", "err")]


async def test_a_launch_keeps_draining_a_large_output(tmp_path: Path):
    """More than a pipe buffer, so a program whose output nobody reads would block."""
    W = fx_h(tmp_path / "W", {"big": human_tool(
        "launch", "sh", "-c", "head -c 300000 /dev/zero | tr '\\0' 'b'; echo"
    )})  # fmt: skip
    sink = Events()
    await call(W, "big_a", on_line=sink)
    events = sink.wait_ended()
    assert events[-1] == ProgramEnded(0, None)
    shown = sum(len(e.text) for e in events if isinstance(e, OutputLine))
    assert shown == 300000


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
async def test_a_launched_program_ignores_sigpipe(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"mask": human_tool(
        "launch", "sh", "-c", "grep SigIgn /proc/$$/status"
    )})  # fmt: skip
    sink = Events()
    await call(W, "mask_a", on_line=sink)
    (line,) = [e for e in sink.wait_ended() if isinstance(e, OutputLine)]
    mask = int(line.text.split()[1], 16)
    assert mask & SIGPIPE_BIT, line.text


async def test_open_hands_the_target_to_the_desktop_opener(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    bin_dir = tmp_path / "bin"
    opener = write(bin_dir / "xdg-open", '#!/bin/sh\nprintf "%s\\n" "$@" > "$OPENED_LOG"\n')
    opener.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("OPENED_LOG", str(tmp_path / "opened"))
    W = fx_h(tmp_path / "W", {
        "page": {"builtin": "open", "args": ["{artifactPath}/notes.md"]},
        "link": {"builtin": "open", "args": ["link.md"]},
    })  # fmt: skip
    write(W / "notes.md", "n")
    (W / "link.md").symlink_to("notes.md")
    assert (await call(W, "page_a")).to_json() == LAUNCHED
    assert wait_until(lambda: (tmp_path / "opened").exists() and (tmp_path / "opened").read_text())
    assert (tmp_path / "opened").read_text() == f"{W}/notes.md\n"
    refused = await call(W, "link_a")
    assert refused.error_text == (
        "Human tool preparation failed: Artifact symlinks are not supported."
    )


async def test_graph_launches_a_viewer_whose_output_reaches_the_sink(tmp_path: Path):
    W = fx_h(tmp_path / "W", {"map": {"builtin": "graph", "args": []}})
    sink = Events()
    assert (await call(W, "map_a", on_line=sink)).to_json() == LAUNCHED
    events = sink.wait_ended(timeout=30)
    assert events[-1] == ProgramEnded(0, None)
    text = "\n".join(e.text for e in events if isinstance(e, OutputLine))
    assert "a" in text and "check" in text


async def test_human_built_ins_print_text(tmp_path: Path):
    W = fx_h(tmp_path / "W", {
        "guide": {"builtin": "read", "args": ["guide.md"]},
        "part": {"builtin": "section", "args": ["guide.md", "Two"]},
        "files": {"builtin": "list", "args": ["{artifactPath}"]},
    })  # fmt: skip
    write(W / "guide.md", "# One\nfirst\n# Two\nsecond\n")
    write(W / "pics" / "x.png", b"")
    assert texts(await call(W, "guide_a")) == ["# One\nfirst\n# Two\nsecond\n"]
    assert texts(await call(W, "part_a")) == ["# Two\nsecond\n"]
    assert texts(await call(W, "files_a")) == ["guide.md\nindex.artf\npics/\n"]


# --- file targets --------------------------------------------------------------------------------


async def test_a_file_target_swapped_for_a_symlink_runs_nothing(tmp_path: Path):
    W = tmp_path / "W"
    write(W / "doc.md", "# Doc\n")
    write(W / "real.md", "# Real\n")
    declare(W / "doc.md.artf", {
        "name": "doc",
        "views": {"human_tools": {
            "touch": human_tool("output", "sh", "-c", "touch ran"),
            "app": human_tool("launch", "sh", "-c", "touch launched"),
            "show": {"builtin": "read", "args": ["{artifactPath}"]},
        }},
        "evals": {"check": HUMAN_EVAL},
    })  # fmt: skip
    tools = registry(W, "doc/check")
    assert texts(await tools.call("show_doc")) == ["# Doc\n"]
    (W / "doc.md").unlink()
    (W / "doc.md").symlink_to("real.md")
    for name in ("touch_doc", "app_doc", "show_doc"):
        result = await tools.call(name)
        assert result.error_text == (
            "Human tool preparation failed: File Artifact target must remain a regular file."
        ), name
    time.sleep(0.2)
    assert not (W / "ran").exists() and not (W / "launched").exists()


# --- tools check through the CLI -----------------------------------------------------------------


def run_cli(tmp_path: Path, *args: str) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    env["ARTIFACTIZE_STATE_HOME"] = str(tmp_path / "state")
    return in_process(*args, env=env)


def test_tools_check_executes_an_output_tool(tmp_path: Path):
    W = fx_h(
        tmp_path / "W", {"show": human_tool("output", "sh", "-c", "printf out; printf err >&2")}
    )
    run = run_cli(tmp_path, "--repo", str(W), "tools", "check", "--execute", "--artifact", "a",
                  "--audience", "human", "--tool", "show")  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["result"] == {
        "content": [{"type": "text", "text": "out"}, {"type": "text", "text": "stderr:\nerr"}],
        "isError": False,
    }
    assert {"stage": "execute", "tool": "show_a", "ok": True, "message": None} in report["checks"]
    assert not (tmp_path / "state").exists()


def test_tools_check_launch_survives_the_cli_with_output_disconnected(
    tmp_path: Path, launched: Launched
):
    W = fx_h(tmp_path / "W", {"app": human_tool(
        # It finishes once told to (``go``), not after a fixed sleep that a slow CLI outlasts.
        "launch", "sh", "-c",
        "echo $$ > pid; while [ ! -e go ]; do sleep 0.02; done; echo late; touch launched-done",
    )})  # fmt: skip
    run = run_cli(tmp_path, "--repo", str(W), "tools", "check", "--execute", "--eval", "a/check",
                  "--tool", "app_a")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["result"] == LAUNCHED
    pid = launched.track(read_pid(W / "pid"))
    assert alive(pid)  # the CLI has exited; the program runs on
    (W / "go").touch()
    assert wait_until(lambda: (W / "launched-done").exists())
    assert "late" not in run.stdout


def test_tools_check_executes_graph_through_the_real_root(tmp_path: Path):
    """The CLI's own Human tool ports start artifactize itself for ``graph`` (issue 23: the
    root once built them without that command, and every ``graph`` tool failed)."""
    W = fx_h(tmp_path / "W", {"map": {"builtin": "graph", "args": []}})
    run = run_cli(tmp_path, "--repo", str(W), "tools", "check", "--execute", "--eval", "a/check",
                  "--tool", "map_a")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["result"] == LAUNCHED

    def viewers() -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                line = process.cmdline()
                if str(W) in line and "graph" in line and process.status() != "zombie":
                    found.append(process)
        return found

    assert wait_until(lambda: not viewers())  # the viewer (config graph) ran and ended


def test_the_root_gives_human_tools_the_platforms_opener_and_itself() -> None:
    built = Container().human_tool_ports()
    assert built.desktop_opener == DESKTOP_OPENER
    assert built.self_command == SELF_COMMAND


def test_tools_check_preflight_resolves_human_placeholders_without_running(tmp_path: Path):
    W = fx_h(tmp_path / "W", {
        "ghost": human_tool("output", "sh", "-c", "touch ran", "{artifactPath}/ghost.md"),
        "fine": human_tool("output", "sh", "-c", "touch ran", "{artifactPath}"),
    })  # fmt: skip
    run = run_cli(tmp_path, "--repo", str(W), "tools", "check", "--artifact", "a",
                  "--audience", "human")  # fmt: skip
    assert run.returncode == 1, run.stderr
    checks = {c["tool"]: c for c in json.loads(run.stdout)["checks"]}
    assert checks["ghost_a"]["message"] == (  # issue 12: preflight problems are located
        "index.artf:2: views.human_tools.ghost: Artifact input does not exist: ghost.md"
    )
    assert checks["fine_a"]["ok"] is True
    assert not (W / "ran").exists()
