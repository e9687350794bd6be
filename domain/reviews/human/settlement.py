"""What a Human settlement writes: the request, its execution, and what followers receive.

Pure: it builds the ``HumanSettlement`` that ``StateStore.settle_human`` writes in one
transaction. A GREEN or RED verdict of a request with a reuse key joins the key's history
(a forced request has a key too: its verdict becomes the newest record). An ERROR never
does. Followers (requests of other Runs that waited on the same execution) receive the
result the way a reuse hit does: status, result, provenance, reviewer and producer of the
original, ``usage: null`` and ``source.kind`` ``joined``; an ERROR reaches them too.

A newer verdict mirrored from the team review store also ends a local Human wait of its
key (``supersession``): the waiting execution becomes ERROR / SUPERSEDED and all its
waiting requests receive the mirror like a reuse of it (``source.kind`` ``remote``).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from artifactize.domain.reviews.run.current import run_may_settle, settle_run
from artifactize.kernel.document_codec import execution_changed, request_merged
from artifactize.kernel.transitions import execution_moves, request_moves
from artifactize.ports.documents import (
    ExecutionUpdate,
    ProducerDocument,
    ProvenanceDocument,
    RequestUpdate,
    SettledFields,
)
from artifactize.ports.state import ExecutionRecord, HumanSettlement, RequestRecord, Supersession
from artifactize.ports.statuses import (
    VERDICT_STATUSES,
    ErrorCode,
    ExecutionStatus,
    RequestStatus,
    SourceKind,
)

FOLLOWER_SOURCE_KIND = SourceKind.JOINED
MIRROR_SOURCE_KIND = SourceKind.REMOTE
SUPERSEDED_CODE = ErrorCode.SUPERSEDED
SUPERSEDED_ERROR = "Superseded by the completed result {id} for this key."


@dataclass(frozen=True)
class HumanOutcome:
    """How a Human request ends: a verdict with its result, or an ERROR with a code."""

    status: ExecutionStatus  # GREEN | RED | ERROR
    result: Mapping[str, Any] | None = None
    error: str | None = None
    error_code: ErrorCode | None = None

    def __post_init__(self) -> None:
        verdict = self.status in VERDICT_STATUSES
        if not verdict and self.status != ExecutionStatus.ERROR:
            raise ValueError(f"A Human outcome is GREEN, RED or ERROR, not {self.status}")
        if verdict != (self.result is not None) or verdict == (self.error_code is not None):
            raise ValueError("A verdict carries a result and no error; an ERROR the reverse")


def build_settlement(
    request: RequestRecord,
    execution: ExecutionRecord,
    reviewer: str,
    producer: ProducerDocument,
    outcome: HumanOutcome,
    completed_at: str,
) -> HumanSettlement:
    data = request.data
    definition = data.human_definition
    provenance: ProvenanceDocument = {
        "repoPath": definition.get("repo") if definition else None,
        "runId": request.run_id,
        "requestId": request.id,
        "evalId": request.eval_id,
        "evalDefHash": data.eval_def_hash,
        "completedAt": completed_at,
    }
    settled: SettledFields = {
        "result": copy.deepcopy(dict(outcome.result)) if outcome.result is not None else None,
        "error": outcome.error,
        "errorCode": outcome.error_code,
        "provenance": provenance,
        "usage": [],
        "toolCalls": [],
        "producer": producer.copy(),
        "reviewer": reviewer,
        "completedAt": completed_at,
    }
    request_status = request_moves(request.status, RequestStatus(outcome.status))
    request_data = request_merged(
        copy.deepcopy(data), {"status": request_status, **settled, "blockedReason": None}
    )
    key = data.key
    verdict = outcome.status in VERDICT_STATUSES
    execution_status = execution_moves(execution.status, outcome.status)
    execution_data = execution_changed(
        execution.data, {"status": execution_status, **copy.deepcopy(settled)}
    )
    settled_execution = dataclasses.replace(
        execution,
        key=key if verdict and key is not None else execution.key,
        status=execution_status,
        completed_at=completed_at,
        data=execution_data,
    )
    settled_request = dataclasses.replace(
        request, execution_id=execution.id, status=request_status, data=request_data
    )
    return HumanSettlement(
        request=settled_request,
        execution=settled_execution,
        reviewer=reviewer,
        record=verdict and key is not None,
        follower_fields=follower_fields(settled_execution, completed_at),
        settle_run=settle_run,
        run_may_settle=run_may_settle,
    )


def supersession(mirror: ExecutionRecord, completed_at: str) -> Supersession:
    """What a mirrored record writes over a local Human wait of its key (reviews-and-store
    §5.2): the wait is answered by a newer result, so asking a person is moot. Its requests
    take the mirror as a reuse would (``source.kind`` ``remote``), at ``completed_at``."""
    superseded: ExecutionUpdate = {
        "status": ExecutionStatus.ERROR,
        "errorCode": SUPERSEDED_CODE,
        "error": SUPERSEDED_ERROR.format(id=mirror.id),
        "completedAt": completed_at,
    }
    return Supersession(
        execution_fields=superseded,
        request_fields=follower_fields(mirror, completed_at, MIRROR_SOURCE_KIND),
    )


def follower_fields(
    execution: ExecutionRecord, completed_at: str, kind: SourceKind = FOLLOWER_SOURCE_KIND
) -> RequestUpdate:
    """What a request waiting on another's result receives, like a reuse hit of
    ``execution`` found as ``kind`` (``joined`` for a Human settlement's followers)."""
    data = execution.data
    provenance, profile = data.provenance, data.profile
    if provenance is None or profile is None:
        raise ValueError(f"Execution {execution.id} has no provenance or profile to share.")
    return {
        "status": RequestStatus(execution.status),
        "result": copy.deepcopy(data.result),
        "error": data.error,
        "errorCode": data.error_code,
        "profile": profile,
        "provenance": copy.deepcopy(provenance),
        "usage": None,
        "reusedUsage": copy.deepcopy(data.usage),
        "toolCalls": [],
        "producer": data.producer,
        "reviewer": data.reviewer,
        "origin": data.origin,
        "executionId": execution.id,
        "source": {
            "runId": provenance["runId"],
            "requestId": provenance["requestId"],
            "kind": kind,
        },
        "completedAt": completed_at,
        "blockedReason": None,
    }
