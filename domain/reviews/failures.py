"""Why a review ended without a verdict: the saved ``errorCode`` and its message."""

from __future__ import annotations

from artifactize.ports.statuses import ErrorCode

# The saved ``errorCode`` values, defined once in ports (they cross into state and output).
FailureCode = ErrorCode

TIMED_OUT = "Agent review timed out."
CANCELLED = "Agent review was cancelled."
INPUT_CHANGED = "Fingerprint changed during review."
DECLARATIONS_CHANGED = "Artifact scope or eval declarations changed during review."


class AgentFailure(Exception):
    """A review that ends in ERROR; ``message`` is what the request records."""

    def __init__(self, code: FailureCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
