"""Hostile command tools: what a misbehaving (but trusted) tool cannot do to artifactize.

- A tool whose forked descendants ignore SIGTERM leaves no process of its group behind,
  after the deadline and after a cancellation.
- A tool that floods stdout and stderr (200 MB each) cannot grow our memory beyond the
  16 MiB capture bounds; the result is the generic error (json) or the capped text (plain).
- The caller's ``ARTIFACTIZE_*`` variables are invisible to a tool, and what a tool prints to
  stderr never reaches a result.
- An image ``path`` cannot reach outside the call's output directory (traversal, absolute
  paths elsewhere, a ``<outputDir>-other`` sibling, symlinks, FIFOs, directories), while a
  valid file below it is embedded as base64, read before the directory is removed.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from artifactize.domain.tools.commands.text_output import TEXT_BLOCK_MAX_BYTES, TRUNCATION_MARKER
from artifactize.domain.tools.registry import AgentToolRegistry
from artifactize.domain.tools.results import ToolResult
from tests.integration.test_command_tools_acceptance import (
    AGENT_EVAL,
    ANY_OBJECT,
    ECHO_TOOL,
    PY,
    TEST_PATH,
    command_tool,
    load,
    out,
    ports,
)
from tests.support.images import PNG1, b64
from tests.support.processes import live_group_members as group_members
from tests.support.processes import nothing_left_behind as nothing_left_behind_in
from tests.support.workspaces import declare

pytestmark = pytest.mark.anyio

INVALID = "Agent tool returned invalid output."
TIMED_OUT = "Agent tool timed out."
# The stubborn tool sleeps 300 s: a call ending well within that proves the deadline or the
# cancellation cut it; the bound leaves a loaded CI machine room to start and kill a group.
NOT_WAITED_OUT_SECONDS = 60
MB = 1000 * 1000


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with nothing_left_behind_in(tmp_path_factory, grace=3):
        yield


@pytest.fixture
def W(tmp_path: Path) -> Path:
    workspace = Path(os.path.realpath(tmp_path)) / "W"
    workspace.mkdir()
    return workspace


@pytest.fixture
def output_root(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "output_root"
    root.mkdir()
    (root / "retained").write_bytes(b"kept")
    return root


def only_retained(root: Path) -> None:
    assert sorted(os.listdir(root)) == ["retained"], sorted(os.listdir(root))


def registry(
    W: Path,
    script: str,
    protocol: str = "json",
    environment: dict[str, str] | None = None,
    **fields: Any,
) -> AgentToolRegistry:
    if protocol == "json":
        fields.setdefault("input_schema", ANY_OBJECT)
    declare(
        W,
        {
            "name": "a",
            "views": {"agent_tools": {"inspect": command_tool(protocol, **fields)}},
            "evals": {"review": AGENT_EVAL},
        },
    )
    (W / "tool.py").write_text(script, encoding="utf-8")
    return AgentToolRegistry.for_eval(load(W), "a/review", ports(environment))


def error_text(result: ToolResult) -> str:
    assert result.is_error, result
    assert len(result.content) == 1 and result.content[0]["type"] == "text"
    return str(result.content[0]["text"])


# --- process groups -------------------------------------------------------------------------------

# The leader and every descendant ignore SIGTERM; children fork grandchildren; all sleep.
STUBBORN_TOOL = """\
import json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
members = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        grandchild = os.fork()
        if grandchild == 0:
            time.sleep(300)
            os._exit(0)
        with open(f"part-{os.getpid()}", "w") as handle:
            handle.write(str(grandchild))
        os.rename(f"part-{os.getpid()}", f"grandchild-{os.getpid()}")
        time.sleep(300)
        os._exit(0)
    members.append(pid)
while len([n for n in os.listdir(".") if n.startswith("grandchild-")]) < 3:
    time.sleep(0.01)
for name in os.listdir("."):
    if name.startswith("grandchild-"):
        members.append(int(open(name).read()))
with open("group.tmp", "w") as handle:
    json.dump({"pgid": os.getpgrp(), "leader": os.getpid(), "members": members}, handle)
