"""Why a Human action was refused: one exception type, with the message a person reads.

Every refusal leaves the request as it was (still waiting, still claimed), except the two
recheck failures, which settle it ERROR before they are raised (``settled`` is True).
"""

from __future__ import annotations

REQUEST_NOT_FOUND = "Review request not found."
REQUEST_ID_NOT_FOUND = (
    "Review request not found: {id} (artifactize request list shows the requests)."
)
NOT_WAITING = "Request is not waiting for a Human review."
NOT_CLAIMANT = "Only the Human claimant may perform this action."
NOT_CLAIMED = "Request {id} is not claimed: claim it first with `artifactize request claim {id}`."
CLAIMED_BY_OTHER = "Request {id} is claimed by {claimant}; only they can cancel it."
NOT_RECORDED = "This request has no recorded Human definition to reconnect to."
REPOSITORY_UNREADABLE = "Cannot reopen the recorded repository {repo}: {reason}"
UNKNOWN_TOOL = "Unknown registered Human tool."
UNKNOWN_TOOL_NAMED = "Unknown Human tool `{tool}`; this request's Human tools: {names}."
NO_TOOLS = "(none)"
CANCELLED = "Human action was cancelled."
RESULT_TOO_LARGE = "Human result exceeds {limit} bytes."
RESULT_NOT_JSON = "Human result is not JSON data."
FINGERPRINT_CHANGED = "Fingerprint changed during review."
PUBLISH_FAILED = "The Human result is saved locally, but publishing it failed: {reason}"


class HumanReviewError(Exception):
    """A refused or failed Human action (the CLI exits 2 with ``message``)."""

    def __init__(self, message: str, *, settled: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.settled = settled  # the action settled the request ERROR before failing


class HumanPublishError(HumanReviewError):
    """The submission settled locally; publishing it to the team store failed."""
