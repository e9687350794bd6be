"""Run and request summaries: usage completeness, spent vs saved, executor starts."""

from __future__ import annotations

from typing import Any

from artifactize.domain.reviews.run.summaries import (
    request_summary,
    run_summary,
    run_usage,
    usage_text,
)
from artifactize.kernel.document_codec import request_from_json
from artifactize.ports.documents import Request

CREATED = "2026-01-01T00:00:00.000000000Z"
STARTED = "2026-01-01T00:00:01.000000000Z"
COMPLETED = "2026-01-01T00:00:03.500000000Z"
RUN_WALL_MS = 3500
REQUEST_WALL_MS = 3500
AGENT = {"kind": "agent", "backend": "openai", "model": "m"}
OTHER_AGENT = {"kind": "agent", "backend": "anthropic", "model": "n"}
RUNTIME = {"kind": "runtime"}
HUMAN = {"kind": "human"}


def attempt(turn: int = 1, **usage: int) -> Any:
    return {"turn": turn, "attempt": 1, "usage": usage}


def executed(
    profile: dict[str, Any], attempts: list[dict[str, Any]] | None = None, **changes: Any
) -> Request:
    """A request this Run executed, as the state store hands it over."""
    return request_from_json(_executed(profile, attempts, **changes))


def _executed(
    profile: dict[str, Any], attempts: list[dict[str, Any]] | None = None, **changes: Any
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "id": f"run-x-{changes.pop('n', 1)}",
        "status": "GREEN",
        "profile": profile,
        "requestedProfile": profile,
        "executionId": f"execution-{changes.pop('execution', 'a')}",
        "source": None,
        "usage": attempts if attempts is not None else [],
        "reusedUsage": None,
        "toolCalls": [],
        "createdAt": CREATED,
        "startedAt": STARTED,
        "completedAt": COMPLETED,
    }
    request.update(changes)
    return request


def reused(requested: dict[str, Any], original: list[dict[str, Any]], **changes: Any) -> Request:
    """A request that reused another Run's result, as the state store hands it over."""
    request = _executed(requested, None, n=changes.pop("n", 1), execution="source", startedAt=None)
    request.update(
        {
            "usage": None,
            "reusedUsage": original,
            "source": {"runId": "run-old", "requestId": "run-old-1", "kind": "cache"},
        }
    )
    request.update(changes)
    return request_from_json(request)


def summarize(*requests: Any, starts: int = 0) -> Any:
    return run_summary(list(requests), CREATED, COMPLETED, starts)


def test_all_attempts_reported_sums_each_counter_separately() -> None:
    request = executed(
        AGENT,
        [
            attempt(1, inputTokens=10, outputTokens=2, totalTokens=12),
            attempt(2, inputTokens=5, totalTokens=7, cacheReadTokens=0),
        ],
        toolCalls=[{"name": "read_doc"}, {"name": "read_doc"}, {"name": "grep"}],
    )
    summary = summarize(request, starts=1)
    assert summary["usageState"] == "reported"
    assert (summary["attempts"], summary["reportedAttempts"], summary["unreportedAttempts"]) == (
        2,
        2,
        0,
    )
    # a reported 0 stays a known 0; nothing adds input and output into one number
    assert summary["usage"] == {
        "inputTokens": 15,
        "outputTokens": 2,
        "totalTokens": 19,
        "cacheReadTokens": 0,
    }
    assert summary["toolCalls"] == {"read_doc": 2, "grep": 1}
    assert (summary["wallMs"], summary["executorStarts"]) == (RUN_WALL_MS, 1)
    assert request_summary(request)["usageState"] == "reported"


def test_partial_usage_never_turns_missing_counters_into_zero() -> None:
    request = executed(AGENT, [attempt(1, outputTokens=4), attempt(2), attempt(3, outputTokens=1)])
    summary = summarize(request)
    assert summary["usageState"] == "partial"
    assert (summary["reportedAttempts"], summary["unreportedAttempts"]) == (2, 1)
    assert summary["usage"] == {"outputTokens": 5}
    assert "inputTokens" not in summary["usage"] and "totalTokens" not in summary["usage"]


