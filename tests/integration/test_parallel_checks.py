"""``adapters/posix/parallel_checks.py``: checks in forked children, for real.

Each test that forks runs its ``ForkedChecks`` in a fresh interpreter (``_run``): the
adapter forks only from a process with one thread, and pytest's own process may hold
others. What a child answered, which process answered it and what is left afterwards are
read from outside, through psutil."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import psutil
import pytest

from artifactize.adapters.posix.parallel_checks import (
    MAX_CHECK_PROCESSES,
    ForkedChecks,
    cgroup_cpu_quota,
    usable_cpus,
)
from tests.support.processes import no_process_left_behind

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX: fork")

PRELUDE = """\
import json, os, sys, time
from artifactize.adapters.posix.parallel_checks import ForkedChecks
checks = ForkedChecks()
me = os.getpid()
def all_hold(started):
    with checks.started(started) as held:
        return held()
def answered(value, note=None):
    def check():
        if note:
            with open(note, "a") as file:
                file.write(f"{os.getpid()}\\n")
        return value
    return check
"""


def _run(body: str, tmp_path: Path, timeout: float = 30) -> dict[str, Any]:
    """``body`` after ``PRELUDE`` in a fresh interpreter; it prints one JSON object."""
    script = PRELUDE + textwrap.dedent(body)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_check_runs_in_a_child_of_its_own_and_all_must_hold(tmp_path: Path) -> None:
    found = _run(
        """
        note = "pids"
        held = all_hold([answered(True, note) for _ in range(3)])
        pids = [int(line) for line in open(note)]
        false_last = all_hold([answered(True), answered(True), answered(False)])
        false_first = all_hold([answered(False), answered(True)])
        print(json.dumps({"held": held, "pids": pids, "me": me,
                          "workers": checks.workers(),
                          "false_last": false_last, "false_first": false_first,
                          "children": len(__import__("psutil").Process().children())}))
        """,
        tmp_path,
    )
    assert found["held"] is True
    assert found["false_last"] is False and found["false_first"] is False
    assert len(set(found["pids"])) == 3 and found["me"] not in found["pids"]
    assert found["workers"] == min(MAX_CHECK_PROCESSES, usable_cpus())
    assert found["children"] == 0  # each child reaped when its block ended


def test_a_child_that_raises_or_dies_counts_as_false(tmp_path: Path) -> None:
    found = _run(
        """
        def raises():
            raise OSError("a check that fails")
        def dies():
            os._exit(3)
        def killed():
            os.kill(os.getpid(), 9)
        answers = [all_hold([answered(True), bad]) for bad in (raises, dies, killed)]
        answers += [all_hold([bad, answered(True)]) for bad in (raises, dies, killed)]
        print(json.dumps({"answers": answers}))
        """,
        tmp_path,
    )
    assert found["answers"] == [False] * 6


def test_the_first_false_answer_decides_and_ends_the_children_at_once(tmp_path: Path) -> None:
    """One child answers False while another is still at work: the answer is False at once,
    the other is killed and reaped, not waited for; so are children whose block ends
    without asking, or by an exception. Meanwhile the block works in the caller."""
    found = _run(
        """
        import psutil
        def slow():
            time.sleep(60)
            return True
        def late_false():
            time.sleep(0.3)
            return False
        started = time.monotonic()
        with checks.started([slow, late_false, slow]) as held:
            during = len(psutil.Process().children())
            answer = held()
        took = time.monotonic() - started
        with checks.started([slow, slow]):
            pass  # never asked
        try:
            with checks.started([slow, slow]):
                raise LookupError("the block fails")
        except LookupError:
            pass
        print(json.dumps({"answer": answer, "took": took, "during": during,
                          "children": len(psutil.Process().children()),
                          "ended_in": time.monotonic() - started}))
        """,
        tmp_path,
    )
    assert found["answer"] is False and found["during"] == 3 and found["children"] == 0
    assert found["ended_in"] < 30  # not a child's minute


def test_a_child_leaves_when_its_caller_is_killed(tmp_path: Path) -> None:
    """SIGKILL of the caller mid-check: the child sees its lifeline end and leaves, though
    its check would run for a minute."""
    script = PRELUDE + textwrap.dedent(
        """
        def slow():
            time.sleep(60)
            return True
        with checks.started([slow, slow]):
            print("ready", flush=True)
            time.sleep(60)
        """
    )
    with no_process_left_behind(grace=5):
        caller = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path
        )
        try:
            assert caller.stdout is not None and caller.stdout.readline() == "ready\n"
            children = psutil.Process(caller.pid).children()
            assert len(children) == 2
            caller.send_signal(signal.SIGKILL)
            caller.wait(timeout=10)
            gone, alive = psutil.wait_procs(children, timeout=5)
            assert alive == [] and len(gone) == 2
        finally:
            if caller.poll() is None:
                caller.kill()
                caller.wait()


def test_with_another_thread_alive_the_checks_run_in_turn_in_the_caller(tmp_path: Path) -> None:
    """A child forked from a threaded process could inherit a lock another thread holds:
    with a second thread alive, nothing is forked."""
    found = _run(
        """
        import threading
        stop = threading.Event()
        worker = threading.Thread(target=stop.wait)
        worker.start()
        note = "pids"
        held = all_hold([answered(True, note) for _ in range(3)])
        workers = checks.workers()
        stop.set()
        worker.join()
        pids = [int(line) for line in open(note)]
        print(json.dumps({"held": held, "pids": pids, "me": me, "workers": workers}))
        """,
        tmp_path,
    )
    assert found["held"] is True and found["workers"] == 1
    assert found["pids"] == [found["me"]] * 3


def test_in_this_threaded_process_nothing_is_forked() -> None:
    """pytest's process, with a thread started here: the checks run in turn, here."""
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        pids: list[int] = []

        def check() -> bool:
            pids.append(os.getpid())
            return True

        checks = ForkedChecks()
        assert checks.workers() == 1
        with no_process_left_behind(), checks.started([check, check]) as held:
            assert pids == []  # nothing runs before it is asked for
            assert held()
        assert pids == [os.getpid()] * 2
    finally:
        stop.set()
        worker.join()


