"""Replayed Runs (``domain.reviews.run.replay``): an all-reused ``verify`` written again
from the plan the previous one kept. The real CLI in process, real files, real SQLite.

Every test that changes something compares what ``verify`` printed and wrote with what it
prints and writes with no plan kept (the plans removed first), with the Run's own ID,
times, wall times and owner set aside: those are each Run's own. The state and the
workspace's files are trusted by identity only when safely old (the file index's racy
rule), so the tests move the stored answers' and the file index's clocks an hour on.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.stored_answers import ANSWERS_FOLDER
from tests.integration.test_stored_answers import Repo as AnswersRepo
from tests.integration.test_stored_answers import later_ns, loads
from tests.support.cli import CliResult

__all__ = ["loads"]  # the fixture: one entry per workspace load (a replayed Run loads none)

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_ID = re.compile(r"run-[A-Za-z0-9]+")
OWN_FIELDS = ("createdAt", "completedAt", "wallMs", "owner")  # each Run's own values
EDITED = "version 2\n"


class Repo(AnswersRepo):
    """The stored answers' repository with another ``app`` (runtime evals ``ok`` and
    ``no``: ``true`` and ``false`` from PATH, ``data`` mounted), its CLI runs' clocks an
    hour on."""

    def __init__(self, root: Path, name: str = "repo") -> None:
        super().__init__(root, name)
        self.clock_ns = later_ns

    def write_app(self, *, extra: str = "") -> None:
        (self.path / "app" / "index.artf").write_text(
            'name = "app"\nmounts = { input = "data" }\n'
            '[evals.ok]\ntitle = "ok"\nprofile = { kind = "runtime", command = "true", args = [] }\n'
            'payload.instruction = "Run ok."\n'
            '[evals.no]\ntitle = "no"\n'
            'profile = { kind = "runtime", command = "false", args = [] }\n'
            'payload.instruction = "Run no."\n' + extra
        )

    def plan_file(self) -> Path | None:
        folder = self.state / ANSWERS_FOLDER
        found = sorted(folder.glob("*-verify")) if folder.is_dir() else []
        return found[0] if found else None

    def fresh(self, *args: str, env: dict[str, str] | None = None) -> CliResult:
        """What ``verify`` prints with no plan kept."""
        shutil.rmtree(self.state / ANSWERS_FOLDER, ignore_errors=True)
        return self.cli(*args, env=env)

    def twin(self) -> Path:
        """A copy of the state, without its plans: what ``verify`` computes afresh from
        the very same state."""
        twin = self.state.with_name("twin")
        shutil.rmtree(twin, ignore_errors=True)
        shutil.copytree(self.state, twin, symlinks=True)
        shutil.rmtree(twin / ANSWERS_FOLDER, ignore_errors=True)
        return twin

    def rows(self, run_id: str, state: Path | None = None) -> list[Any]:
        """The Run's row and its requests' rows, as stored (``data`` decoded)."""
        with sqlite3.connect((state or self.state) / "state.sqlite") as db:
            run = db.execute(
                "SELECT id, repo, status, data, created_at FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            requests = db.execute(
                "SELECT id, run_id, eval_id, ordinal, execution_id, status, claimed_by,"
                " claimed_at, data FROM requests WHERE run_id = ? ORDER BY ordinal",
                (run_id,),
            ).fetchall()
        data = json.loads(run[3])
        assert run[4] == data["createdAt"]  # the column the lists order Runs by
        return [[*run[:3], data], [[*row[:8], json.loads(row[8])] for row in requests]]


def _own_set_aside(value: Any) -> Any:
    """``value`` with every Run ID as ``run-ID`` and the Run's own times, wall times and
    owner dropped."""
    if isinstance(value, dict):
        return {k: _own_set_aside(v) for k, v in value.items() if k not in OWN_FIELDS}
    if isinstance(value, list):
        return [_own_set_aside(v) for v in value]
    if isinstance(value, str):
        return RUN_ID.sub("run-ID", value)
    return value


def _printed(result: CliResult) -> Any:
    """What a ``verify`` printed: its exit code, its answer and its progress lines (the
    elapsed times dropped), its own values set aside."""
    try:
        answer = json.loads(result.stdout)
    except ValueError:
        answer = result.stdout
    lines = [re.sub(r"^\[ *[0-9.]+s\] ", "", line) for line in result.stderr.splitlines()]
    return result.returncode, _own_set_aside(answer), _own_set_aside(lines)


def _outcome(result: CliResult) -> Any:
    """What a ``verify`` decided: its exit code, how many executions it started, and each
    eval's status and where its verdict came from (a Run that ran evals runs them in its
    own order, with its own execution IDs and times)."""
    document = json.loads(result.stdout)
    decided = sorted(
        (r["evalId"], r["status"], (r["source"] or {}).get("kind")) for r in document["requests"]
    )
    return result.returncode, document["executionsStarted"], decided


def _run_id(result: CliResult) -> str:
    found = RUN_ID.search(result.stdout)
    assert found is not None, result.stdout + result.stderr
    return found.group(0)


def _same_run(
    repo: Repo, one: CliResult, other: CliResult, other_state: Path | None = None
) -> None:
    """The two Runs printed and wrote the same, but for their own values (and the state
    home's path, when ``other`` ran on a twin of the state)."""
    home = str(repo.state) if other_state is None else str(other_state)

    def same_home(value: Any) -> Any:
        return json.loads(json.dumps(value).replace(home, str(repo.state)))

    assert same_home(_printed(one)) == same_home(_printed(other))
    rows = repo.rows(_run_id(one)), repo.rows(_run_id(other), other_state)
    assert same_home(_own_set_aside(rows[0])) == same_home(_own_set_aside(rows[1]))


def test_an_all_reused_verify_is_replayed_from_its_plan(tmp_path: Path, loads: list[int]) -> None:
    """The first ``verify`` runs the evals; the next reuse them all, and once the file
    index holds every digest one keeps its plan; the one after writes and prints that Run
    again with its own ID and times, without loading the workspace; ``run show`` reads it
    as it was printed."""
    repo = Repo(tmp_path)
    first = repo.cli("--json", "verify", "app")
    assert first.returncode == 1 and repo.plan_file() is None  # `no` ran: RED
    # all reused, but the files were read (their digests were not in the file index yet):
    # what was read in pieces cannot be asked again, so no plan
    assert repo.cli("--json", "verify", "app").returncode == 1 and repo.plan_file() is None
    second = repo.cli("--json", "verify", "app")
    assert second.returncode == 1 and repo.plan_file() is not None
    plan = repo.plan_file()
    assert plan is not None
    kept = plan.stat().st_ino
    loads.clear()
    third = repo.cli("--json", "verify", "app")
    assert loads == [], "a replayed Run loads no workspace"
    assert _run_id(third) != _run_id(second)
    _same_run(repo, second, third)
    assert plan.stat().st_ino == kept  # a replay keeps no new plan
    shown = repo.cli("--json", "run", "show", _run_id(third))
    assert json.loads(shown.stdout) == json.loads(third.stdout)
    document = json.loads(third.stdout)
    assert document["createdAt"] <= document["completedAt"]
    assert document["owner"]["pid"] == os.getpid()
    assert all(r["createdAt"] == document["createdAt"] for r in document["requests"])
    assert all(r["runId"] == _run_id(third) for r in document["requests"])
    listed = json.loads(repo.cli("--json", "run", "list").stdout)
    assert [run["id"] for run in listed][:2] == [_run_id(third), _run_id(second)]
    assert len(listed) == 4 and listed[-1]["id"] == _run_id(first)


@pytest.mark.parametrize("name", ["répo", "한글"], ids=["latin", "hangul"])
def test_an_answer_beyond_ascii_is_replayed_as_printed(
    tmp_path: Path, loads: list[int], name: str
) -> None:
    """The plan's answer is printed as its bytes: a repository named beyond ASCII prints
    what the computed Run printed."""
    repo = Repo(tmp_path, name)
    repo.cli("--json", "verify", "app")
    repo.cli("--json", "verify", "app")  # the file index filled
    second = repo.cli("--json", "verify", "app")
    assert repo.plan_file() is not None
    loads.clear()
    third = repo.cli("--json", "verify", "app")
    assert loads == []
    _same_run(repo, second, third)
    assert json.loads(third.stdout)["repoPath"].endswith(name)


def test_the_text_answer_and_quiet_are_replayed_as_printed(
    tmp_path: Path, loads: list[int]
) -> None:
    repo = Repo(tmp_path)
    repo.cli("verify", "app")
    repo.cli("verify", "app")  # the file index filled
    for args in (["verify", "app"], ["verify", "app", "--quiet"]):
        computed = repo.cli(*args)
        loads.clear()
        replayed = repo.cli(*args)
        assert loads == []
        _same_run(repo, computed, replayed)
        assert "reused" in replayed.stdout


def test_a_replay_marks_the_reused_records_used(tmp_path: Path) -> None:
    """Eviction keeps the records used last: a replay marks them, as a lookup does."""
    repo = Repo(tmp_path)
    for _ in range(3):
        repo.cli("--json", "verify", "app")
    assert repo.plan_file() is not None
    last_use = (  # a use noted since the last fold, else the record's own (revision 7)
        "SELECT id, coalesce(used, last_used) FROM executions"
        " LEFT JOIN record_uses ON execution_id = id"
    )
    with sqlite3.connect(repo.state / "state.sqlite") as db:
        before = dict(db.execute(last_use).fetchall())
    replayed = repo.cli("--json", "verify", "app")
    with sqlite3.connect(repo.state / "state.sqlite") as db:
        after = dict(db.execute(last_use).fetchall())
    reused = {r["executionId"] for r in json.loads(replayed.stdout)["requests"]}
    assert reused and all(after[e] > before[e] for e in reused)


def test_every_change_gives_the_run_computed_afresh(tmp_path: Path, loads: list[int]) -> None:
    """After each change the Run written and printed is the one computed afresh; then,
    unchanged, it is replayed (no workspace loaded)."""
    repo = Repo(tmp_path)
    repo.cli("--json", "verify", "app")
    repo.cli("--json", "verify", "app")  # the file index filled

    def check(*args: str, env: dict[str, str] | None = None) -> None:
        command = ["--json", "verify", "app", *args]
        twin = repo.twin()
        fresh = repo.cli(*command, env=env, state=twin)
        assert _outcome(repo.cli(*command, env=env)) == _outcome(fresh)  # kept plan or not
        printed = repo.cli(*command, env=env)  # all reused now: keeps its plan
        loads.clear()
        _same_run(repo, printed, repo.cli(*command, env=env))
        assert loads == [], "an unchanged repository is replayed"

    check()
    (repo.path / "app" / "main.txt").write_text(EDITED)  # a covered file: runs again
    check()
    (repo.path / "data" / "input.txt").write_text("the input, again\n")  # an input Artifact
    check()
    check("--reuse-only", "runtime")
    check("--recursive")
    with sqlite3.connect(repo.state / "state.sqlite") as db:  # a verdict removed
        key = db.execute("SELECT key FROM executions WHERE status = 'GREEN'").fetchone()[0]
    assert repo.cli("cache", "rm", key).returncode == 0
    check()
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "false").write_text("#!/bin/sh\nexit 0\n")  # `no` now passes, once it runs
    (shadow / "false").chmod(0o755)
    check(env={**repo.env, "PATH": f"{shadow}:{repo.env['PATH']}"})