def test_unreported_agent_usage_is_not_a_known_zero() -> None:
    summary = summarize(executed(AGENT, [attempt(1), {"turn": 2, "attempt": 1, "usage": None}]))
    assert summary["usageState"] == "unreported"
    assert summary["usage"] == {}
    assert run_usage([], summary) == {"spent": {}, "saved": {}}
    assert usage_text(run_usage([], summary)) is None  # no "spent 0 tokens" line


def test_nothing_executed_is_usage_state_none() -> None:
    waiting = executed(HUMAN, None, status="WAITING_HUMAN", startedAt=None, completedAt=None)
    summary = summarize(waiting)
    assert (summary["attempts"], summary["usageState"]) == (0, "none")
    assert summary["executed"]["total"] == 0
    assert request_summary(waiting)["wallMs"] is None
    assert request_summary(waiting)["executionSource"] is None


def test_runtime_execution_counts_one_unreported_attempt() -> None:
    request = executed(RUNTIME)
    summary = summarize(request, starts=1)
    assert (summary["attempts"], summary["unreportedAttempts"]) == (1, 1)
    assert summary["usageState"] == "unreported" and summary["usage"] == {}
    own = request_summary(request)
    assert (own["attempts"], own["usageState"], own["executorStarts"]) == (1, "unreported", 1)
    assert (own["executionSource"], own["wallMs"]) == ("local", REQUEST_WALL_MS)


def test_human_request_has_no_executor_start() -> None:
    own = request_summary(executed(HUMAN, startedAt=STARTED))
    assert own["executorStarts"] == 0
    assert own["executionSource"] == "local"
    assert summarize(executed(HUMAN))["executed"]["human"] == 1


def test_reused_request_is_saved_not_spent_and_reports_no_attempts() -> None:
    original = [attempt(1, inputTokens=30, totalTokens=40), attempt(2)]
    request = reused(AGENT, original)
    summary = summarize(request)
    usage = run_usage([request], summary)
    assert usage == {"spent": {}, "saved": {"inputTokens": 30, "totalTokens": 40}}
    assert (summary["attempts"], summary["usageState"]) == (0, "none")
    assert summary["executed"]["total"] == 0 and summary["reused"]["agent"] == 1
    own = request_summary(request)
    assert (own["attempts"], own["usageState"], own["usage"]) == (0, "none", {})
    assert (own["executorStarts"], own["executionSource"]) == (0, "cache")
    assert request.reused_usage == original  # the raw source attempts stay attributed
    text = usage_text(usage)
    assert text == "Usage: spent none reported; saved inputTokens 30, totalTokens 40"


def test_spent_and_saved_are_kept_apart() -> None:
    mine = executed(AGENT, [attempt(1, totalTokens=9)], n=1)
    other = reused(AGENT, [attempt(1, totalTokens=100)], n=2)
    summary = summarize(mine, other, starts=1)
    assert run_usage([mine, other], summary) == {
        "spent": {"totalTokens": 9},
        "saved": {"totalTokens": 100},
    }
    assert summary["counts"] == {"GREEN": 2}


def test_other_profile_counts_reused_results_of_another_profile() -> None:
    same = reused(AGENT, [], n=1)
    other = reused(AGENT, [], n=2, profile=OTHER_AGENT)
    summary = summarize(same, other)
    assert summary["reused"] == {
        "total": 2,
        "runtime": 0,
        "agent": 2,
        "human": 0,
        "otherProfile": 1,
    }


def test_one_execution_is_counted_once() -> None:
    first = executed(AGENT, [attempt(1, totalTokens=5)], n=1, execution="shared")
    second = executed(AGENT, [attempt(1, totalTokens=5)], n=2, execution="shared")
    summary = summarize(first, second)
    assert summary["executed"]["total"] == 1
    assert (summary["attempts"], summary["usage"]) == (1, {"totalTokens": 5})
