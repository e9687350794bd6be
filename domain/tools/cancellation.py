"""Cooperative cancellation for tool work, and the one way tool work is cancelled by a token.

A ``Cancellation`` is set once by the caller (Esc in the terminal reviewer, a cancelled
caller of a built-in) and read by the work: a built-in running in a worker thread checks
it between steps, a process-running call is cancelled when it fires (``until_cancelled``).

The token is a plain flag, not a ``threading.Event``: nobody waits on it, and
``Event.is_set`` is itself a plain read of the attribute that ``Event.set`` assigns, so an
attribute gives the worker thread the very same guarantee, with no lock to create.

``inline_first`` runs a built-in on the event loop first, under a budget (``InlineFirst``),
and in a worker thread only when it reaches its budget: waking a worker thread and waking the
loop again when it is done cost more than a short built-in itself (about 0.15 ms of a
0.3 ms ``read`` in ``artifactize mcp``, bench/mcp.py). The attempt's token fires
``OverBudget`` at the first check past the budget; built-ins only read, so the work then
starts over, whole, in the worker thread, where a cancellation returns at once as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio

from artifactize.domain.tools.results import ToolError
from artifactize.ports.threads import WorkerThreads

CANCELLED_MESSAGE = "Agent tool call was cancelled."
CANCEL_POLL_SECONDS = 0.02  # how often a running call looks at its cancellation token
# How long a built-in may hold the event loop before it starts over in a worker thread: the
# longest an inline attempt delays other requests (and a cancellation), and the most work
# a long call does twice.
INLINE_BUDGET_SECONDS = 0.001

T = TypeVar("T")


class Cancellation:
    """Set once by the caller; checked by long-running built-ins between steps."""

    def __init__(self) -> None:
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def check(self) -> None:
        if self._cancelled:
            raise ToolError(CANCELLED_MESSAGE)

    async def fired(self) -> None:
        """Return once the token is cancelled (it is polled, so any thread may set it)."""
        while not self._cancelled:
            await anyio.sleep(CANCEL_POLL_SECONDS)


class _Never(Cancellation):
    """The token of work nobody can cancel: ``cancel`` leaves it as it is."""

    def cancel(self) -> None:
        pass


NEVER_CANCELLED: Cancellation = _Never()


class OverBudget(Exception):
    """An inline attempt reached its budget: the work starts over in a worker thread.

    Not a ``ToolError``: nothing but ``inline_first`` may catch it."""


class _Budgeted(Cancellation):
    """The token of an inline attempt: the call's own token, plus a deadline."""

    def __init__(self, token: Cancellation, clock: Callable[[], float], deadline: float) -> None:
        super().__init__()
        self._token = token
        self._clock = clock
        self._deadline = deadline

    def cancel(self) -> None:
        self._token.cancel()

    @property
    def cancelled(self) -> bool:
        return self._token.cancelled

    def check(self) -> None:
        self._token.check()
        if self._clock() >= self._deadline:
            raise OverBudget


@dataclass(frozen=True)
class InlineFirst:
    """Built-ins start on the event loop, for at most ``budget`` seconds of ``clock``, then
    start over on ``threads``."""

    clock: Callable[[], float]
    budget: float = INLINE_BUDGET_SECONDS
    threads: WorkerThreads = field(kw_only=True)


async def inline_first(
    work_for: Callable[[Cancellation], Callable[[], T]], token: Cancellation, inline: InlineFirst
) -> T:
    """Run ``work_for(token)`` on the event loop until its first check past the budget, then
    start it over in a worker thread (``in_worker_thread``). Only for work that checks its
    token between bounded steps, so an attempt holds the loop little longer than the budget,
    and that only reads, so starting over changes nothing."""
    attempt = _Budgeted(token, inline.clock, inline.clock() + inline.budget)
    try:
        return work_for(attempt)()
    except OverBudget:
        pass
    return await in_worker_thread(inline.threads, work_for(token), token)


async def cancelled_by(work: Awaitable[T], trigger: Callable[[], Awaitable[object]]) -> T | None:
    """Await ``work``; should ``trigger()`` return first, cancel ``work`` and give None.

    What ``work`` raises propagates as it is (not wrapped in an exception group), and so
    does the caller's own cancellation. Work that finished is never reported cancelled."""
    result: T | None = None
    finished = False
    error: Exception | None = None
    with anyio.CancelScope() as cancelled:

        async def watch() -> None:
            await trigger()
            cancelled.cancel()

        async with anyio.create_task_group() as watcher:
            watcher.start_soon(watch)
            try:
                result = await work
                finished = True
            except Exception as exc:  # re-raised below, outside the task group
                error = exc
            watcher.cancel_scope.cancel()
    if error is not None:
        raise error
    return result if finished else None


async def until_cancelled(work: Awaitable[T], token: Cancellation) -> T | None:
    """Await ``work``; cancelling ``token`` meanwhile cancels it (a process it runs is
    killed with its group and reaped) and gives None."""
    return await cancelled_by(work, token.fired)


async def in_worker_thread(threads: WorkerThreads, work: Callable[[], T], token: Cancellation) -> T:
    """Run blocking ``work`` in a worker thread. A cancelled caller does not wait for it: the
    token is cancelled, so the work stops at its next check, and the cancellation goes on."""
    try:
        return await threads.run(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        token.cancel()
        raise
