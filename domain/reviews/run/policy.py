"""A Run's execution policy: what ``verify`` (and ``status``) may do, checked before any Run.

``--reuse-only KINDS`` (evals of those kinds only reuse), ``--jobs N`` (concurrent evals),
``--max-executions N`` (executor starts per Run), ``--fingerprint-jobs N`` (concurrent
fingerprint scripts) and ``--profile NAME`` (a profile variant). Every check raises
``PolicyError`` naming the flag and the rule, so the CLI exits 2 before it creates a Run
(reference/declarations.md §4.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from artifactize.kernel.document_codec import run_changed
from artifactize.ports.documents import Run
from artifactize.ports.statuses import PROFILE_KINDS, ProfileKind

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