def test_a_verdict_written_by_another_verify_is_never_replayed_over(tmp_path: Path) -> None:
    """The plan holds the history's stamp: a record another process adds (here a forced
    review of the same key) moves it, and the next ``verify`` computes the Run."""
    repo = Repo(tmp_path)
    for _ in range(3):
        repo.cli("--json", "verify", "app")
    assert repo.plan_file() is not None
    forced = repo.cli("--json", "verify", "app/ok", "--force")
    assert json.loads(forced.stdout)["executionsStarted"] == 1
    newest = {r["evalId"]: r["executionId"] for r in json.loads(forced.stdout)["requests"]}
    after = repo.cli("--json", "verify", "app")
    reused = {r["evalId"]: r["executionId"] for r in json.loads(after.stdout)["requests"]}
    assert reused["app/ok"] == newest["app/ok"]
    _same_run(repo, after, repo.fresh("--json", "verify", "app"))


def test_a_run_that_starts_or_waits_for_anything_keeps_no_plan(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.cli("--json", "verify", "app")
    asked = repo.cli("--json", "verify", "sign")  # asks a person: WAITING_HUMAN
    assert asked.returncode == 4 and repo.plan_file() is None
    assert repo.cli("--json", "verify", "sign").returncode == 4 and repo.plan_file() is None
    forced = repo.cli("--json", "verify", "app", "--force")  # runs again
    assert forced.returncode == 1 and repo.plan_file() is None


def test_ci_reports_and_a_team_store_keep_and_use_no_plan(tmp_path: Path) -> None:
    """A JUnit file, GitHub's step summary and a team store are each written or looked
    up by the whole ``verify`` alone: with any of them, a kept plan is neither used nor
    replaced."""
    repo = Repo(tmp_path)
    for _ in range(3):
        repo.cli("--json", "verify", "app")
    plan = repo.plan_file()
    assert plan is not None
    kept = plan.stat().st_ino
    junit = tmp_path / "junit.xml"
    summary = tmp_path / "summary.md"
    github = {**repo.env, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    repo.cli("--json", "verify", "app", "--junit", str(junit))
    assert junit.is_file() and plan.stat().st_ino == kept
    repo.cli("--json", "verify", "app", env=github)
    assert summary.is_file() and plan.stat().st_ino == kept
    store = {**repo.env, "ARTIFACTIZE_REMOTE": "http://127.0.0.1:9/"}
    down = repo.cli("--json", "verify", "app", env=store)
    assert "is unreachable" in down.stderr  # the store was asked
    assert plan.stat().st_ino == kept


def test_a_damaged_plan_is_not_replayed(tmp_path: Path, loads: list[int]) -> None:
    repo = Repo(tmp_path)
    for _ in range(3):
        computed = repo.cli("--json", "verify", "app")
    plan = repo.plan_file()
    assert plan is not None
    data = bytearray(plan.read_bytes())
    data[-10] ^= 1  # the answer's last bytes: the digest no longer matches
    plan.write_bytes(bytes(data))
    loads.clear()
    after = repo.cli("--json", "verify", "app")
    assert loads, "a damaged plan is computed afresh"
    _same_run(repo, computed, after)


def test_a_state_made_again_has_another_history(tmp_path: Path) -> None:
    """The stamp is the state's id and a random value: a state removed and made again
    (whose records were all lost) never matches a plan made before."""
    repo = Repo(tmp_path)
    for _ in range(3):
        repo.cli("--json", "verify", "app")
    assert repo.plan_file() is not None
    for suffix in ("", "-wal", "-shm"):
        Path(f"{repo.state / 'state.sqlite'}{suffix}").unlink(missing_ok=True)
    after = repo.cli("--json", "verify", "app")
    assert json.loads(after.stdout)["executionsStarted"] == 2  # both ran again
