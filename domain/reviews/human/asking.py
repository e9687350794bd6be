"""The ``verify`` side of Human reviews: asking a person, following, and ``--wait``.

A READY Human eval never runs anything in ``verify``. Its request either reuses a record,
follows a Human execution of its key that already waits (a follower shares that
execution's result when it settles), or asks: it owns a new execution that waits for a
person (``WAITING_HUMAN``) and saves what it was recorded with (``humanDefinition``,
``runDir``). A waiting execution keeps its key for as long as it takes: nobody's liveness
matters, since any process may claim and submit it later. Asking uses no executor start.

``verify --wait`` then polls the state until every such request settled (someone submitted
from another process) or the deadline passed.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping

from artifactize.domain.reviews.run.documents import EXECUTION_LEADING_KEYS
from artifactize.kernel.transitions import execution_moves
from artifactize.ports.clock import Clock, Sleeper
from artifactize.ports.documents import (
    Execution,
    HumanDefinition,
    Request,
    RequestUpdate,
)
from artifactize.ports.ids import ExecutionId
from artifactize.ports.state import ExecutionRecord, StateStore
from artifactize.ports.statuses import ExecutionStatus, RequestStatus

WAITING_HUMAN = RequestStatus.WAITING_HUMAN
WAITING_FOR_HUMAN = "Waiting for a Human claim and submission."
FOLLOWING_HUMAN = "Waiting for the active Human execution of this reuse key."

HUMAN_POLL_SECONDS = 0.2  # the longest a waiting verify takes to see a submission
# A waiting execution's keys in their saved order (no sessionId: nothing ran).
WAITING_KEYS = (*EXECUTION_LEADING_KEYS, "startedAt", "status", "kinds")


def waiting_execution(
    execution: ExecutionRecord, request: Request, kinds: Mapping[str, str]
) -> ExecutionRecord:
    """``execution`` as it waits for a person: what any later process needs to settle and
    publish it. What it was recorded with (``humanDefinition``, ``runDir``) stays on the
    request: an execution becomes a reuse record, and may be shared with a team store,
    which must never learn local paths."""
    status = execution_moves(execution.status, ExecutionStatus.WAITING_HUMAN)
    data = Execution(
        id=execution.id,
        request_id=request.id,
        run_id=request.run_id,
        eval_id=request.eval_id,
        key=request.key,
        eval_def_hash=request.eval_def_hash,
        fingerprints=copy.deepcopy(request.fingerprints),
        file_manifest=copy.deepcopy(request.file_manifest),
        profile=copy.deepcopy(request.profile),
        started_at=request.started_at,
        status=status,
        kinds=dict(kinds),
        keys=WAITING_KEYS,
    )
    return ExecutionRecord(
        id=execution.id,
        key=execution.key,
        eval_def_hash=execution.eval_def_hash,
        status=status,
        owner_pid=execution.owner_pid,
        owner_start_time=execution.owner_start_time,
        backend=None,
        completed_at=None,
        data=data,
    )


def asking_fields(
    execution_id: ExecutionId, definition: HumanDefinition, run_dir: str, now: str
) -> RequestUpdate:
    """What a request that asks a person records."""
    return {
        "status": WAITING_HUMAN,
        "startedAt": now,
        "executionId": execution_id,
        "blockedReason": WAITING_FOR_HUMAN,
        "humanDefinition": copy.deepcopy(definition),
        "runDir": run_dir,
    }


def following_fields(holder: ExecutionRecord) -> RequestUpdate:
    """What a request that follows another request's waiting Human execution records."""
    return {"status": WAITING_HUMAN, "executionId": holder.id, "blockedReason": FOLLOWING_HUMAN}


async def wait_for_humans(
    state: StateStore,
    requests: list[Request],
    deadline: float,
    clock: Clock,
    sleep: Sleeper,
    *,
    first: bool = False,
    on_poll: Callable[[], Awaitable[None]] | None = None,
) -> bool:
    """Poll every HUMAN_POLL_SECONDS until no request of ``requests`` waits for a person
    (with ``first``: until one of them settled, so ``verify`` can run what it unblocks),
    putting its saved form in its place in ``requests`` (the document itself is not
    modified); True when ``deadline``
    (``clock.monotonic()`` seconds) passed first. Reads only: the requests stay open.
    ``on_poll`` runs before each read (``verify`` refreshes remote records there)."""
    while True:
        if on_poll is not None:
            await on_poll()
        settled = False
        for index, request in enumerate(requests):
            if request.status != WAITING_HUMAN:
                continue
            saved = state.get_request(request.id)
            if saved is not None and saved.status != WAITING_HUMAN:
                requests[index] = copy.deepcopy(saved.data)
                settled = True
        if (first and settled) or all(r.status != WAITING_HUMAN for r in requests):
            return False
        remaining = deadline - clock.monotonic()
        if remaining <= 0:
            return True
        await sleep(min(HUMAN_POLL_SECONDS, remaining))
