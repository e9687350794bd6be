"""``kill -9`` of each kind of command that starts processes, then the next command.

Before the next command the killed CLI's group (four processes) still runs: nothing of the
CLI is left to clean up. The next command that starts a process sweeps the process-group
journal first, so afterwards none of the four survives. A killed ``verify`` also leaves its
Run RUNNING: the next reader settles it ERROR / OWNER_DIED with its request, and its
scratch folder is removed.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from tests.support.hostile import (
    COMMAND_KINDS,
    GROUP_CHILDREN,
    NEXT_COMMAND,
    HostileRepo,
    alive,
    kill_hard,
    reap_strays,
    record_counts,
    scaled,
    survivors,
    wait_for_pids,
)

pytestmark = pytest.mark.process  # kill -9

RANDOM_KILLS = 3
KILL_WITHIN_SECONDS = 3.0


@pytest.fixture
def repo(tmp_path: Path) -> HostileRepo:
    return HostileRepo(tmp_path)


@pytest.mark.parametrize("kind", list(COMMAND_KINDS))
def test_no_survivors_once_the_next_command_started(repo: HostileRepo, kind: str) -> None:
    args, pids = COMMAND_KINDS[kind]
    for _ in range(scaled(1)):
        repo.pids(pids).unlink(missing_ok=True)
        process = repo.start(*args)
        group: list[tuple[int, float]] = []
        try:
            group = wait_for_pids(repo.pids(pids))
            assert len(group) == GROUP_CHILDREN + 1
            kill_hard(process)
            assert len(alive(group)) == GROUP_CHILDREN + 1  # the killed CLI cleaned up nothing
            after = repo.run(*NEXT_COMMAND)
            assert after.returncode == 0, after.stderr
            left = survivors(group)
            record_counts(
                "kill -9 then next command: processes (failures: survivors)", len(group), len(left)
            )
            assert left == []
        finally:
            reap_strays(group)
            if process.poll() is None:
                process.kill()
                process.communicate()


def test_a_killed_verify_settles_on_the_next_read(repo: HostileRepo) -> None:
    process = repo.start("--json", "verify", "runtime/spawn")
    group: list[tuple[int, float]] = []
    try:
        group = wait_for_pids(repo.pids("runtime"))
        kill_hard(process)
        listed = repo.run("--json", "run", "list")
        assert listed.returncode == 0, listed.stderr
        (row,) = json.loads(listed.stdout)
        assert row["status"] == "ERROR"
        shown = repo.run("--json", "run", "show", row["id"])
        run = json.loads(shown.stdout)
        assert (run["status"], run["errorCode"], run["error"]) == (
            "ERROR",
            "OWNER_DIED",
            "Run owner died.",
        )
        (request,) = run["requests"]
        assert (request["status"], request["errorCode"]) == ("ERROR", "OWNER_DIED")
        runs_folder = repo.state / "runs"
        assert not (runs_folder / row["id"]).exists()
    finally:
        reap_strays(group)
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_run_show_wait_returns_once_the_owner_is_dead(repo: HostileRepo) -> None:
    process = repo.start("--json", "verify", "runtime/spawn")
    waiting = None
    group: list[tuple[int, float]] = []
    try:
        group = wait_for_pids(repo.pids("runtime"))
        (row,) = json.loads(repo.run("--json", "run", "list").stdout)
        assert row["status"] == "RUNNING"
        waiting = repo.start("--json", "run", "show", row["id"], "--wait")  # default: 10 min
        kill_hard(process)
        out, err = waiting.communicate(timeout=60)  # well before the default timeout
        assert waiting.returncode == 2, err
        assert json.loads(out)["errorCode"] == "OWNER_DIED"
    finally:
        reap_strays(group)
        for started in (process, waiting):
            if started is not None and started.poll() is None:
                started.kill()
                started.communicate()


def test_kill_9_of_verify_at_random_points_then_read_the_state(repo: HostileRepo) -> None:
    """Killed anywhere (before its Run exists, while its group starts, while it runs), a
    ``verify`` leaves no Run RUNNING, no scratch folder and no process once the next
    command read the state and started a process."""
    seed = random.randrange(1 << 32)
    chooser = random.Random(seed)
    trials, failures = scaled(RANDOM_KILLS), []
    for trial in range(trials):
        repo.pids("runtime").unlink(missing_ok=True)
        process = repo.start("--json", "verify", "runtime/spawn")
        time.sleep(chooser.uniform(0, KILL_WITHIN_SECONDS))
        group = []
        try:
            if repo.pids("runtime").exists():
                group = wait_for_pids(repo.pids("runtime"))
            kill_hard(process)
            listed = repo.run("--json", "run", "list")
            after = repo.run(*NEXT_COMMAND)
            problems = []
            if listed.returncode != 0 or "Traceback" in listed.stderr + after.stderr:
                problems.append(f"a read failed: {listed.stderr}")
            runs = json.loads(listed.stdout) if listed.returncode == 0 else []
            problems += [f"{r['id']} is {r['status']}" for r in runs if r["status"] == "RUNNING"]
            folders = repo.state / "runs"
            if folders.exists():
                problems += [f"scratch left: {p.name}" for p in folders.iterdir()]
            problems += [f"survivor {pid}" for pid in survivors(group)]
            if problems:
                failures.append((trial, problems))
        finally:
            reap_strays(group)
            if process.poll() is None:
                process.kill()
                process.communicate()
    record_counts("kill -9 of verify at random points (failures: bad state)", trials, len(failures))
    assert failures == [], f"seed {seed}: {failures}"
