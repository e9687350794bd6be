"""``artifactize prune`` end to end: the real CLI, real files, real SQLite.

A generated repository (20 Artifacts, runtime evals running ``true``, Agent and Human
evals that only reuse): three Runs, then ``prune --keep 1``. The newest Run stays, the
others go with their requests and scratch folders, and a following ``verify`` still
reuses every verdict (nothing executes); ``--dry-run`` changes nothing; a Run with a
request waiting for a person is never removed; a bad argument exits 2 with one line.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench.scale import generate
from tests.support.scale_repo import REUSE_ONLY, run_json


def _count(state: Path, table: str) -> int:
    with sqlite3.connect(state / "state.sqlite") as connection:
        return int(connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    repo, state = tmp_path / "repo", tmp_path / "state"
    generate(repo, 20)
    ids = []
    for _ in range(3):
        code, run = run_json(repo, state, "verify", "--all", "--jobs", "2", *REUSE_ONLY)
        assert code in (0, 4), run
        ids.append(run["id"])
    return repo, state, ids


def test_prune_keeps_the_newest_runs_and_every_reusable_verdict(
    filled: tuple[Path, Path, list[str]],
) -> None:
    repo, state, ids = filled
    _, dry = run_json(repo, state, "prune", "--keep", "1", "--dry-run")
    assert dry["dryRun"] and sorted(dry["runs"]) == sorted(ids[:2])
    assert _count(state, "runs") == 3  # a dry run changes nothing
    code, done = run_json(repo, state, "prune", "--keep", "1")
    assert code == 0
    assert {k: done[k] for k in ("runs", "requests")} == {
        "runs": dry["runs"],
        "requests": dry["requests"],
    }
    assert done["requests"] > 0
    assert _count(state, "runs") == 1
    assert not any((state / "runs" / run_id).exists() for run_id in ids[:2])
    _, listed = run_json(repo, state, "run", "list")
    assert [r["id"] for r in listed] == [ids[2]]
    _, shown = run_json(repo, state, "run", "show", ids[2])
    statuses = [r["status"] for r in shown["requests"]]
    assert listed[0]["counts"] == {s: statuses.count(s) for s in set(statuses)}
    code, again = run_json(repo, state, "verify", "--all", *REUSE_ONLY)
    assert code in (0, 4)
    assert again["summary"]["executed"]["total"] == 0
    assert again["summary"]["reused"]["runtime"] > 0


def test_prune_before_a_date_and_nothing_older(filled: tuple[Path, Path, list[str]]) -> None:
    repo, state, _ = filled
    code, done = run_json(repo, state, "prune", "--before", "2000-01-01")
    assert code == 0 and done["runs"] == []
    code, done = run_json(repo, state, "prune", "--before", "2999-01-01T00:00:00Z")
    assert code == 0 and len(done["runs"]) == 3
    assert _count(state, "requests") == 0


def test_a_run_with_a_request_waiting_for_a_person_is_kept(tmp_path: Path) -> None:
    repo, state = tmp_path / "repo", tmp_path / "state"
    generate(repo, 4)  # m00001 has a Human eval; it consumes m00000
    code, run = run_json(
        repo, state, "verify", "--artifacts", "m00000,m00001", "--reuse-only", "agent"
    )
    assert code == 4
    assert {r["evalId"]: r["status"] for r in run["requests"]}["m00001/signoff"] == "WAITING_HUMAN"
    code, done = run_json(repo, state, "prune", "--keep", "0")
    assert code == 0
    assert done["runs"] == [] and done["keptLive"] == [run["id"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "prune needs --before DATE, --keep N, or both."),
        (("--keep", "-1"), "--keep takes a number of Runs, 0 or more, got -1."),
        (("--before", "yesterday"), "--before takes a date"),
        (("--before", "2026-01-31T12:00:00"), "--before takes a date"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    code, answer = run_json(tmp_path, tmp_path / "state", "prune", *args)
    assert code == 2
    assert answer["error"].startswith(message)
