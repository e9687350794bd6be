"""The text answers of ``request claim``, ``unclaim``, ``cancel`` and ``submit``: one or two
lines saying what happened; ``--json`` prints the full documents instead."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

CLAIMED = "Claimed {request} ({eval_id}) as {reviewer}; submit with: artifactize request submit {request} --verdict GREEN|RED"
RELEASED = "Released the claim of {reviewer} on {request}; it waits for a reviewer again."
CANCELLED = "Cancelled {request} ({eval_id}){reason}."
ALSO_ENDED = "Also ended (waiting on it): {requests}."
SUBMITTED = "{eval_id} [{request}]: {status} — {verdict} by {reviewer}."
RUN_AFTER = "Run {run}: {status}."


def claim_text(claim: Mapping[str, Any], request: Mapping[str, Any]) -> str:
    return CLAIMED.format(
        request=claim["requestId"], eval_id=request.get("evalId"), reviewer=claim["reviewer"]
    )


def unclaim_text(claim: Mapping[str, Any]) -> str:
    return RELEASED.format(reviewer=claim["reviewer"], request=claim["requestId"])


def cancel_text(view: Mapping[str, Any], followers: Sequence[str]) -> str:
    reason = view.get("reason")
    lines = [
        CANCELLED.format(
            request=view["id"], eval_id=view.get("evalId"), reason=f": {reason}" if reason else ""
        )
    ]
    if followers:
        lines.append(ALSO_ENDED.format(requests=", ".join(followers)))
    return "\n".join(lines)


def submit_text(view: Mapping[str, Any], run_status: str | None) -> str:
    """The verdict as settled, then the Run's status after the settlement."""
    result = view.get("result") or {}
    lines = [
        SUBMITTED.format(
            eval_id=view.get("evalId"),
            request=view["id"],
            status=view["status"],
            verdict=result.get("verdict", view["status"]),
            reviewer=view.get("reviewer") or "-",
        )
    ]
    if run_status is not None:
        lines.append(RUN_AFTER.format(run=view.get("runId"), status=run_status))
    return "\n".join(lines)
