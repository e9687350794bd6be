"""The words that state, output and the review store share: statuses, verdicts, codes, kinds.

Each is a ``StrEnum``, defined once here because they cross every layer: a member *is* its
string (``Verdict.GREEN == "GREEN"``, ``json.dumps`` writes ``"GREEN"``, an f-string
prints ``GREEN``), so saved state, ``--json`` output and store records read exactly as
before. Text read back from JSON stays a plain ``str`` that compares equal to the member.
Never ``repr`` a member into text: its repr is ``<Verdict.GREEN: 'GREEN'>``.
"""

from __future__ import annotations

import enum


class RunStatus(enum.StrEnum):
    """The saved ``status`` of a Run: RUNNING, then GREEN, RED, ERROR or INCOMPLETE (an
    obligation is unmet). An INCOMPLETE Run settles again when its last waiting Human request
    does (``kernel.transitions`` holds the legal moves)."""

    RUNNING = "RUNNING"
    GREEN = "GREEN"
    RED = "RED"
    ERROR = "ERROR"
    INCOMPLETE = "INCOMPLETE"


class RequestStatus(enum.StrEnum):
    """The saved ``status`` of a request (one eval of a Run).

    QUEUED → (WAIT_DEPENDENCY | BLOCKED)* → RUNNING or WAITING_HUMAN → GREEN, RED or ERROR;
    or it stays UNREVIEWED when this ``verify`` does not review its kind, STALE when
    ``--reuse-only`` found no reusable verdict, BUDGET_EXHAUSTED past ``--max-executions``. A
    Human wait may also end without a verdict: SUPERSEDED (a later ``verify`` found the
    declarations it was recorded with changed, and asked again) or CANCELLED (``request
    cancel``). Neither is evidence: the eval is simply not reviewed by that request."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    WAIT_DEPENDENCY = "WAIT_DEPENDENCY"
    BLOCKED = "BLOCKED"
    WAITING_HUMAN = "WAITING_HUMAN"
    UNREVIEWED = "UNREVIEWED"
    STALE = "STALE"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    GREEN = "GREEN"
    RED = "RED"
    ERROR = "ERROR"
    SUPERSEDED = "SUPERSEDED"
    CANCELLED = "CANCELLED"


class ExecutionStatus(enum.StrEnum):
    """The saved ``status`` of an execution: RUNNING or WAITING_HUMAN while it holds its key,
    then GREEN, RED or ERROR (a Human wait that ends without a verdict ends ERROR)."""

    RUNNING = "RUNNING"
    WAITING_HUMAN = "WAITING_HUMAN"
    GREEN = "GREEN"
    RED = "RED"
    ERROR = "ERROR"


class Verdict(enum.StrEnum):
    """What a review decided: the ``verdict`` of a result and of a store record; a request or
    execution that settled with it takes the status of the same name."""

    GREEN = "GREEN"
    RED = "RED"


VERDICTS: tuple[Verdict, Verdict] = (Verdict.GREEN, Verdict.RED)
# A Run's, request's or execution's status that names a verdict (it settled with one).
VERDICT_STATUSES: frozenset[str] = frozenset(VERDICTS)


class ValidationStatus(enum.StrEnum):
    """Whether a Run's obligations are met (its ``validation.status``)."""

    SATISFIED = "SATISFIED"
    NOT_SATISFIED = "NOT_SATISFIED"


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
