"""The Human side of a Run: asking a person, following a waiting execution, ``--wait``.

A Human eval runs nothing in ``verify``: it reuses, follows a Human execution of its key
that already waits, or asks a person (``WAITING_HUMAN``). Without ``wait`` the Run then
ends INCOMPLETE; with it, ``verify`` polls until the people submitted (the verdicts settle
this same Run) or the deadline passed (``waitTimedOut``; the requests stay open).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio

from artifactize.domain.project.workspace import EvalRef
from artifactize.domain.reviews.human.asking import (
    WAITING_HUMAN,
    asking_fields,
    following_fields,
    wait_for_humans,
    waiting_execution,
)
from artifactize.domain.reviews.human.ending import is_stale, original_request_id, supersession_of
from artifactize.domain.reviews.human.recorded_declarations import human_definition
from artifactize.domain.reviews.reuse.keys import KeyInputs
from artifactize.domain.reviews.run.context import RunContext
from artifactize.domain.reviews.run.documents import RunResult
from artifactize.kernel.document_codec import request_merged, run_changed
from artifactize.kernel.transitions import request_moves
from artifactize.ports.documents import Request
from artifactize.ports.state import ExecutionRecord, HumanNotWaiting

WAIT_CANCELLED = "The Run was cancelled while waiting for Human reviews."
SUPERSEDED_NOTICE = (
    "Superseded Human request {old}: its declarations changed since it was asked; "
    "asking again as {new}."
)
WAITING_NOTICE = (
    "Waiting for Human reviews: {ids} (artifactize request claim/tool/submit, "
    "from another terminal)."
)


def ask_human(
    ctx: RunContext,
    ref: EvalRef,
    keys: KeyInputs,
    request: Request,
    execution: ExecutionRecord,
    *,
    holds_key: bool,
) -> None:
    """Record what a person will review and wait for them; no executor start.

    An execution holding its key turns RUNNING -> WAITING_HUMAN in place (it keeps the
    key), *after* the request is saved waiting: a crash in between leaves a RUNNING
    execution of a dead owner, which the next claim of the key takes over, never a
    waiting execution nobody can claim. An unkeyed or forced one holds no key and is
    inserted waiting before the request that points at it."""
    run_dir = ctx.ports.make_output_root(request.run_id)
    definition = human_definition(ctx.workspace, ctx.options.repo, ref.qualified_id)
    asking = asking_fields(execution.id, definition, run_dir, ctx.now())
    moved = request_moves(request.status, asking["status"])
    request = request_merged(request, {**asking, "status": moved})
    kinds = {name: ctx.workspace.artifact(name).kind.value for name in keys.dependencies}
    waiting = waiting_execution(execution, request, kinds)
    state = ctx.ports.state
    if holds_key:
        ctx.save(request)
        state.complete_execution(waiting, record=False)
    else:
        state.insert_execution(waiting)
        ctx.save(request)


def supersede_if_stale(
    ctx: RunContext, ref: EvalRef, request: Request, holder: ExecutionRecord
) -> bool:
    """Whether the waiting ``holder`` was asked with declarations other than the current
    ones; if so it is superseded (with its followers, claim released, in one transaction),
    so the caller claims the key again and asks anew. A follower never joins such a wait:
    every Human action on it is refused, so it could only strand."""
    state = ctx.ports.state
    owner = original_request_id(holder)
    original = state.get_request(owner) if owner is not None else None
    if original is None:
        return False
    current = human_definition(ctx.workspace, ctx.options.repo, ref.qualified_id)
    if not is_stale(original, current):
        return False
    ending = supersession_of(original, holder, request.run_id, request.id, ctx.now())
    with contextlib.suppress(HumanNotWaiting):  # settled or ended meanwhile: claiming
        state.end_human(ending)  # again sees what it became
    if ctx.ports.progress is not None:
        ctx.ports.progress(SUPERSEDED_NOTICE.format(old=original.id, new=request.id))
    return True


def follow(ctx: RunContext, request: Request, holder: ExecutionRecord) -> None:
    """Share the result of another request's waiting Human execution of this key."""
    following = following_fields(holder)
    moved = request_moves(request.status, following["status"])
    ctx.save(request_merged(request, {**following, "status": moved, "startedAt": ctx.now()}))


class HumanWait:
    """``--wait``: poll until a waiting request settles or the Run's deadline passes."""

    def __init__(
        self,
        ctx: RunContext,
        result: RunResult,
        deadline: float,
        on_poll: Callable[[], Awaitable[None]],
    ) -> None:
        self.ctx = ctx
        self.result = result
        self.deadline = deadline
        self.on_poll = on_poll
        self._announced: set[str] = set()  # request IDs named in a waiting notice

    async def __call__(self, waiting: list[Request]) -> bool:
        """Wait until one of ``waiting`` settles (True: the deadline passed first); tell the
        person at the terminal which requests wait, whenever new ones do."""
        ports = self.ctx.ports
        fresh = [r.id for r in waiting if r.id not in self._announced]
        if fresh and ports.progress is not None:
            ports.progress(WAITING_NOTICE.format(ids=", ".join(fresh)))
        self._announced.update(fresh)
        try:
            timed_out = await wait_for_humans(
                ports.state,
                waiting,
                self.deadline,
                ports.review.clock,
                ports.sleep,
                first=True,
                on_poll=self.on_poll,
            )
        except anyio.get_cancelled_exc_class():
            self.result.run = run_changed(self.result.run, error=WAIT_CANCELLED)
            raise
        for request in waiting:  # settled from another process: the Run's now, shown
            if request.status != WAITING_HUMAN:
                self.ctx.keep(request)
        self.result.run = run_changed(self.result.run, wait_timed_out=timed_out)
        return timed_out
