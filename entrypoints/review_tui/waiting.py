"""What the List and Request screens say about a request (pure: views in, text out).

The List shows one row per waiting request: ``EVAL REQUEST CLAIM WAITING REPO``, where the
claim is ``-``, ``name`` or ``name (you)`` and waiting is the age since the request was
created (``45s``, ``12m``, ``3h``, ``2d``). A request is read-only for this reviewer when
it no longer waits, or when someone else holds its claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from artifactize.ports.statuses import RequestStatus

WAITING_HUMAN = RequestStatus.WAITING_HUMAN
LIST_COLUMNS = ("EVAL", "REQUEST", "CLAIM", "WAITING", "REPO")
NO_WAITING = "No Human reviews are waiting."
NO_CLAIM = "-"
YOURS = "{name} (you)"
NOTHING_TO_REVIEW = "The request is {status}; there is nothing to review."
CLAIMED_BY_OTHER = "Claimed by {claimant}; read-only for {reviewer}."
AGE_UNITS = ((86_400, "d"), (3_600, "h"), (60, "m"), (1, "s"))
UNKNOWN_AGE = "?"


@dataclass(frozen=True)
class WaitingRow:
    request_id: str
    eval_id: str
    claim: str
    waiting: str
    repo: str

    def cells(self) -> tuple[str, ...]:
        return (self.eval_id, self.request_id, self.claim, self.waiting, self.repo)


def claimant(view: Mapping[str, Any]) -> str | None:
    claim = view.get("claim")
    if isinstance(claim, Mapping) and isinstance(claim.get("reviewer"), str):
        return str(claim["reviewer"])
    return None


def claim_text(view: Mapping[str, Any], reviewer: str) -> str:
    name = claimant(view)
    if name is None:
        return NO_CLAIM
    return YOURS.format(name=name) if name == reviewer else name


def parse_saved_time(text: Any) -> datetime | None:
    """A saved RFC 3339 UTC timestamp (nine fraction digits; microseconds are enough)."""
    if not isinstance(text, str) or len(text) < len("YYYY-MM-DDTHH:MM:SSZ"):
        return None
    try:
        return datetime.fromisoformat(text[:26].rstrip("Zz") + "+00:00")
    except ValueError:
        return None


def age_text(created: Any, now: datetime) -> str:
    """The largest whole unit of the time since ``created``: ``45s``, ``12m``, ``3h``, ``2d``."""
    moment = parse_saved_time(created)
    if moment is None:
        return UNKNOWN_AGE
    seconds = max(0, int((now.astimezone(UTC) - moment).total_seconds()))
    for size, unit in AGE_UNITS:
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return "0s"


def waiting_row(view: Mapping[str, Any], repo: str, reviewer: str, now: datetime) -> WaitingRow:
    return WaitingRow(
        request_id=str(view.get("id")),
        eval_id=str(view.get("evalId")),
        claim=claim_text(view, reviewer),
        waiting=age_text(view.get("createdAt"), now),
        repo=repo,
    )


def table(rows: list[WaitingRow]) -> list[str]:
    """The header and the rows, each column as wide as its widest cell."""
    cells = [LIST_COLUMNS, *(row.cells() for row in rows)]
    widths = [max(len(line[index]) for line in cells) for index in range(len(LIST_COLUMNS))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    ]


def read_only_reason(view: Mapping[str, Any], reviewer: str) -> str | None:
    """Why this reviewer cannot act on the request, or None when they can."""
    status = view.get("status")
    if status != WAITING_HUMAN:
        return NOTHING_TO_REVIEW.format(status=status)
    name = claimant(view)
    if name is not None and name != reviewer:
        return CLAIMED_BY_OTHER.format(claimant=name, reviewer=reviewer)
    return None