os.rename("group.tmp", "group.json")
print("started", flush=True)
time.sleep(300)
"""


def assert_group_gone(pgid: int, seconds: float = 2.0) -> None:
    deadline = time.monotonic() + seconds
    members = group_members(pgid)
    while members and time.monotonic() < deadline:
        time.sleep(0.02)
        members = group_members(pgid)
    assert not members, f"processes of group {pgid} remain: {members}"


def recorded_group(W: Path) -> dict[str, Any]:
    group: dict[str, Any] = json.loads((W / "group.json").read_text())
    assert group["pgid"] == group["leader"], "the tool leads its own process group"
    assert group["pgid"] != os.getpgrp()
    assert len(group["members"]) == 6
    return group


@pytest.mark.parametrize("protocol", ["json", "plain"])
async def test_descendants_ignoring_sigterm_are_killed_after_the_deadline(
    W: Path, output_root: Path, protocol: str
):
    # The deadline leaves the tool ample time to start its whole group, even on a busy machine.
    reg = registry(W, STUBBORN_TOOL, protocol, timeout_ms=2000)
    started = time.monotonic()
    result = await reg.call("inspect_a", {}, str(output_root))
    assert error_text(result) == TIMED_OUT
    assert time.monotonic() - started < NOT_WAITED_OUT_SECONDS
    group = recorded_group(W)
    assert_group_gone(group["pgid"])
    only_retained(output_root)


async def test_descendants_ignoring_sigterm_are_killed_after_a_cancellation(
    W: Path, output_root: Path
):
    reg = registry(W, STUBBORN_TOOL)
    results: list[ToolResult] = []
    started = time.monotonic()
    with anyio.move_on_after(30) as deadline:
        async with anyio.create_task_group() as tasks:

            async def call() -> None:
                results.append(await reg.call("inspect_a", {}, str(output_root)))

            tasks.start_soon(call)
            while not (W / "group.json").exists() and not results:
                await anyio.sleep(0.02)
            tasks.cancel_scope.cancel()
    assert not deadline.cancelled_caught, "the tool never started its group"
    assert not results, "a cancelled call returns nothing"
    assert time.monotonic() - started < NOT_WAITED_OUT_SECONDS
    assert_group_gone(recorded_group(W)["pgid"])
    only_retained(output_root)


async def test_cancellation_by_move_on_after_kills_the_group(W: Path, output_root: Path):
    reg = registry(W, STUBBORN_TOOL)
    with anyio.move_on_after(30) as scope:
        async with anyio.create_task_group() as tasks:

            async def expire_once_started() -> None:
                while not (W / "group.json").exists():
                    await anyio.sleep(0.02)
                scope.deadline = anyio.current_time()  # move_on_after fires now

            tasks.start_soon(expire_once_started)
            await reg.call("inspect_a", {}, str(output_root))
            tasks.cancel_scope.cancel()  # only reached if the call ended by itself
    assert scope.cancelled_caught
    assert_group_gone(recorded_group(W)["pgid"])
    only_retained(output_root)


# --- output floods --------------------------------------------------------------------------------

FLOOD_TOOL = """\
import os, sys, threading
chunk = b"x" * (1024 * 1024)
def flood(fd):
    for _ in range(200):
        os.write(fd, chunk)
if not sys.stdin.isatty():
    sys.stdin.buffer.read()
err = threading.Thread(target=flood, args=(2,))
err.start()
flood(1)
err.join()
"""


async def _peak_rss_growth(work: Any) -> tuple[Any, int]:
    """Run ``work()`` while sampling this process's RSS; return its result and peak growth."""
    me = psutil.Process()
    baseline = me.memory_info().rss
    peak = baseline
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, me.memory_info().rss)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = await work()
    finally:
        done.set()
        sampler.join()
    peak = max(peak, me.memory_info().rss)
    return result, peak - baseline


async def test_a_200_MB_flood_json_is_the_generic_error_and_memory_stays_bounded(
    W: Path, output_root: Path
):
    reg = registry(W, FLOOD_TOOL)
    result, growth = await _peak_rss_growth(lambda: reg.call("inspect_a", {}, str(output_root)))
    assert error_text(result) == INVALID
    assert growth < 100 * MB, f"RSS grew by {growth / MB:.0f} MB"
    only_retained(output_root)


async def test_a_200_MB_flood_plain_is_the_capped_text_and_memory_stays_bounded(
    W: Path, output_root: Path
):
    reg = registry(W, FLOOD_TOOL, "plain")
    result, growth = await _peak_rss_growth(lambda: reg.call("inspect_a", {}, str(output_root)))
    assert not result.is_error
    got = str(result.content[0]["text"])
    assert len(got.encode("utf-8")) <= TEXT_BLOCK_MAX_BYTES
    assert got == "x" * (TEXT_BLOCK_MAX_BYTES - len(TRUNCATION_MARKER)) + TRUNCATION_MARKER
    assert growth < 100 * MB, f"RSS grew by {growth / MB:.0f} MB"
    only_retained(output_root)


# --- environment and stderr -----------------------------------------------------------------------

ENV_AND_STDERR_TOOL = """\
import json, os, sys
secret = os.environ.get("SECRET_TOKEN", "no-secret")
sys.stderr.write("leaked " + secret + " " + json.dumps(dict(os.environ)))
sys.stderr.flush()
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
env = {k: v for k, v in os.environ.items() if k.startswith("ARTIFACTIZE_")}
if mode == "ok":
    print(json.dumps({"content": [{"type": "json", "data": env}]}))
elif mode == "fail":
    print(json.dumps({"content": [{"type": "text", "text": "x"}]}))
    sys.exit(3)
elif mode == "invalid":
    print("not json")
elif mode == "plain":
    print(json.dumps(env))
elif mode == "plain-fail":
    print(json.dumps(env))
    sys.exit(5)
"""


