"""The scheduling loop of a Run: which request runs next, and when the Run may stop.

Up to ``jobs`` requests settle at once (``verify --jobs``, default 4), the READY ones in
selection order, and the gates are brought up to date after every result
(``gates.LiveGates``), so a verdict opens (or closes) its consumers' gates at once. Each
pass looks only at the requests whose gate changed: a Run of N requests costs O(N) in all,
not O(N) per result. Cache hits were attached before scheduling and
take no slot; a Human request holds its slot only while it is being asked (it then waits
as WAITING_HUMAN without one); a joiner holds its slot while it polls the live execution
of its key. A request that is not READY is *parked*: saved WAIT_DEPENDENCY or BLOCKED
with what it waits for, and dispatched later if its gate opens.

The requests run as tasks of one anyio task group: a failure of one (a team store that
refuses) cancels the others and is raised as itself, not wrapped in an exception group.

With ``--wait``, when nothing is READY but Human requests of this Run wait for a person,
the loop waits until one of them settles, feeds its verdict into the graph and goes on: a
dependent that became READY runs in the same Run. Without it, or once nothing Human is
pending, the loop stops and the still-parked requests keep their parked status.
"""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Protocol

import anyio
import anyio.abc

from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.human.asking import WAITING_HUMAN
from artifactize.domain.reviews.run.gates import (
    Evidence,
    Gate,
    GraphState,
    LiveGates,
    Readiness,
    ScopeShape,
    evaluate,
    evidence_of,
)
from artifactize.ports.documents import EvidenceDocument, Request
from artifactize.ports.statuses import RequestStatus

Request = Request
QUEUED = RequestStatus.QUEUED


class Gates(Protocol):
    """The gates the scheduler reads, kept current by ``update``."""

    @property
    def gates(self) -> Mapping[str, Gate]: ...

    def update(self, evidence: Mapping[str, Evidence]) -> set[str]:
        """Take new evidence; the qualified eval IDs whose gate changed."""
        ...


@dataclass(frozen=True)
class ScheduleInputs:
    """What the graph is evaluated over: the scope, the Run's requests and the evidence
    of the scope's other evals (looked up for reuse, never run here)."""

    workspace: Workspace
    scope: tuple[str, ...]
    ignore_gates: bool
    requests: Sequence[Request]  # selection order; the Run's current documents
    evidence: Mapping[str, EvidenceDocument]  # qualified eval ID -> evidence
    # the scope's components and their inputs (``gates.scope_shape``), shared by the Run's
    # scheduling and its end; None: computed by each
    shape: ScopeShape | None = None

    def known(self) -> dict[str, Evidence]:
        known: dict[str, Evidence] = {
            eval_id: evidence_of(str(entry["status"])) for eval_id, entry in self.evidence.items()
        }
        for request in self.requests:
            known[request.eval_id] = evidence_of(request.status)
        return known

    def graph(self) -> GraphState:
        shape, ignore = self.shape, self.ignore_gates
        return evaluate(self.workspace, self.scope, self.known(), ignore_gates=ignore, shape=shape)

    def live(self) -> Gates:
        shape, ignore = self.shape, self.ignore_gates
        return LiveGates(self.workspace, self.scope, self.known(), ignore_gates=ignore, shape=shape)


@dataclass(frozen=True)
class ScheduleActions:
    settle: Callable[[Request], Awaitable[None]]  # run, reuse, join or ask for one request
    park: Callable[[Request, Gate], None]  # save a request that is not READY
    # Wait until one of these WAITING_HUMAN requests settles; True when the deadline passed.
    # None: the Run does not wait for people.
    wait_for_human: Callable[[list[Request]], Awaitable[bool]] | None
    # Settle a READY request at once when that needs no waiting (a derived dependency eval,
    # an eval this verify does not review); False: it must be ``settle``d in a slot.
    settle_inline: Callable[[Request], bool] = lambda _request: False
    # One state transaction around each pass (its inline settlements and parkings).
    batch: Callable[[], AbstractContextManager[None]] = nullcontext
    # Work for the whole loop beside the requests (the Run's held completions flushed after
    # a short interval); cancelled when the loop ends, its failure raised like a request's.
    beside: Callable[[], Awaitable[None]] | None = None


