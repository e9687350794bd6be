"""Dependency evals in a Run: a derived verdict, with no execution (reference §2.4).

A dependency eval's gate looks only at its ``depends_on`` targets (``gates``): READY once
every eval of every target is GREEN. The scheduler dispatches it like any READY request,
and settling it is only this: GREEN with ``source.kind = "derived"``, no claim, no key, no
execution, no cache or team store record, no executor start. While its gate is closed it
is parked BLOCKED (a RED or BLOCKED target eval) or WAIT_DEPENDENCY, with ``blockedBy``.
``--force``, ``--reuse-only`` and ``--max-executions`` do not apply to it. Selecting one
pulls its targets' evals into the Run (``pulled_in``): they get requests and run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from artifactize.domain.declarations.model import DependencyProfile
from artifactize.domain.project.workspace import EvalRef, Workspace
from artifactize.domain.reviews.run.summaries import request_summary
from artifactize.kernel.document_codec import request_summarized
from artifactize.kernel.transitions import request_moves
from artifactize.ports.documents import Request
from artifactize.ports.statuses import ProfileKind, RequestStatus, SourceKind

DERIVED_RESULT: Mapping[str, Any] = {"verdict": RequestStatus.GREEN}


def is_dependency(request: Request) -> bool:
    return str(request.requested_profile["kind"]) == ProfileKind.DEPENDENCY


def settle_derived(request: Request, now: str, save: Callable[[Request], None]) -> None:
    """Settle a READY dependency eval's request GREEN (its targets' evals all are), saved
    with its summary."""
    settled = request_summarized(
        request,
        request_summary,
        status=request_moves(request.status, RequestStatus.GREEN),
        result=dict(DERIVED_RESULT),
        source={"runId": request.run_id, "requestId": request.id, "kind": SourceKind.DERIVED},
        completed_at=now,
        blocked_reason=None,
        blocked_by=None,
    )
    save(settled)


def pulled_in(workspace: Workspace, refs: Sequence[EvalRef]) -> list[EvalRef]:
    """The evals a selected dependency eval pulls into the Run: every eval of its targets
    (and, for a target's own dependency evals, of theirs), in configuration order, except
    those already selected."""
    chosen = {ref.qualified_id for ref in refs}
    wanted: set[str] = set()
    queue = [ref for ref in refs if isinstance(ref.eval.profile, DependencyProfile)]
    while queue:
        ref = queue.pop()
        for target in workspace.eval_inputs.get(ref.qualified_id, ()):
            artifact = workspace.artifact(target)
            for item in artifact.evals:
                qualified = f"{target}/{item.id}"
                if qualified in wanted or qualified in chosen:
                    continue
                wanted.add(qualified)
                if isinstance(item.profile, DependencyProfile):
                    queue.append(EvalRef(artifact, item))
    return [ref for ref in workspace.evals() if ref.qualified_id in wanted]
