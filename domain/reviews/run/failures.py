"""Why a review ended without a verdict: the saved ``errorCode`` and its message."""

from __future__ import annotations

import enum


class FailureCode(enum.Enum):
    AUTHENTICATION = "AUTHENTICATION"
    QUOTA = "QUOTA"
    RATE_LIMIT = "RATE_LIMIT"
    TRANSIENT = "TRANSIENT"
    TIMEOUT = "TIMEOUT"
    CANCELLED = "CANCELLED"
    PROVIDER_BUDGET_EXCEEDED = "PROVIDER_BUDGET_EXCEEDED"
    INVALID_RESULT = "INVALID_RESULT"
    PROVIDER_ERROR = "PROVIDER_ERROR"
    AGENT_ERROR = "AGENT_ERROR"
    PREPARATION_FAILED = "PREPARATION_FAILED"
    INPUT_CHANGED = "INPUT_CHANGED"
    FINGERPRINT_RECHECK_FAILED = "FINGERPRINT_RECHECK_FAILED"
    SESSION_CLEANUP_FAILED = "SESSION_CLEANUP_FAILED"
    SPAWN_FAILED = "SPAWN_FAILED"  # runtime: the command never started
    ABNORMAL_EXIT = "ABNORMAL_EXIT"  # runtime: killed by a signal, or no exit status
    RUNTIME_ERROR = "RUNTIME_ERROR"  # runtime: its private directories could not be removed


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