class _Queue:
    """The QUEUED requests not dispatched yet, by position, and which of them to look at.

    ``fresh`` holds the positions whose gate changed since they were last looked at (all of
    them at first); ``ready`` is a heap of positions found READY that need a slot. A pass
    looks at ``fresh`` only, so each result costs what its gate changes cost."""

    def __init__(self, inputs: ScheduleInputs, gates: Gates) -> None:
        self.requests = inputs.requests  # the current documents: their evidence
        # the documents as scheduling found them: what ``settle`` and ``park`` start from
        self.originals = list(inputs.requests)
        self.gates = gates
        self.position: dict[str, int] = {r.eval_id: i for i, r in enumerate(inputs.requests)}
        self.pending = {i for i, r in enumerate(inputs.requests) if r.status == QUEUED}
        self.fresh: set[int] = set(self.pending)
        self.ready: list[int] = []
        self.slotted: set[int] = set()  # READY positions that ``settle_inline`` declined

    def gate(self, position: int) -> Gate:
        return self.gates.gates[self.requests[position].eval_id]

    def settled(self, eval_ids: Sequence[str]) -> None:
        """Feed the current evidence of these evals in; mark the requests whose gate moved."""
        evidence = {e: evidence_of(self.requests[self.position[e]].status) for e in eval_ids}
        for eval_id in self.gates.update(evidence):
            position = self.position.get(eval_id)
            if position is not None and position in self.pending:
                self.fresh.add(position)

    def refresh_all(self) -> None:
        """Every request's evidence again (a person's verdict came in from elsewhere)."""
        self.settled(list(self.position))

    def next_ready(self) -> int | None:
        while self.ready:
            position = heapq.heappop(self.ready)
            if position in self.pending and self.gate(position).readiness is Readiness.READY:
                return position
            self.slotted.discard(position)  # its gate closed again: looked at when it opens
        return None


async def schedule(inputs: ScheduleInputs, actions: ScheduleActions, jobs: int = 1) -> None:
    """Settle every QUEUED request whose gate opens, ``jobs`` at a time; park the rest."""
    queue = _Queue(inputs, inputs.live())
    running: set[str] = set()
    failures: list[Exception] = []
    changed = anyio.Event()
    settled: list[str] = []  # eval IDs settled in a slot since the last pass

    async def settle(request: Request, group: anyio.abc.TaskGroup) -> None:
        nonlocal changed
        try:
            await actions.settle(request)
        except Exception as exc:  # raised below as itself, once every task stopped
            failures.append(exc)
            group.cancel_scope.cancel()
        finally:
            running.discard(request.id)
            settled.append(request.eval_id)
            changed.set()

    async def beside(scope: anyio.CancelScope, group: anyio.abc.TaskGroup) -> None:
        assert actions.beside is not None
        with scope:
            try:
                await actions.beside()
            except Exception as exc:  # raised below as itself, once every task stopped
                failures.append(exc)
                group.cancel_scope.cancel()

    beside_scope = anyio.CancelScope()
    async with anyio.create_task_group() as group:
        if actions.beside is not None:
            group.start_soon(beside, beside_scope, group)
        while True:
            with actions.batch():  # inline settlements and parkings: one transaction
                queue.settled(settled)
                settled.clear()
                _look(queue, actions)
                while len(running) < jobs:
                    position = queue.next_ready()
                    if position is None:
                        break
                    queue.pending.discard(position)
                    request = queue.originals[position]
                    running.add(request.id)
                    group.start_soon(settle, request, group)
            if running:
                changed = anyio.Event()
                await changed.wait()
                continue
            waiting = [r for r in inputs.requests if r.status == WAITING_HUMAN]
            if actions.wait_for_human is None or not waiting:
                break
            if await actions.wait_for_human(waiting):
                break
            queue.refresh_all()  # a person's verdict came in: every evidence again
        beside_scope.cancel()
    if failures:
        raise failures[0]


def _look(queue: _Queue, actions: ScheduleActions) -> None:
    """Look at every request whose gate changed: settle inline the READY ones that need no
    slot (again while that opens more gates), queue the other READY ones for a slot, then
    park the rest with their gate as it then stands."""
    parked: set[int] = set()
    while queue.fresh:
        fresh = sorted(queue.fresh)
        queue.fresh.clear()
        inline: list[str] = []
        for position in fresh:
            if position not in queue.pending:
                continue
            request = queue.originals[position]
            if queue.gate(position).readiness is not Readiness.READY:
                parked.add(position)
            elif position not in queue.slotted:
                if actions.settle_inline(request):
                    queue.pending.discard(position)
                    inline.append(request.eval_id)
                else:
                    queue.slotted.add(position)
                    heapq.heappush(queue.ready, position)
        queue.settled(inline)
    for position in sorted(parked):
        gate = queue.gate(position)
        if position in queue.pending and gate.readiness is not Readiness.READY:
            actions.park(queue.originals[position], gate)
