"""A Run's execution policy: what ``verify`` (and ``status``) may do, checked before any Run.

``--reuse-only KINDS`` (evals of those kinds only reuse), ``--jobs N`` (concurrent evals),
``--max-executions N`` (executor starts per Run), ``--fingerprint-jobs N`` (concurrent
fingerprint scripts) and ``--profile NAME`` (a profile variant). Every check raises
``PolicyError`` naming the flag and the rule, so the CLI exits 2 before it creates a Run
(reference/declarations.md §4.4). Also the Run's options (``VerifyOptions``) and its budget
of executor starts (``ExecutionBudget``).
"""

from __future__ import annotations

from dataclasses import dataclass

from artifactize.domain.reviews.human.wait_limits import WAIT_TIMEOUT_DEFAULT_MS, check_wait_timeout
from artifactize.kernel.document_codec import run_changed
from artifactize.ports.documents import Run
from artifactize.ports.statuses import PROFILE_KINDS, ProfileKind, RequestStatus

JOBS_DEFAULT = 4
JOBS_MIN = 1
JOBS_MAX = 256  # a Run's evals share one event loop; more slots would only queue processes
FINGERPRINT_JOBS_MIN = 1
FINGERPRINT_JOBS_MAX = 256
MAX_EXECUTIONS_MIN = 0  # 0: every READY request that would start an executor is refused
MAX_EXECUTIONS_MAX = 2_147_483_647
REUSE_ONLY_KINDS: tuple[ProfileKind, ...] = PROFILE_KINDS

UNKNOWN_KIND = "--reuse-only takes a comma-separated list of {kinds}; unknown kind {kind!r}."
EMPTY_KINDS = "--reuse-only takes a comma-separated list of {kinds}; got an empty list."
RANGE = "{flag} must be between {low} and {high}, got {value}."


class PolicyError(ValueError):
    """A policy flag outside its rule (exit 2 before any Run)."""


def parse_reuse_only(text: str | None) -> frozenset[ProfileKind]:
    """``runtime,agent,human`` (any subset, any order, spaces allowed) as profile kinds."""
    if text is None:
        return frozenset()
    names = [part.strip() for part in text.split(",")]
    allowed = ", ".join(REUSE_ONLY_KINDS)
    if not any(names):
        raise PolicyError(EMPTY_KINDS.format(kinds=allowed))
    kinds: set[ProfileKind] = set()
    for name in names:
        if name not in REUSE_ONLY_KINDS:
            raise PolicyError(UNKNOWN_KIND.format(kinds=allowed, kind=name))
        kinds.add(ProfileKind(name))
    return frozenset(kinds)


def check_range(flag: str, value: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not low <= value <= high:
        raise PolicyError(RANGE.format(flag=flag, low=low, high=high, value=value))
    return value


@dataclass(frozen=True)
class RunPolicy:
    """The checked policy of one ``verify`` or ``status``."""

    reuse_only: frozenset[ProfileKind] = frozenset()
    jobs: int = JOBS_DEFAULT
    max_executions: int | None = None  # None: unlimited
    fingerprint_jobs: int | None = None  # None: one per CPU
    profile: str | None = None  # a profile variant name

    def __post_init__(self) -> None:
        check_range("--jobs", self.jobs, JOBS_MIN, JOBS_MAX)
        if self.max_executions is not None:
            check_range(
                "--max-executions", self.max_executions, MAX_EXECUTIONS_MIN, MAX_EXECUTIONS_MAX
            )
        if self.fingerprint_jobs is not None:
            check_range(
                "--fingerprint-jobs",
                self.fingerprint_jobs,
                FINGERPRINT_JOBS_MIN,
                FINGERPRINT_JOBS_MAX,
            )

    def reuses_only(self, kind: str) -> bool:
        return kind in self.reuse_only

    def recorded_on(self, run: Run) -> Run:
        """``run`` with what it records of this policy (``reuseOnly``, ``jobs``,
        ``maxExecutions``, ``fingerprintJobs``, ``profileVariant``, in that order)."""
        return run_changed(
            run,
            reuse_only=sorted(self.reuse_only),
            jobs=self.jobs,
            max_executions=self.max_executions,
            fingerprint_jobs=self.fingerprint_jobs,
            profile_variant=self.profile,
        )


DEFAULT_POLICY = RunPolicy()


# A verify's options, apart from the Run's context: the command parses and checks them, and
# keys a replayed Run by them (``run.replay``), before any workspace is loaded.


@dataclass(frozen=True)
class VerifyOptions:
    repo: str
    state_dir: str
    force: bool = False
    wait: bool = False  # poll until the Run's Human requests settle
    recursive: bool = False  # execute every eval of the required scope, not only the selected
    ignore_gates: bool = False  # run evals whose inputs are not GREEN yet (obligations stay)
    wait_timeout_ms: int = WAIT_TIMEOUT_DEFAULT_MS  # from when scheduling starts
    policy: RunPolicy = DEFAULT_POLICY  # --reuse-only, --jobs, --max-executions, --profile
    comment: str | None = None  # --comment: why the Run was started, as its starter says

    def __post_init__(self) -> None:
        check_wait_timeout(self.wait_timeout_ms)
        if self.comment is not None:
            check_comment(self.comment)


COMMENT_MAX_CHARS = 500


def check_comment(text: str) -> str:
    """``--comment``: one line of at most COMMENT_MAX_CHARS characters, not blank."""
    if not text.strip():
        raise ValueError("--comment must not be blank.")
    if len(text) > COMMENT_MAX_CHARS:
        raise ValueError(f"--comment is {len(text)} characters; at most {COMMENT_MAX_CHARS}.")
    if any(char in text for char in "\r\n"):
        raise ValueError("--comment must be one line.")
    return text


# ``--max-executions N``: how many executor starts a Run may make.
#
# A start is a runtime command or an Agent review this Run executes itself. Reuse (cache,
# team store, a joined execution) and asking a person start nothing, so they need no
# budget. A READY request that would start an executor past the limit settles
# BUDGET_EXHAUSTED, and the Run is INCOMPLETE (exit 4). With concurrent jobs a slot of the
# budget is *reserved* before the key is claimed and released again if the claim ends in
# reuse, so two jobs never both take the last start.

BUDGET_EXHAUSTED = RequestStatus.BUDGET_EXHAUSTED
EXHAUSTED_REASON = (
    "--max-executions {limit}: this Run already started {limit} executor(s); "
    "verify again to review it."
)


@dataclass
class ExecutionBudget:
    limit: int | None  # None: unlimited
    reserved: int = 0

    def reserve(self) -> bool:
        """Take one start; False when the budget is spent."""
        if self.limit is not None and self.reserved >= self.limit:
            return False
        self.reserved += 1
        return True

    def release(self) -> None:
        """Give back a start that was not used (the claim found something to reuse)."""
        self.reserved -= 1

    def reason(self) -> str:
        return EXHAUSTED_REASON.format(limit=self.limit)
