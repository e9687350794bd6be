"""Documents are replaced, never modified (issue 23): ``request_changed`` makes a new frozen
request whose JSON keeps the keys in their saved order, and ``RunContext.save`` puts it in
the Run's slot of its ID, so the scheduler reads the newest while an observer keeps what it
was shown."""

from __future__ import annotations

import json
from typing import Any, cast

from artifactize.domain.reviews.run.context import RunContext
from artifactize.kernel.document_codec import request_changed, request_from_json, request_json
from artifactize.ports.documents import Request
from artifactize.ports.statuses import RequestStatus
from tests.fakes.state import MemoryStateStore

RUNNING = RequestStatus.RUNNING


def request(ordinal: int, status: str = "QUEUED") -> Request:
    return request_from_json(
        {
            "id": f"run-a-{ordinal}",
            "runId": "run-a",
            "evalId": f"doc/eval{ordinal}",
            "ordinal": ordinal,
            "executionId": None,
            "status": status,
            "blockedReason": None,
            "extra": 1,
        }
    )


class Observer:
    def __init__(self) -> None:
        self.seen: list[Request] = []

    def request_changed(self, request: Request) -> None:
        self.seen.append(request)


class Ports:
    """The two ports ``save`` uses: the state store and the observer."""

    def __init__(self) -> None:
        self.state = MemoryStateStore()
        self.observer = Observer()


def context() -> tuple[RunContext, Ports]:
    ports = Ports()
    return RunContext(cast(Any, ports), cast(Any, None), cast(Any, None)), ports


def test_changed_keeps_the_saved_key_order_and_leaves_the_original_alone() -> None:
    original = request(1)
    new = request_changed(original, blocked_reason="waiting", status=RUNNING, error=None)
    assert json.dumps(request_json(new)) == (
        '{"id": "run-a-1", "runId": "run-a", "evalId": "doc/eval1", "ordinal": 1, '
        '"executionId": null, "status": "RUNNING", "blockedReason": "waiting", "extra": 1, '
        '"error": null}'
    )
    assert original == request(1) and new is not original


def test_save_puts_the_new_document_in_its_slot_and_current_finds_it() -> None:
    ctx, ports = context()
    first, second = request(1), request(2)
    requests = ctx.track([first, second])
    running = request_changed(second, status=RUNNING)
    for saved in (first, second):  # the store must know them to update them
        ports.state.requests[saved.id] = cast(Any, None)
    ctx.save(running)
    assert requests == [first, running] and requests is ctx.requests
    assert ctx.current(second) is running and ctx.current(first) is first
    assert second.status == "QUEUED"  # the old document is what the observer was shown
    assert ports.observer.seen == [running]


def test_a_request_the_run_does_not_track_is_its_own_current_document() -> None:
    ctx, _ = context()
    ctx.track([request(1)])
    stranger = request(9)
    ctx.keep(stranger)
    assert ctx.current(stranger) is stranger and len(ctx.requests) == 1


def test_a_held_settlement_is_current_at_once_and_shown_only_once_written() -> None:
    """A held completion's request is the Run's current document at once (its gates open),
    shown to the observer only when the state says it was written; one that was dropped
    goes back to its RUNNING document, which the Run's end settles."""
    ctx, ports = context()
    first, second = request(1, "RUNNING"), request(2, "RUNNING")
    ctx.track([first, second])
    green = request_changed(first, status=RequestStatus.GREEN)
    red = request_changed(second, status=RequestStatus.RED)
    written = ctx.held.hold(ctx, green, first)
    dropped = ctx.held.hold(ctx, red, second)
    assert ctx.requests == [green, red] and ports.observer.seen == [] and ctx.held.count == 2
    written(True)
    dropped(False)
    assert ctx.requests == [green, second] and ports.observer.seen == [green]
    assert ctx.held.count == 0


def test_a_held_save_is_current_at_once_and_left_to_its_caller_to_show() -> None:
    """The RUNNING save beside a claim: the Run's current document at once, handed to the
    state as a held write, and not shown until the caller's claim committed."""
    ctx, ports = context()
    first = request(1)
    ctx.track([first])
    ports.state.requests[first.id] = cast(Any, None)
    running = request_changed(first, status=RUNNING)
    ctx.save_held(running)
    assert ctx.requests == [running] and ports.observer.seen == []
    assert ports.state.requests[first.id].status == RUNNING
    assert ctx.held.count == 0  # the fake wrote it at once, and said so
