"""Reuse inside a Run: what a record of an eval's key says, and a reused result copied in.

A selected eval first attaches the newest GREEN/RED record of its key, before any gate
resolves (a lookup starts nothing, so it need not wait for the eval's inputs); the scope's
evals that this Run does not run are only looked up, as the Run's ``evidence``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from artifactize.domain.reviews.remote.records import MIRROR_PREFIX
from artifactize.domain.reviews.reuse.keys import KeyInputs
from artifactize.domain.reviews.run.context import RunContext
from artifactize.domain.reviews.run.documents import provenance_of
from artifactize.domain.reviews.run.gates import UNREVIEWED
from artifactize.domain.reviews.run.summaries import request_summary
from artifactize.kernel.document_codec import request_summarized
from artifactize.kernel.transitions import request_moves
from artifactize.ports.documents import EvidenceDocument, Request
from artifactize.ports.state import ExecutionRecord
from artifactize.ports.statuses import RequestStatus, SourceKind

NOT_SELECTED = (
    "Not selected, and no reusable verdict of its key: select it, or verify with --recursive."
)
NOT_SELECTED_UNKEYED = (
    "Not selected, and it has no reuse key ({reason}): select it, or verify with --recursive."
)


def source_kind(record: ExecutionRecord, joined: bool) -> SourceKind:
    """How a reused result was found: a mirrored store record, a wait, or local history."""
    if record.id.startswith(MIRROR_PREFIX):
        return SourceKind.REMOTE
    return SourceKind.JOINED if joined else SourceKind.CACHE


def lookup(ctx: RunContext, keys: Sequence[KeyInputs]) -> dict[str, ExecutionRecord]:
    """The newest record of every key among ``keys`` (key -> record), touched as used:
    one read for the whole reuse phase, not one transaction per eval."""
    wanted = [item.key for item in keys if item.key is not None]
    return ctx.ports.state.latest_of_keys(wanted, touch=True) if wanted else {}


def evidence(keys: KeyInputs, found: Mapping[str, ExecutionRecord]) -> EvidenceDocument:
    """What the newest record of an eval's key says, for an eval this Run does not run."""
    if keys.key is None:
        reason = NOT_SELECTED_UNKEYED.format(reason=keys.unkeyed_reason)
        return {"status": UNREVIEWED, "key": None, "source": None, "reason": reason}
    record = found.get(keys.key)
    if record is None:
        return {"status": UNREVIEWED, "key": keys.key, "source": None, "reason": NOT_SELECTED}
    provenance = provenance_of(record)
    return {
        "status": RequestStatus(record.status),
        "key": keys.key,
        "executionId": record.id,
        "source": {
            "runId": provenance["runId"],
            "requestId": provenance["requestId"],
            "kind": source_kind(record, joined=False),
        },
        "reason": None,
    }


def attach_cached(
    ctx: RunContext,
    keys: KeyInputs,
    request: Request,
    found: Mapping[str, ExecutionRecord],
    save: Callable[[Request], None] | None = None,
) -> None:
    """Reuse the newest record of a selected eval's key (from ``lookup``), unless ``force``;
    ``save`` takes the reused document (default ``ctx.save``)."""
    if keys.key is None or ctx.options.force:
        return
    if ctx.not_run_reason(ctx.workspace.find_eval(request.eval_id).eval.profile):
        return
    record = found.get(keys.key)
    if record is not None:
        reuse(ctx, request, record, source_kind(record, joined=False), save)


def reuse(
    ctx: RunContext,
    request: Request,
    record: ExecutionRecord,
    kind: SourceKind,
    save: Callable[[Request], None] | None = None,
) -> None:
    """Settle ``request`` with the result ``record`` holds, and save it with its summary
    (with ``save``, default ``ctx.save``)."""
    data, provenance = record.data, provenance_of(record)
    reused = request_summarized(
        request,
        request_summary,
        status=request_moves(request.status, RequestStatus(record.status)),
        result=data.result,  # the record was just read: nobody else holds it
        # every record of the history and every mirror keeps its profile; were one without,
        # the request would keep its own
        profile=data.profile if data.profile is not None else request.profile,
        provenance=provenance,
        usage=None,
        reused_usage=data.usage,
        tool_calls=[],
        producer=data.producer,
        origin=data.origin,
        reviewer=data.reviewer,
        session_id=data.session_id,
        execution_id=record.id,
        source={"runId": provenance["runId"], "requestId": provenance["requestId"], "kind": kind},
        completed_at=ctx.now(),
        blocked_reason=None,
    )
    (save or ctx.save)(reused)
