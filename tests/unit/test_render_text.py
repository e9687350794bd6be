"""Golden tests of the short text answers (issue 24, "Answers first"): each command prints
a few lines by default and its full document only with ``--json``; the reason of an ERROR
or a cancelled wait is in the text too."""

from __future__ import annotations

from typing import Any

from artifactize.entrypoints.cli.render import requests as render
from artifactize.entrypoints.cli.render.runs import run_show_text

CLAIM = {"requestId": "run-Ab12Cd-1", "reviewer": "alice", "claimedAt": "2026-12-06T01:00:00Z"}
REQUEST = {
    "id": "run-Ab12Cd-1",
    "runId": "run-Ab12Cd",
    "evalId": "doc/signoff",
    "status": "GREEN",
    "result": {"verdict": "GREEN", "note": "fine"},
    "reviewer": "alice",
}


def _run(**extra: Any) -> dict[str, Any]:
    return {
        "id": "run-Ab12Cd",
        "status": "GREEN",
        "summary": {
            "executed": {"total": 1, "runtime": 0, "agent": 0, "human": 1},
            "reused": {"total": 0, "runtime": 0, "agent": 0, "human": 0},
        },
        "validation": {"unmetObligations": []},
        "requests": [
            {**REQUEST, "profile": {"kind": "human"}, "source": None},
        ],
        **extra,
    }


def test_claim() -> None:
    assert render.claim_text(CLAIM, REQUEST) == (
        "Claimed run-Ab12Cd-1 (doc/signoff) as alice; submit with: "
        "artifactize request submit run-Ab12Cd-1 --verdict GREEN|RED"
    )


def test_unclaim() -> None:
    assert render.unclaim_text(CLAIM) == (
        "Released the claim of alice on run-Ab12Cd-1; it waits for a reviewer again."
    )


def test_cancel_names_the_reason_and_the_followers() -> None:
    view = {**REQUEST, "status": "CANCELLED", "reason": "not needed any more"}
    assert render.cancel_text(view, ("run-Xy-2", "run-Zz-1")) == (
        "Cancelled run-Ab12Cd-1 (doc/signoff): not needed any more.\n"
        "Also ended (waiting on it): run-Xy-2, run-Zz-1."
    )
    assert render.cancel_text(view | {"reason": None}, ()) == (
        "Cancelled run-Ab12Cd-1 (doc/signoff)."
    )


def test_submit_gives_the_verdict_then_the_runs_status() -> None:
    assert render.submit_text(REQUEST, "GREEN") == (
        "doc/signoff [run-Ab12Cd-1]: GREEN — GREEN by alice.\nRun run-Ab12Cd: GREEN."
    )
    red = {**REQUEST, "status": "RED", "result": {"verdict": "RED"}}
    assert render.submit_text(red, None) == "doc/signoff [run-Ab12Cd-1]: RED — RED by alice."


def test_run_show_text() -> None:
    assert run_show_text(_run()) == (
        "Run: run-Ab12Cd\n"
        "  doc/signoff [run-Ab12Cd-1]: GREEN\n"
        "Summary: executed 1 (runtime 0, agent 0, human 1), reused 0 (runtime 0, agent 0, "
        "human 0)\n"
        "Validation: SATISFIED\n"
        "Execution: GREEN"
    )


def test_the_reason_of_an_error_is_in_the_text() -> None:
    cancelled = _run(status="ERROR", error="Human wait cancelled.")
    assert run_show_text(cancelled).splitlines()[-1] == "Execution: ERROR — Human wait cancelled."


def test_a_near_miss_name_gets_a_suggestion() -> None:
    from artifactize.domain.project.workspace import did_you_mean

    assert did_you_mean("attrs-src/reveiw", ["attrs-src/review", "docs/read"]) == (
        "; did you mean `attrs-src/review`?"
    )
    assert did_you_mean("zzz", ["attrs-src/review"]) == ""