def test_a_single_check_runs_in_the_caller(tmp_path: Path) -> None:
    found = _run(
        """
        held = all_hold([answered(True, "pids")])
        print(json.dumps({"held": held, "pids": [int(line) for line in open("pids")], "me": me}))
        """,
        tmp_path,
    )
    assert found["held"] is True and found["pids"] == [found["me"]]


def test_a_stop_signal_ends_a_child_not_its_caller(tmp_path: Path) -> None:
    """A child runs with the system's stop signals: SIGTERM or SIGINT sent to it ends it
    (its answer then counts False), and the caller's own handler (here one that would
    record a stop) never runs, in the child or the caller."""
    found = _run(
        """
        import signal
        stops = []
        signal.signal(signal.SIGTERM, lambda *_: stops.append("TERM"))
        signal.signal(signal.SIGINT, lambda *_: stops.append("INT"))
        def slow():
            open(f"started-{os.getpid()}", "w").close()
            time.sleep(60)
            return True
        import glob, psutil
        answers = []
        for number in (signal.SIGTERM, signal.SIGINT):
            with checks.started([slow, slow]) as held:
                children = psutil.Process().children()
                while not all(os.path.exists(f"started-{c.pid}") for c in children):
                    time.sleep(0.01)  # both children are in their checks
                for child in children:
                    os.kill(child.pid, number)
                answers.append(held())
            for name in glob.glob("started-*"):
                os.unlink(name)
        print(json.dumps({"answers": answers, "stops": stops}))
        """,
        tmp_path,
    )
    assert found == {"answers": [False, False], "stops": []}


def test_a_fork_the_system_refuses_leaves_the_checks_to_the_caller(tmp_path: Path) -> None:
    """The second fork refused (as a process limit or an overcommit policy would): the
    child already forked is ended, every check then runs in the caller, in turn, and the
    answer is still every check's."""
    found = _run(
        """
        import errno, psutil
        real_fork, forks = os.fork, []
        def refusing_fork():
            forks.append(1)
            if len(forks) == 2:
                raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
            return real_fork()
        os.fork = refusing_fork
        note = "pids"
        with checks.started([answered(True, note) for _ in range(3)]) as held:
            children = len(psutil.Process().children())
            answer = held()
        pids = [int(line) for line in open(note)]
        os.unlink(note)
        forks.clear()
        with checks.started([answered(True, note), answered(False, note)]) as held:
            refused_false = held()
        print(json.dumps({"answer": answer, "children": children, "pids": pids, "me": me,
                          "refused_false": refused_false,
                          "left": len(psutil.Process().children())}))
        """,
        tmp_path,
    )
    assert found["answer"] is True and found["children"] == 0 and found["left"] == 0
    # every check ran in the caller (the ended child may have noted itself first)
    assert found["pids"].count(found["me"]) == 3
    assert found["refused_false"] is False


def _write(path: Path, text: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for name, value in (part.split("=") for part in text.split(";")):
        (path / name).write_text(value + "\n")


def test_a_control_groups_cpu_quota_bounds_the_workers(tmp_path: Path) -> None:
    """A container limited to N CPUs by its control group (cgroup v2 ``cpu.max``, v1
    ``cpu.cfs_quota_us``) gets at most N workers, rounded up, whatever its affinity says;
    the group's and every group above it count, the lowest wins."""
    root = tmp_path / "cgroup"
    v2 = "0::/ci/job\n"
    _write(root / "ci" / "job", "cpu.max=max 100000")
    assert cgroup_cpu_quota(v2, str(root)) is None  # "max": no quota
    _write(root / "ci" / "job", "cpu.max=100000 100000")
    assert cgroup_cpu_quota(v2, str(root)) == 1  # exactly one CPU
    _write(root / "ci" / "job", "cpu.max=100001 100000")
    assert cgroup_cpu_quota(v2, str(root)) == 2  # a little more: two
    _write(root / "ci", "cpu.max=150000 100000")
    _write(root / "ci" / "job", "cpu.max=400000 100000")
    assert cgroup_cpu_quota(v2, str(root)) == 2  # the parent's lower quota wins
    assert cgroup_cpu_quota("0::/ci/../ci/job\n", str(root)) == 2  # no name climbs out
    v1 = "4:memory:/x\n2:cpu,cpuacct:/pod\n"
    _write(root / "cpu,cpuacct" / "pod", "cpu.cfs_quota_us=-1;cpu.cfs_period_us=100000")
    assert cgroup_cpu_quota(v1, str(root)) is None  # -1: no quota
    _write(root / "cpu,cpuacct" / "pod", "cpu.cfs_quota_us=250000;cpu.cfs_period_us=100000")
    assert cgroup_cpu_quota(v1, str(root)) == 3
    assert cgroup_cpu_quota("garbage\n0::\n", str(tmp_path / "none")) is None
    assert 1 <= usable_cpus() <= len(os.sched_getaffinity(0))
