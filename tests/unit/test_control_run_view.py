"""``run_show`` and ``run_wait`` of the control surface: a Run counted by status and listed a
page at a time, so a Run of 10,000 Artifacts (14,000 requests, 3.5 MB listed whole) stays
an answer a coding agent can take."""

from __future__ import annotations

from typing import Any

from artifactize.entrypoints.mcp.control import (
    RUN_VIEW_REQUESTS_DEFAULT,
    RUN_VIEW_REQUESTS_MAX,
    run_view,
)


def run(greens: int, reds: int) -> dict[str, Any]:
    requests: list[dict[str, Any]] = [
        {"id": f"run-a-{n}", "evalId": f"m{n}/check", "status": "GREEN"} for n in range(greens)
    ]
    requests[3:3] = [
        {"id": f"run-a-red-{n}", "evalId": f"r{n}/check", "status": "RED", "result": {"n": n}}
        for n in range(reds)
    ]
    return {"id": "run-a", "status": "RED", "requests": requests}


def test_a_large_run_is_counted_whole_and_listed_a_page_at_a_time() -> None:
    big = run(RUN_VIEW_REQUESTS_MAX * 2, 2)
    view = run_view(big)
    assert view["counts"] == {"GREEN": RUN_VIEW_REQUESTS_MAX * 2, "RED": 2}
    assert view["total"] == RUN_VIEW_REQUESTS_MAX * 2 + 2
    assert len(view["requests"]) == RUN_VIEW_REQUESTS_DEFAULT
    assert [r["requestId"] for r in view["requests"][:5]] == [
        "run-a-0",
        "run-a-1",
        "run-a-2",
        "run-a-red-0",
        "run-a-red-1",
    ]  # the Run's order
    reds = run_view(big, {"status": "RED"})
    assert reds["total"] == 2 and [r["result"] for r in reds["requests"]] == [{"n": 0}, {"n": 1}]
    last = run_view(big, {"limit": RUN_VIEW_REQUESTS_MAX, "offset": RUN_VIEW_REQUESTS_MAX * 2})
    assert [r["requestId"] for r in last["requests"]] == [
        f"run-a-{RUN_VIEW_REQUESTS_MAX * 2 - 2}",
        f"run-a-{RUN_VIEW_REQUESTS_MAX * 2 - 1}",
    ]
    whole = run_view(big, {"limit": RUN_VIEW_REQUESTS_MAX})
    assert len(whole["requests"]) == RUN_VIEW_REQUESTS_MAX  # at the limit


def test_a_small_run_is_listed_whole_by_default() -> None:
    view = run_view(run(3, 1))
    assert (view["total"], len(view["requests"]), view["offset"]) == (4, 4, 0)
