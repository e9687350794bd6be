"""The words that state, output and the review store share: statuses, verdicts, codes, kinds.

Each is a ``StrEnum``, defined once here because they cross every layer: a member *is* its
string (``ReviewStatus.GREEN == "GREEN"``, ``json.dumps`` writes ``"GREEN"``, an f-string
prints ``GREEN``), so saved state, ``--json`` output and store records read exactly as
before. Text read back from JSON stays a plain ``str`` that compares equal to the member.
Never ``repr`` a member into text: its repr is ``<ReviewStatus.GREEN: 'GREEN'>``.
"""

from __future__ import annotations

import enum
from typing import Literal


class ReviewStatus(enum.StrEnum):
    """The saved ``status`` of a Run, a request or an execution.

    A request goes QUEUED → (WAIT_DEPENDENCY | BLOCKED)* → RUNNING or WAITING_HUMAN → GREEN,
    RED or ERROR, or stays UNREVIEWED when this ``verify`` does not review its kind; an
    execution is RUNNING or WAITING_HUMAN while it holds its key, then GREEN, RED or ERROR.
    A Human wait may also end without a verdict: SUPERSEDED (a later ``verify`` found the
    declarations it was recorded with changed, and asked again) or CANCELLED (``request
    cancel``). Neither is evidence: the eval is simply not reviewed by that request.
    A Run is RUNNING, then GREEN, RED, ERROR or INCOMPLETE (an obligation is unmet)."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    WAIT_DEPENDENCY = "WAIT_DEPENDENCY"
    BLOCKED = "BLOCKED"
    WAITING_HUMAN = "WAITING_HUMAN"
    UNREVIEWED = "UNREVIEWED"
    STALE = "STALE"  # a request only: --reuse-only found no reusable verdict
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"  # a request only: past --max-executions
    GREEN = "GREEN"
    RED = "RED"
    ERROR = "ERROR"
    SUPERSEDED = "SUPERSEDED"  # a Human wait whose recorded declarations went stale
    CANCELLED = "CANCELLED"  # a Human wait ended by `request cancel`
    INCOMPLETE = "INCOMPLETE"  # a Run only


Verdict = Literal[ReviewStatus.GREEN, ReviewStatus.RED]
"""What a review decided: the ``verdict`` of a result and of a store record, and the status of
a request or execution that settled with it."""
VERDICTS: tuple[Verdict, Verdict] = (ReviewStatus.GREEN, ReviewStatus.RED)


class ErrorCode(enum.StrEnum):
    """Why a request or execution ended ERROR (its saved ``errorCode``)."""

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
    AGENT_UNAVAILABLE = "AGENT_UNAVAILABLE"  # a coding agent's CLI: missing, signed out, too old
    PREPARATION_FAILED = "PREPARATION_FAILED"
    INPUT_CHANGED = "INPUT_CHANGED"
    FINGERPRINT_RECHECK_FAILED = "FINGERPRINT_RECHECK_FAILED"
    SESSION_CLEANUP_FAILED = "SESSION_CLEANUP_FAILED"
    SPAWN_FAILED = "SPAWN_FAILED"  # runtime: the command never started
    ABNORMAL_EXIT = "ABNORMAL_EXIT"  # runtime: killed by a signal, or no exit status
    RUNTIME_ERROR = "RUNTIME_ERROR"  # runtime: its private directories could not be removed
    OWNER_DIED = "OWNER_DIED"  # the process that ran a RUNNING execution is gone
    SUPERSEDED = "SUPERSEDED"  # a newer store record answered a waiting Human review
    STATE_WRITE_FAILED = "STATE_WRITE_FAILED"  # a state write failed (disk full, read-only, I/O)


class ProfileKind(enum.StrEnum):
    """Who reviews an eval: a runtime command, an Agent, or a Human (``profile.kind``)."""

    RUNTIME = "runtime"
    AGENT = "agent"
    HUMAN = "human"
    DEPENDENCY = "dependency"  # no reviewer: its verdict is derived from its targets' evals


# The kinds that review (and are counted, reused and published); a dependency eval derives.
PROFILE_KINDS: tuple[ProfileKind, ...] = (ProfileKind.RUNTIME, ProfileKind.AGENT, ProfileKind.HUMAN)


class SourceKind(enum.StrEnum):
    """Where a reused result came from (a request's ``source.kind``)."""

    CACHE = "cache"  # the key's local reuse history
    JOINED = "joined"  # another request's execution of the same key, waited for
    REMOTE = "remote"  # a record mirrored from the team review store
    DERIVED = "derived"  # a dependency eval: its verdict follows from its targets' evals