@pytest.mark.parametrize(
    ("protocol", "mode"),
    [
        ("json", "ok"),
        ("json", "fail"),
        ("json", "invalid"),
        ("plain", "plain"),
        ("plain", "plain-fail"),
    ],
)
async def test_caller_artifactize_variables_are_invisible_and_stderr_never_reaches_a_result(
    W: Path, output_root: Path, monkeypatch: pytest.MonkeyPatch, protocol: str, mode: str
):
    monkeypatch.setenv("ARTIFACTIZE_STATE_HOME", "/caller/state-home-value")
    monkeypatch.setenv("ARTIFACTIZE_OUTPUT_DIR", "/caller/output-value")
    monkeypatch.setenv("ARTIFACTIZE_API_KEY", "caller-api-key-value")
    monkeypatch.setenv("SECRET_TOKEN", "hunter2-secret-value")
    monkeypatch.setenv("PATH", TEST_PATH)
    reg = registry(W, ENV_AND_STDERR_TOOL, protocol, dict(os.environ), args=[*PY, mode])
    result = await reg.call("inspect_a", {}, str(output_root))
    dumped = json.dumps(result.to_json())
    for value in ("state-home-value", "/caller/output-value", "caller-api-key-value"):
        assert value not in dumped
    assert "hunter2-secret-value" not in dumped
    assert "leaked" not in dumped
    if mode == "ok":
        env = result.content[0]["data"]
        assert "ARTIFACTIZE_STATE_HOME" not in env
        assert "ARTIFACTIZE_API_KEY" not in env
    elif mode == "plain":
        env = json.loads(str(result.content[0]["text"]))
        assert "ARTIFACTIZE_STATE_HOME" not in env
        assert "ARTIFACTIZE_API_KEY" not in env
    else:
        assert result.is_error
    only_retained(output_root)


# --- image paths ----------------------------------------------------------------------------------


def image(path: str) -> str:
    return out({"type": "image", "mimeType": "image/png", "path": path})


ESCAPES: dict[str, dict[str, Any]] = {
    "parent-traversal": {"files": {"@outputDir@/../x.png": b64(PNG1)}, "stdout": image("../x.png")},
    "absolute-outside": {"stdout": image("@artifactPath@/valid.png")},
    "sibling-other": {
        "files": {"@outputDir@-other/x.png": b64(PNG1)},
        "stdout": image("@outputDir@-other/x.png"),
    },
    "symlink": {"symlinks": {"x.png": "@artifactPath@/valid.png"}, "stdout": image("x.png")},
    "absolute-symlink": {
        "symlinks": {"x.png": "@artifactPath@/valid.png"},
        "stdout": image("@outputDir@/x.png"),
    },
    "symlinked-dir": {"symlinks": {"d": "@artifactPath@"}, "stdout": image("d/valid.png")},
    "fifo": {"fifos": ["x.png"], "stdout": image("x.png")},
    "directory": {"dirs": ["x.png"], "stdout": image("x.png")},
    "output-dir-itself": {"stdout": image("@outputDir@")},
    "output-dir-slash": {"stdout": image("@outputDir@/")},
    "absolute-traversal": {
        "files": {"x.png": b64(PNG1)},
        "dirs": ["sub"],
        "stdout": image("@outputDir@/sub/../x.png"),
    },
    "relative-traversal-inside": {
        "files": {"x.png": b64(PNG1)},
        "dirs": ["sub"],
        "stdout": image("sub/../x.png"),
    },
}


@pytest.mark.parametrize("escape", sorted(ESCAPES))
async def test_image_path_escapes_are_invalid_output(
    tmp_path: Path, W: Path, output_root: Path, escape: str
):
    reg = registry(W, ECHO_TOOL)
    (W / "valid.png").write_bytes(PNG1)
    started = time.monotonic()
    result = await reg.call("inspect_a", ESCAPES[escape], str(output_root))
    assert error_text(result) == INVALID
    # Opening a FIFO without a writer blocks forever: a generous bound still proves it did not.
    assert time.monotonic() - started < NOT_WAITED_OUT_SECONDS, "a FIFO must not block the read"
    # The tool itself may have planted files next to its output directory: they are the
    # tool's, not ours, and the per-call directories are gone.
    leftovers = sorted(set(os.listdir(output_root)) - {"retained"})
    assert all(name == "x.png" or name.endswith("-other") for name in leftovers), leftovers
    for name in leftovers:
        planted = output_root / name
        if planted.is_dir():
            for child in planted.iterdir():
                child.unlink()
            planted.rmdir()
        else:
            planted.unlink()
    only_retained(output_root)


@pytest.mark.parametrize("path", ["shots/board.png", "@outputDir@/shots/board.png"])
async def test_valid_image_paths_are_embedded_before_the_output_dir_is_removed(
    W: Path, output_root: Path, path: str
):
    reg = registry(W, ECHO_TOOL)
    args = {
        "files": {"shots/board.png": b64(PNG1)},
        "stdout": image(path),
        "code": "open(os.path.join(os.getcwd(), 'output-dir'), 'w').write(ctx['outputDir'])",
    }
    result = await reg.call("inspect_a", args, str(output_root))
    assert result.to_json() == {
        "content": [{"type": "image", "data": b64(PNG1), "mimeType": "image/png"}]
    }
    output_dir = (W / "output-dir").read_text()
    assert not Path(output_dir).exists(), "the output directory was removed after the read"
    only_retained(output_root)
