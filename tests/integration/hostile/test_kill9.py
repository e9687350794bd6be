"""``kill -9`` of each kind of command that starts processes, then the next command.

Before the next command the killed CLI's group (four processes) still runs: nothing of the
CLI is left to clean up. The next command that starts a process sweeps the process-group
journal first, so afterwards none of the four survives. A killed ``verify`` also leaves its
Run RUNNING: the next reader settles it ERROR / OWNER_DIED with its request, and its
scratch folder is removed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from artifactize.adapters.sqlite.connection import CREATION_INFIX, STALE_CREATION_SECONDS
from tests.support.hostile import (
    COMMAND_KINDS,
    GROUP_CHILDREN,
    NEXT_COMMAND,
    PYTHON,
    REPO_ROOT,
    HostileRepo,
    alive,
    kill_hard,
    reap_strays,
    record_counts,
    scaled,
    survivors,
    wait_for_pids,
)
from tests.support.workspaces import toml_value as toml

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


def test_a_verdict_shown_before_a_kill_9_is_in_the_state(repo: HostileRepo) -> None:
    """An eval's settlement is held for a group commit, but shown only once written:
    ``first`` settles GREEN and is shown when ``second``'s claim wrote it; ``second`` then
    kills its own ``verify`` with SIGKILL. The verdict that was shown is in the state (the
    next ``verify`` reuses it, running nothing), and the killed Run settles on the next
    read with ``second``, whose held RUNNING save may never have been written."""
    folder = repo.path / "pair"
    folder.mkdir()
    kill_parent = "import os, signal; os.kill(os.getppid(), signal.SIGKILL)"
    (folder / "index.artf").write_text(
        'name = "pair"\n'
        '[evals.first]\ntitle = "first"\n'
        f'profile = {{ kind = "runtime", command = {toml(PYTHON)}, args = ["-S", "-c", ""] }}\n'
        'payload.instruction = "Run."\n'
        '[evals.second]\ntitle = "second"\n'
        f'profile = {{ kind = "runtime", command = {toml(PYTHON)}, '
        f"args = {toml(['-S', '-c', kill_parent])} }}\n"
        'payload.instruction = "Run."\n',
        "utf-8",
    )
    killed = repo.run("verify", "pair", "--jobs", "1")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    shown = [line for line in killed.stderr.splitlines() if "pair/first [" in line]
    assert len(shown) == 1 and ": GREEN" in shown[0], killed.stderr
    again = repo.run("--json", "verify", "pair/first")
    assert again.returncode == 4, again.stderr  # pair/second is an unmet obligation
    (request,) = json.loads(again.stdout)["requests"]
    assert (request["status"], request["source"]["kind"]) == ("GREEN", "cache"), request
    runs = json.loads(repo.run("--json", "run", "list").stdout)
    dead = json.loads(repo.run("--json", "run", "show", runs[-1]["id"]).stdout)
    statuses = {r["evalId"]: (r["status"], r["errorCode"]) for r in dead["requests"]}
    assert (dead["status"], statuses) == (
        "ERROR",
        {"pair/first": ("GREEN", None), "pair/second": ("ERROR", "OWNER_DIED")},
    )


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
            for read in (listed, after):
                if read.returncode != 0 or "Traceback" in read.stderr:
                    problems.append(
                        f"{' '.join(read.args[-3:])} failed ({read.returncode}): "
                        f"{read.stdout}{read.stderr}"
                    )
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


# A first command that creates the state, held after the new file's schema is committed and
# before it takes the state's name: where a kill -9 once left a 0-byte ``state.sqlite``.
HELD_CREATION = """
import sys, time
from artifactize.adapters.sqlite import connection

real = connection.initialize

def held(*args, **kwargs):
    found = real(*args, **kwargs)
    print("held", flush=True)
    time.sleep(600)
    return found

connection.initialize = held
connection.create_state_file(sys.argv[1])
"""


def test_a_first_command_killed_while_it_creates_the_state_leaves_none(
    repo: HostileRepo,
) -> None:
    """Its file is made whole under a name of its own, then linked in place: killed first,
    there is no state (the next command reads none, a ``verify`` makes one), not an empty
    file every later command refuses as damaged; what it left is removed by a creation
    ``STALE_CREATION_SECONDS`` later."""
    repo.state.mkdir(mode=0o700)
    database = repo.state / "state.sqlite"
    creator = subprocess.Popen(
        [sys.executable, "-c", HELD_CREATION, str(database)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert creator.stdout is not None and creator.stdout.readline() == "held\n"
    finally:
        kill_hard(creator)
    left = sorted(p.name for p in repo.state.iterdir())
    assert left and all(name.startswith(f"state.sqlite{CREATION_INFIX}") for name in left)
    listed = repo.run("--json", "run", "list")
    assert (listed.returncode, json.loads(listed.stdout)) == (0, [])
    assert not database.exists()
    aged = time.time() - STALE_CREATION_SECONDS - 1
    for name in left:
        os.utime(repo.state / name, (aged, aged))
    (repo.path / "quick").mkdir()
    (repo.path / "quick" / "index.artf").write_text(
        'name = "quick"\n[evals.ok]\ntitle = "ok"\n'
        f'profile = {{ kind = "runtime", command = {toml(PYTHON)}, args = ["-S", "-c", ""] }}\n'
        'payload.instruction = "Run."\n',
        "utf-8",
    )
    made = repo.run("--json", "verify", "quick/ok")
    assert made.returncode == 0, made.stdout + made.stderr
    files = {p.name for p in repo.state.iterdir()}
    assert "state.sqlite" in files and not [n for n in files if CREATION_INFIX in n], files
