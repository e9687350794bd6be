"""An all-reused Run reads back the same through every reader (issue 25 item 3).

The reused ``verify`` writes each request once, already settled with its summary, and the
dependency evals once when settled (``summaries.summarized``), where the Run's end used to
write them a second time to add the summary. So whatever reads the state afterwards must
see exactly the Run ``verify --json`` answered: ``run show`` (and so the MCP control
surface's ``run_show``/``run_wait``, which run it), ``run list`` (the control surface's
``run_list``), ``request show`` and ``request list``, the monitor's Run list and Run
screen, the saved rows themselves, the requests waiting for a person (``request list
--waiting``: none of this Run's, so neither the web inbox nor the terminal reviewer, which
read the same rows, lists one), and the next ``verify``, which reuses the same records
again.

One repository from ``bench/scale.py``'s generator (runtime evals, Agent and Human evals
that ``--reuse-only`` settles STALE, child Artifacts, mounts, dependency evals), filled by
one ``verify``, then verified again with everything reused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.adapters.sqlite.stores import SqliteStatesOnDemand
from artifactize.entrypoints.monitor_tui.source import MonitorSource
from artifactize.kernel.document_codec import request_json
from artifactize.ports.ids import RunId
from bench.scale import ENV, REUSE_ONLY, cli, generate
from tests.support.cli import CliResult, run_cli

MODULES = 42  # two dependency evals, two child Artifacts, Agent and Human evals
RUNTIME_EVERY = 5  # a short fill: a runtime eval on every fifth module (and the library)


@dataclass
class Reused:
    repo: Path
    state: Path
    answer: CliResult  # the all-reused verify --json
    again: CliResult  # one more all-reused verify --json, after it

    def cli(self, *args: str) -> CliResult:
        done = run_cli(*cli(self.repo, self.state, "--json", *args)[3:], env=ENV, cwd=self.repo)
        assert done.code in (0, 1, 4), done.stderr[-2000:]
        return done

    @property
    def run(self) -> dict[str, Any]:
        document: dict[str, Any] = self.answer.json()
        return document


@pytest.fixture(scope="module")
def reused(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reused]:
    root = tmp_path_factory.mktemp("reused-readers")
    repo, state = root / "repo", root / "state"
    generate(repo, MODULES, runtime_every=RUNTIME_EVERY)
    found = Reused(repo, state, CliResult([], 0, "", ""), CliResult([], 0, "", ""))
    found.cli("verify", "--all", "--jobs", "2", *REUSE_ONLY)
    found.answer = found.cli("verify", "--all", *REUSE_ONLY)
    found.again = found.cli("verify", "--all", *REUSE_ONLY)
    yield found


def test_the_run_reused_everything_and_executed_nothing(reused: Reused) -> None:
    run = reused.run
    kinds = {(r["summary"]["executionSource"], r["status"]) for r in run["requests"] if r["source"]}
    assert kinds == {("cache", "GREEN"), ("derived", "GREEN")}
    stale = [r for r in run["requests"] if not r["source"]]
    assert stale and {r["status"] for r in stale} == {"STALE"}  # --reuse-only misses
    assert run["executionsStarted"] == 0
    assert run["summary"]["executed"]["total"] == 0


def test_run_show_prints_the_verify_answer_byte_for_byte(reused: Reused) -> None:
    shown = reused.cli("run", "show", reused.run["id"])
    assert shown.stdout == reused.answer.stdout


def test_the_saved_rows_are_the_answered_requests(reused: Reused) -> None:
    """Each row holds its request as answered, its summary included (no reader has to
    recompute one the Run's end did not write)."""
    store = SqliteStateStores().open(str(reused.state), create=False, read_only=True)
    assert store is not None
    try:
        rows = store.list_requests(RunId(reused.run["id"]))
    finally:
        store.close()
    saved = [json.loads(json.dumps(request_json(row.data))) for row in rows]
    assert saved == reused.run["requests"]


def test_request_show_and_request_list_read_the_same_requests(reused: Reused) -> None:
    answered = {r["id"]: r for r in reused.run["requests"]}
    listed = reused.cli("request", "list", "--run", reused.run["id"], "--limit", "1000").json()
    assert [r["id"] for r in listed] == list(answered)
    for request in listed:
        assert request["status"] == answered[request["id"]]["status"]
    derived = next(r for r in answered.values() if r["source"] and r["source"]["kind"] == "derived")
    for request in (reused.run["requests"][0], derived):
        shown = reused.cli("request", "show", request["id"]).json()
        assert {key: shown[key] for key in request} == request
        assert shown["definition"]["eval"] == reused.run["definitions"]["evals"][request["evalId"]]


def test_run_list_and_the_monitor_read_the_same_run(reused: Reused) -> None:
    run = reused.run
    listed = {row["id"]: row for row in reused.cli("run", "list").json()}
    assert listed[run["id"]]["status"] == run["status"]
    source = MonitorSource(
        lambda: SqliteStatesOnDemand().open(str(reused.state), create=False, read_only=True),
        None,
    )
    row = next(row for row in source.runs(50) if row.run_id == run["id"])
    assert (row.status, row.counts) == (run["status"], run["summary"]["counts"])
    screen = source.run(run["id"])
    assert screen is not None
    assert json.loads(json.dumps([request_json(r) for r in screen.requests])) == run["requests"]
    assert json.loads(json.dumps(screen.run))["summary"] == run["summary"]


def test_nothing_waits_for_a_person(reused: Reused) -> None:
    """The web inbox and ``request list --waiting`` list no request of the reused Run."""
    waiting = reused.cli("request", "list", "--waiting").json()
    assert [r for r in waiting if r["runId"] == reused.run["id"]] == []


def test_the_next_verify_reuses_the_same_records(reused: Reused) -> None:
    first = {r["evalId"]: r for r in reused.run["requests"]}
    again = reused.again.json()
    assert again["executionsStarted"] == 0
    for request in again["requests"]:
        before = first[request["evalId"]]
        assert request["status"] == before["status"]
        assert request["executionId"] == before["executionId"]
        if before["source"] and before["source"]["kind"] == "cache":
            assert request["source"] == before["source"]  # the same producing Run
