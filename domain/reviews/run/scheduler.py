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
from dataclasses import dataclass

import anyio
import anyio.abc

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


@dataclass(frozen=True)
class ScheduleActions:
    settle: Callable[[Request], Awaitable[None]]  # run, reuse, join or ask for one request
    park: Callable[[Request, Gate], None]  # save a request that is not READY
    # Wait until one of these WAITING_HUMAN requests settles; True when the deadline passed.
    # None: the Run does not wait for people.
    wait_for_human: Callable[[list[Request]], Awaitable[bool]] | None


async def schedule(inputs: ScheduleInputs, actions: ScheduleActions, jobs: int = 1) -> None:
    """Settle every QUEUED request whose gate opens, ``jobs`` at a time; park the rest."""
    pending = [r for r in inputs.requests if r["status"] == QUEUED]
    running: set[str] = set()
    failures: list[Exception] = []
    changed = anyio.Event()

    async def settle(request: Request, group: anyio.abc.TaskGroup) -> None:
        nonlocal changed
        try:
            await actions.settle(request)
        except Exception as exc:  # raised below as itself, once every task stopped
            failures.append(exc)
            group.cancel_scope.cancel()
        finally:
            running.discard(request["id"])
            changed.set()

    async with anyio.create_task_group() as group:
        while True:
            gates = inputs.graph().gates
            for request in list(pending):
                if len(running) >= jobs:
                    break
                if gates[request["evalId"]].readiness is Readiness.READY:
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
    if failures:
        raise failures[0]
