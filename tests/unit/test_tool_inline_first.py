"""``inline_first``: a built-in starts on the event loop and starts over in a worker thread
at its first check past the budget; which built-ins a registry runs that way."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import artifactize.domain.tools.registry as registry_module
from artifactize.domain.tools.cancellation import (
    CANCELLED_MESSAGE,
    INLINE_BUDGET_SECONDS,
    Cancellation,
    InlineFirst,
    OverBudget,
    inline_first,
)
from artifactize.domain.tools.results import ToolError, ToolResult
from tests.fakes.processes import FakeClock
from tests.fakes.threads import THREADS
from tests.unit.test_mcp_serving import served, serving

pytestmark = pytest.mark.anyio


class Attempts:
    """Work that records each attempt (its thread and token) and checks its token
    ``checks`` times, the clock advancing ``step`` seconds before each check."""

    def __init__(self, clock: FakeClock, checks: int, step: float) -> None:
        self.clock = clock
        self.checks = checks
        self.step = step
        self.runs: list[tuple[int, Cancellation]] = []

    def __call__(self, token: Cancellation) -> Callable[[], str]:
        def work() -> str:
            self.runs.append((threading.get_ident(), token))
            for _ in range(self.checks):
                self.clock.advance(self.step)
                token.check()
            return "done"

        return work


async def test_short_work_runs_once_on_the_event_loop() -> None:
    clock = FakeClock()
    work = Attempts(clock, checks=3, step=INLINE_BUDGET_SECONDS / 10)
    assert (
        await inline_first(work, Cancellation(), InlineFirst(clock.monotonic, threads=THREADS))
        == "done"
    )
    assert [thread for thread, _ in work.runs] == [threading.get_ident()]


async def test_work_past_its_budget_starts_over_in_a_worker_thread_with_the_calls_token() -> None:
    clock = FakeClock()
    token = Cancellation()
    work = Attempts(clock, checks=3, step=INLINE_BUDGET_SECONDS / 2)
    assert await inline_first(work, token, InlineFirst(clock.monotonic, threads=THREADS)) == "done"
    (loop_thread, attempt), (worker_thread, again) = work.runs
    assert loop_thread == threading.get_ident() != worker_thread
    assert attempt is not token and again is token


async def test_a_cancelled_token_ends_the_inline_attempt_as_a_cancellation() -> None:
    clock = FakeClock()
    token = Cancellation()
    token.cancel()
    work = Attempts(clock, checks=1, step=0.0)
    with pytest.raises(ToolError, match=CANCELLED_MESSAGE):
        await inline_first(work, token, InlineFirst(clock.monotonic, threads=THREADS))
    assert len(work.runs) == 1


async def test_cancelling_the_attempts_token_cancels_the_call() -> None:
    clock = FakeClock()
    token = Cancellation()

    def work_for(attempt: Cancellation) -> Callable[[], str]:
        def work() -> str:
            attempt.cancel()
            assert attempt.cancelled
            attempt.check()
            return "not reached"

        return work

    with pytest.raises(ToolError, match=CANCELLED_MESSAGE):
        await inline_first(work_for, token, InlineFirst(clock.monotonic, threads=THREADS))
    assert token.cancelled


def test_over_budget_is_no_tool_error() -> None:
    assert not issubclass(OverBudget, ToolError)  # nothing but inline_first catches it


async def test_a_served_read_runs_on_the_event_loop_and_a_review_read_in_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[int] = []
    from artifactize.domain.tools.builtins.read import run_read as real_read

    def recording_read(context: Any, args: dict[str, Any]) -> ToolResult:
        threads.append(threading.get_ident())
        return real_read(context, args)

    monkeypatch.setattr(registry_module, "run_read", recording_read)
    from artifactize.domain.use_cases.serving import ServeSelection

    scope = served(ServeSelection(eval_id="doc/open"))
    run = serving(scope)
    result = await run.call("read_doc", {"path": "notes.txt"})
    assert not result.is_error, result.to_json()
    review = await scope.registry.call("read_doc", {"path": "notes.txt"})
    assert review == result
    assert threads[0] == threading.get_ident() != threads[1]
