"""``--reuse-only KINDS``: evals of those kinds only reuse, as a CI job without model keys or
people needs (reference/declarations.md §4.4).

The team store's records of every key are mirrored before the Run exists, and every
selected eval attaches the newest GREEN/RED record of its key before any gate resolves
(``reuse.attach_cached``). So once that is done, a request of a reuse-only kind that is
still QUEUED has nothing to reuse: it settles STALE at once with a reason that says what
would produce the verdict. Nothing is executed, no Human request is created, no key is
claimed, and the Run ends INCOMPLETE (exit 4) unless something else decides it.
"""

from __future__ import annotations

from collections.abc import Callable

from artifactize.domain.reviews.run.summaries import request_summary
from artifactize.kernel.document_codec import request_summarized
from artifactize.kernel.transitions import request_moves
from artifactize.ports.documents import Request
from artifactize.ports.statuses import ProfileKind, RequestStatus

STALE = RequestStatus.STALE
MISS = "--reuse-only {kind}: no reusable verdict of its key in the local cache or the team store"
UNKEYED = "--reuse-only {kind}: it has no reuse key ({reason}), so nothing can be reused"
PRODUCE = {
    ProfileKind.AGENT: "run artifactize verify {eval_id} with a model key",
    ProfileKind.RUNTIME: "run artifactize verify {eval_id} without --reuse-only runtime",
    ProfileKind.HUMAN: (
        "a person submits a review after artifactize verify {eval_id} asks for one "
        "(artifactize request list)"
    ),
}


def miss_reason(kind: str, eval_id: str, unkeyed_reason: str | None = None) -> str:
    """Why a reuse-only eval got no verdict, and what would produce one."""
    if unkeyed_reason is not None:
        found = UNKEYED.format(kind=kind, reason=unkeyed_reason)
    else:
        found = MISS.format(kind=kind)
    produce = PRODUCE[ProfileKind(kind)].format(eval_id=eval_id)
    return f"{found}; {produce}."


def is_reuse_only(request: Request, kinds: frozenset[ProfileKind]) -> bool:
    """A request the policy lets only reuse (judged by the requested profile's kind)."""
    return str(request.requested_profile["kind"]) in kinds


def settle_misses(
    requests: list[Request],
    kinds: frozenset[ProfileKind],
    save: Callable[[Request], None],
) -> list[Request]:
    """Settle every still-QUEUED request of a reuse-only kind STALE; the ones settled."""
    settled = []
    for request in list(requests):
        if request.status != RequestStatus.QUEUED or not is_reuse_only(request, kinds):
            continue
        kind = str(request.requested_profile["kind"])
        reason = miss_reason(kind, request.eval_id, request.unkeyed_reason)
        stale = request_moves(request.status, STALE)
        missed = request_summarized(
            request, request_summary, status=stale, blocked_reason=reason, blocked_by=None
        )
        save(missed)
        settled.append(missed)
    return settled
