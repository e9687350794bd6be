"""Process checks: live members of a process group, recorded spawns, and module-wide
"nothing left behind" guards (child processes, temporary files, open descriptors)."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psutil
import pytest

from artifactize.adapters.posix import process_group
from artifactize.ports.process import ProcessSpec


def live_group_members(pgid: int) -> list[int]:
    """Pids of processes in group ``pgid`` that are not zombies (those wait for init)."""
    members = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return members


def wait_group_gone(pgid: int, timeout: float = 30.0) -> list[int]:
    """Poll until group ``pgid`` has no live member; SIGKILLed processes die asynchronously.

    The bound is generous: it is only waited out when a member survives (a failing test).
    """
    deadline = time.monotonic() + timeout
    while True:
        members = live_group_members(pgid)
        if not members or time.monotonic() > deadline:
            return members
        time.sleep(0.01)


def record_spawns(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the pid of every leader the POSIX process adapters spawn from now on."""
    pids: list[int] = []
    real_spawn = process_group.spawn

    def recording_spawn(spec: ProcessSpec) -> Any:
        popen = real_spawn(spec)
        pids.append(popen.pid)
        return popen

    monkeypatch.setattr(process_group, "spawn", recording_spawn)
    return pids


def children_left(me: psutil.Process, before: set[int], grace: float) -> list[psutil.Process]:
    """Children of ``me`` not in ``before``, after waiting up to ``grace`` seconds for them."""
    deadline = time.monotonic() + grace
    left = [p for p in me.children(recursive=True) if p.pid not in before]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in me.children(recursive=True) if p.pid not in before and p.is_running()]
    return left


@contextmanager
def no_process_left_behind(grace: float = 2) -> Iterator[None]:
    """No child process started inside the block survives it (by ``grace`` seconds)."""
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    left = children_left(me, before, grace)
    assert not left, f"processes left behind: {left}"


@contextmanager
def nothing_left_behind(
    tmp_path_factory: pytest.TempPathFactory, grace: float = 0
) -> Iterator[None]:
    """No child process survives the block (by ``grace`` seconds), and our code leaves no
    directory in the system temp dir. The temp dir our code sees (``tempfile.gettempdir()``)
    is redirected to a fresh directory for the block, so concurrent runs cannot blur the check.
    """
    tmp_path_factory.getbasetemp()  # pytest's own temp root stays where it is
    me = psutil.Process()
    children_before = {p.pid for p in me.children(recursive=True)}
    system_temp = tempfile.mkdtemp(prefix="artifactize-system-temp-")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", system_temp)
        yield
    left_in_temp = os.listdir(system_temp)
    shutil.rmtree(system_temp)
    left = children_left(me, children_before, grace)
    assert not left, f"processes left behind: {left}"
    assert left_in_temp == [], f"left in the system temp dir: {left_in_temp}"


Descriptor = tuple[int, int, int]
"""A descriptor by number and what it opens (device, inode): a number closed by someone
else and given again to a new file is a new descriptor."""


def open_descriptors() -> frozenset[Descriptor]:
    """Descriptors open now, taken once garbage is collected: an earlier test in the same
    worker may leave a file in a reference cycle (an in-process command's SQLite connections
    are closed by the collector)."""
    gc.collect()
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            status = os.fstat(int(name))
        except OSError:  # the listing's own descriptor, closed by now
            continue
        found.add((int(name), status.st_dev, status.st_ino))
    return frozenset(found)


def descriptors_opened_since(before: frozenset[Descriptor]) -> set[Descriptor]:
    """Descriptors open now that were not open at ``before``. Only new ones count: one that
    an earlier test left behind may close meanwhile (an idle worker thread of anyio ends
    after 10 s and its thread's SQLite connections close with it: 30 descriptors gone in one
    CI run), which is neither a leak nor the measured code's doing."""
    return set(open_descriptors() - before)


def descriptors_under(prefix: str) -> list[str]:
    """Targets of our open descriptors that lie under ``prefix``."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(prefix):
            found.append(target)
    return found


@contextmanager
def nothing_left_in_test_trees(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No child process, no temporary file, no descriptor into the test trees afterwards.

    The temporary directory is redirected to an empty sentinel for the block (``tempfile``
    and ``$TMPDIR``), so anything created there is seen.
    """
    sentinel = tmp_path_factory.mktemp("tempdir-sentinel")
    base = os.path.realpath(tmp_path_factory.getbasetemp())
    saved_tempdir, saved_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = str(sentinel)
    os.environ["TMPDIR"] = str(sentinel)
    children_before = {p.pid for p in psutil.Process().children(recursive=True)}
    try:
        yield
    finally:
        tempfile.tempdir = saved_tempdir
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
    left = [
        (p.pid, p.name())
        for p in psutil.Process().children(recursive=True)
        if p.pid not in children_before
    ]
    assert left == [], f"child processes left behind: {left}"
    assert list(sentinel.iterdir()) == [], "temporary files left behind"
    # A store another test of this worker opened and dropped without closing is unreachable
    # but may sit in a reference cycle (SQLAlchemy engines do) with its pooled connection
    # still open until the collector runs: collect first, so only what is still held counts.
    gc.collect()
    leaked = descriptors_under(base)
    assert leaked == [], f"descriptors left open in the test trees: {leaked}"


def python_output_unless_blocked(code: str, *args: str, what: str) -> tuple[int, str]:
    """Run ``code`` in a child Python (``args`` as its ``sys.argv[1:]``): its exit code and
    stdout. A child that has not ended within 60 s is killed and the test fails with ``what``
    blocked (for code that could block for good, such as opening a FIFO no one writes)."""
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)
    try:
        out, _ = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail(f"{what} blocked")
    return child.returncode, out
