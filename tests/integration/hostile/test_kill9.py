"""``kill -9`` of each kind of command that starts processes, then the next command.

Before the next command the killed CLI's group (four processes) still runs: nothing of the
CLI is left to clean up. The next command that starts a process sweeps the process-group
journal first, so afterwards none of the four survives. A killed ``verify`` also leaves its
Run RUNNING: the next reader settles it ERROR / OWNER_DIED with its request, and its
scratch folder is removed.
"""

from __future__ import annotations

import json
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
    survivors,
    wait_for_pids,
)


@pytest.fixture
def repo(tmp_path: Path) -> HostileRepo:
    return HostileRepo(tmp_path)


@pytest.mark.parametrize("kind", list(COMMAND_KINDS))
def test_no_survivors_once_the_next_command_started(repo: HostileRepo, kind: str) -> None:
    args, pids = COMMAND_KINDS[kind]
    process = repo.start(*args)
    group: list[tuple[int, float]] = []
    try:
        group = wait_for_pids(repo.pids(pids))
        assert len(group) == GROUP_CHILDREN + 1
        kill_hard(process)
        assert len(alive(group)) == GROUP_CHILDREN + 1  # the killed CLI cleaned up nothing
        after = repo.run(*NEXT_COMMAND)
        assert after.returncode == 0, after.stderr
        assert survivors(group) == []
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
