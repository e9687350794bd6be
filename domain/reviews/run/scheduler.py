"""The scheduling loop of a Run: which request runs next, and when the Run may stop.

Up to ``jobs`` requests settle at once (``verify --jobs``, default 4), the READY ones in
selection order, and the graph is evaluated again after every result, so a verdict opens
(or closes) its consumers' gates at once. Cache hits were attached before scheduling and
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

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import cached_property

import anyio
import anyio.abc

from artifactize.domain.graph import components
from artifactize.domain.reviews.human.asking import WAITING_HUMAN
from artifactize.domain.reviews.run.gates import (
    Evidence,
    Gate,
    GraphState,
    Readiness,
    evaluate,
    evidence_of,
)
from artifactize.domain.workspace import Workspace
from artifactize.ports.documents import EvidenceDocument, RequestDocument
from artifactize.ports.statuses import RequestStatus

Request = RequestDocument
QUEUED = RequestStatus.QUEUED


@dataclass(frozen=True)
class ScheduleInputs:
    """What the graph is evaluated over: the scope, the Run's requests and the evidence
    of the scope's other evals (looked up for reuse, never run here)."""

    workspace: Workspace
    scope: tuple[str, ...]
    ignore_gates: bool
    requests: Sequence[Request]  # selection order
    evidence: Mapping[str, EvidenceDocument]  # qualified eval ID -> evidence

    def graph(self) -> GraphState:
        known: dict[str, Evidence] = {
            eval_id: evidence_of(str(entry["status"])) for eval_id, entry in self.evidence.items()
        }
        for request in self.requests:
            known[request["evalId"]] = evidence_of(request["status"])
        return evaluate(self.workspace, self.scope, known, ignore_gates=self.ignore_gates)

    @cached_property
    def gating(self) -> frozenset[str]:
        """The Artifacts whose eval states some gate of the scope reads: the direct inputs
        of every member of a component that has an eval (a component without evals has no
        gate anyone waits on). Settling an eval of any other Artifact opens no gate, so the
        scheduler need not evaluate the graph again for it."""
        workspace, allowed = self.workspace, set(self.scope)
        found: set[str] = set()
        for members in components(workspace, self.scope):
            if any(workspace.artifact(name).evals for name in members):
                for name in members:
                    found.update(i for i in workspace.inputs.get(name, ()) if i in allowed)
        return frozenset(found)


class _Gates:
    """The gates as of the last graph evaluation, evaluated again only when an eval of a
    gating Artifact settled since (or ``stale`` says so): a Run of N evals evaluates the
    graph (O(scope)) about once per gating result, not once per result."""

    def __init__(self, inputs: ScheduleInputs) -> None:
        self.inputs = inputs
        self.settled: list[str] = []  # qualified eval IDs settled since the last evaluation
        self.stale = True
        self._gates: Mapping[str, Gate] = {}

    def current(self) -> Mapping[str, Gate]:
        gating = self.inputs.gating
        if self.stale or any(e.partition("/")[0] in gating for e in self.settled):
            self._gates = self.inputs.graph().gates
            self.stale = False
        self.settled.clear()
        return self._gates


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


async def schedule(inputs: ScheduleInputs, actions: ScheduleActions, jobs: int = 1) -> None:
    """Settle every QUEUED request whose gate opens, ``jobs`` at a time; park the rest."""
    pending = [r for r in inputs.requests if r["status"] == QUEUED]
    running: set[str] = set()
    failures: list[Exception] = []
    changed = anyio.Event()
    known = _Gates(inputs)

    async def settle(request: Request, group: anyio.abc.TaskGroup) -> None:
        nonlocal changed
        try:
            await actions.settle(request)
        except Exception as exc:  # raised below as itself, once every task stopped
            failures.append(exc)
            group.cancel_scope.cancel()
        finally:
            running.discard(request["id"])
            known.settled.append(request["evalId"])
            changed.set()

    async with anyio.create_task_group() as group:
        while True:
            with actions.batch():  # inline settlements and parkings: one transaction
                gates = _settle_inline(known, actions, pending)
                for request in list(pending):
                    if gates[request["evalId"]].readiness is Readiness.READY:
                        if len(running) >= jobs:
                            break
                        pending.remove(request)
                        running.add(request["id"])
                        group.start_soon(settle, request, group)
                for request in pending:
                    if gates[request["evalId"]].readiness is not Readiness.READY:
                        actions.park(request, gates[request["evalId"]])
            if running:
                changed = anyio.Event()
                await changed.wait()
                continue
            waiting = [r for r in inputs.requests if r["status"] == WAITING_HUMAN]
            if actions.wait_for_human is None or not waiting:
                break
            if await actions.wait_for_human(waiting):
                break
            known.stale = True  # a person's verdict came in: evaluate again
    if failures:
        raise failures[0]


def _settle_inline(
    known: _Gates, actions: ScheduleActions, pending: list[Request]
) -> Mapping[str, Gate]:
    """Settle inline every READY request that needs no slot, again while that opens more
    gates; the gates as they then stand."""
    while True:
        gates = known.current()
        settled = False
        for request in list(pending):
            if gates[request["evalId"]].readiness is Readiness.READY and actions.settle_inline(
                request
            ):
                pending.remove(request)
                known.settled.append(request["evalId"])
                settled = True
        if not settled:
            return gates
