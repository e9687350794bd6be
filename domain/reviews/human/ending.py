"""Ending a Human wait without a verdict: supersession of a stale request, cancellation.

A waiting Human request records the declarations it was asked with (``humanDefinition``).
Descriptions and other texts a person reads are not in the reuse key, so after such an
edit the key still names the waiting execution, while every Human action on it is refused
(the declarations changed). Left alone, every later ``verify`` would follow that dead
request and ``verify --wait`` would time out. So:

- a follower never joins an execution whose recorded declarations differ from the current
  ones (``is_stale``): ``verify`` supersedes it (status SUPERSEDED, with the reason; the
  claim released; its followers settled the same way) in one transaction, then asks again;
- ``request cancel`` ends a waiting request on purpose (status CANCELLED): the claimant may,
  or anyone while nobody holds the claim; who and why are recorded, followers settle with it.

Neither joins the reuse history or gives evidence: the eval is just not reviewed by them.
The requests say SUPERSEDED or CANCELLED; their execution ends ERROR with that code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.domain.reviews.human.recorded_declarations import DEFINITION_CHANGED
from artifactize.domain.reviews.reuse.canonical_json import canonical_json
from artifactize.kernel.transitions import execution_moves, request_moves
from artifactize.ports.documents import ExecutionEnding, RequestEnding
from artifactize.ports.ids import ExecutionId, RequestId
from artifactize.ports.state import ExecutionRecord, HumanEnding, RequestRecord
from artifactize.ports.statuses import ErrorCode, ExecutionStatus, RequestStatus

SUPERSEDED = RequestStatus.SUPERSEDED
CANCELLED = RequestStatus.CANCELLED
CANCEL_REASON_MAX_CHARS = 1_000
SUPERSEDED_REASON = (
    DEFINITION_CHANGED + " Run {run_id} superseded this request and asked again as {request_id}."
)
CANCELLED_REASON = "Cancelled by {reviewer}."
CANCEL_REASON_TOO_LONG = "--reason must be at most {limit} characters, got {length}."
CANCEL_REASON_BLANK = "--reason must not be blank."


def comparable(definition: Mapping[str, Any]) -> str:
    """A recorded definition without where the repository was checked out: another clone
    with the same key reviews the same thing."""
    return canonical_json({k: v for k, v in definition.items() if k != "repo"}).decode()


def is_stale(recorded: RequestRecord, current: Mapping[str, Any]) -> bool:
    """Whether the waiting request ``recorded`` was asked with other declarations than
    ``current`` (``human_definition`` now); a request without a recorded one is stale."""
    saved = recorded.data.human_definition
    if not isinstance(saved, Mapping):
        return True
    return comparable(saved) != comparable(current)


def original_request_id(holder: ExecutionRecord) -> RequestId | None:
    return holder.data.request_id


def supersession_of(
    original: RequestRecord, holder: ExecutionRecord, run_id: str, request_id: str, now: str
) -> HumanEnding:
    """What ``verify`` writes over a stale wait (whoever holds its claim)."""
    reason = SUPERSEDED_REASON.format(run_id=run_id, request_id=request_id)
    request_fields, execution_fields = _fields(SUPERSEDED, ErrorCode.SUPERSEDED, reason, None, now)
    request_fields["supersededBy"] = request_id
    execution_fields["supersededBy"] = request_id
    return HumanEnding(original.id, holder.id, request_fields, execution_fields)


def check_cancel_reason(reason: str | None) -> str | None:
    """``reason`` when valid (None: no reason given); raises ValueError naming the rule."""
    if reason is None:
        return None
    if not reason.strip():
        raise ValueError(CANCEL_REASON_BLANK)
    if len(reason) > CANCEL_REASON_MAX_CHARS:
        raise ValueError(
            CANCEL_REASON_TOO_LONG.format(limit=CANCEL_REASON_MAX_CHARS, length=len(reason))
        )
    return reason


def cancellation_of(
    original: RequestRecord, execution_id: ExecutionId, reviewer: str, reason: str | None, now: str
) -> HumanEnding:
    """What ``request cancel`` writes: only for the claimant or while nobody claimed it."""
    text = reason if reason is not None else CANCELLED_REASON.format(reviewer=reviewer)
    fields = _fields(CANCELLED, ErrorCode.CANCELLED, text, reviewer, now)
    return HumanEnding(original.id, execution_id, *fields, reviewer=reviewer)


def _fields(
    status: RequestStatus, code: ErrorCode, reason: str, by: str | None, now: str
) -> tuple[RequestEnding, ExecutionEnding]:
    """(request fields, execution fields). The requests take ``status``; the execution ends
    ERROR with ``code``, like every execution that ends without a verdict (a state's
    executions are GREEN, RED or ERROR once settled), and carries the same reason."""
    # The requests and the execution all wait for a person until now.
    request_fields: RequestEnding = {
        "status": request_moves(RequestStatus.WAITING_HUMAN, status),
        "blockedReason": None,
        "reason": reason,
        "endedBy": by,
        "completedAt": now,
    }
    execution_fields: ExecutionEnding = {
        "status": execution_moves(ExecutionStatus.WAITING_HUMAN, ExecutionStatus.ERROR),
        "error": reason,
        "errorCode": code,
        "reason": reason,
        "endedBy": by,
        "completedAt": now,
    }
    return request_fields, execution_fields
