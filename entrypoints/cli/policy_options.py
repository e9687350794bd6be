"""The selection and policy flags ``verify`` and ``status`` share, and their checks.

The eight flags are one table (``POLICY_OPTIONS``); ``with_policy_options`` declares them
for both commands (a command takes one ``policy: PolicyArgs`` parameter in their place).
``run_policy`` and ``selection`` turn the raw values into checked domain values or raise
``CommandError`` (exit 2, before any Run) naming the flag and rule.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from artifactize.entrypoints.cli.options import option
from artifactize.entrypoints.errors import CommandError

if TYPE_CHECKING:
    from artifactize.domain.reviews.run.policy import RunPolicy
    from artifactize.domain.reviews.run.selection import Selection

# ``--eval``, the one-eval selector of both commands (beside ARTIFACT/EVAL and --all).
EvalOption = Annotated[str | None, option("--eval", "One eval, ARTIFACT/EVAL.")]

# The eight flags in their order on the help: parameter, value type, flag, help text.
_FLAGS: tuple[tuple[str, type, str, str], ...] = (
    ("evals", str, "--evals", "Evals to select, comma-separated: A/E,B/F (selection order)."),
    ("artifacts", str, "--artifacts", "Artifacts whose evals to select, comma-separated: A,B."),
    (
        "profile",
        str,
        "--profile",
        "Use each eval's profile variant NAME (profile_variants); unknown: exit 2.",
    ),
    (
        "reuse_only",
        str,
        "--reuse-only",
        "Comma-separated kinds (runtime, agent, human) that may only reuse a verdict "
        "(local cache or team store): a miss is STALE, nothing runs, no person is asked, "
        "the Run is INCOMPLETE (exit 4).",
    ),
    (
        "jobs",
        int,
        "--jobs",
        "Evals run at once (default 4, 1-256); a waiting Human eval takes none.",
    ),
    (
        "max_executions",
        int,
        "--max-executions",
        "Executor starts this Run may make (default unlimited, 0 allowed); READY "
        "evals past it are BUDGET_EXHAUSTED (exit 4).",
    ),
    (
        "fingerprint_jobs",
        int,
        "--fingerprint-jobs",
        "Fingerprint scripts run at once (default: CPUs, 1-256); artifactsums are computed "
        "on the command's own thread.",
    ),
    (
        "shard",
        str,
        "--shard",
        "I/N: only the Ith of N disjoint, stable parts of the selected evals (CI matrices; "
        "docs/ci.md).",
    ),
)
# Each flag as typer reads a parameter's annotation.
POLICY_OPTIONS: dict[str, Any] = {
    name: Annotated[kind | None, typer.Option(flag, help=text)] for name, kind, flag, text in _FLAGS
}

FORCE_WITH_REUSE_ONLY = (
    "--force and --reuse-only conflict: --force reuses nothing, --reuse-only only reuses."
)


def run_policy(
    *,
    reuse_only: str | None = None,
    jobs: int | None = None,
    max_executions: int | None = None,
    fingerprint_jobs: int | None = None,
    profile: str | None = None,
    force: bool = False,
) -> RunPolicy:
    """The checked policy, or exit 2 naming the flag and the rule."""
    from artifactize.domain.declarations.identifiers import identifier_problem
    from artifactize.domain.reviews.run.policy import (
        FINGERPRINT_JOBS_MAX,
        JOBS_DEFAULT,
        PolicyError,
        RunPolicy,
        parse_reuse_only,
    )

    try:
        kinds = parse_reuse_only(reuse_only)
        if kinds and force:
            raise PolicyError(FORCE_WITH_REUSE_ONLY)
        if profile is not None:
            problem = identifier_problem(profile, "profile variant name")
            if problem is not None:
                raise PolicyError(f"--profile: {problem}")
        return RunPolicy(
            reuse_only=kinds,
            jobs=JOBS_DEFAULT if jobs is None else jobs,
            max_executions=max_executions,
            fingerprint_jobs=(
                min(os.cpu_count() or 1, FINGERPRINT_JOBS_MAX)
                if fingerprint_jobs is None
                else fingerprint_jobs
            ),
            profile=profile,
        )
    except PolicyError as exc:
        raise CommandError(str(exc)) from None


def selection(
    selector: str | None,
    eval_id: str | None,
    evals: str | None,
    artifacts: str | None,
    select_all: bool,
    *,
    default_all: bool = False,
    shard: str | None = None,
) -> Selection:
    """The one selector given, checked (``default_all``: none given means ``--all``)."""
    from artifactize.domain.reviews.run.selection import ONE_SELECTOR, Selection, SelectionError
    from artifactize.domain.reviews.run.shards import Shard, ShardError

    if selector is not None and eval_id is not None:
        raise CommandError(ONE_SELECTOR)
    try:
        part = None if shard is None else Shard.parse(shard)
    except ShardError as exc:
        raise CommandError(str(exc)) from None
    chosen = Selection(
        selector if selector is not None else eval_id, evals, artifacts, select_all, part
    )
    try:
        return chosen.check(default_all=default_all)
    except SelectionError as exc:
        raise CommandError(str(exc)) from None


@dataclass(frozen=True)
class PolicyArgs:
    """The eight shared flags as given (unchecked): the checks are ``selection`` and
    ``run_policy``."""

    evals: str | None = None
    artifacts: str | None = None
    profile: str | None = None
    reuse_only: str | None = None
    jobs: int | None = None
    max_executions: int | None = None
    fingerprint_jobs: int | None = None
    shard: str | None = None

    def selection(
        self, selector: str | None, eval_id: str | None, select_all: bool, *, default_all: bool
    ) -> Selection:
        return selection(
            selector,
            eval_id,
            self.evals,
            self.artifacts,
            select_all,
            default_all=default_all,
            shard=self.shard,
        )

    def run_policy(self, *, force: bool) -> RunPolicy:
        return run_policy(
            reuse_only=self.reuse_only,
            jobs=self.jobs,
            max_executions=self.max_executions,
            fingerprint_jobs=self.fingerprint_jobs,
            profile=self.profile,
            force=force,
        )


NO_FLAGS = PolicyArgs()  # the default of a command's ``policy`` parameter, replaced by the flags


def with_policy_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with the eight policy flags in place of its ``policy`` parameter, through
    the function's public signature (``__signature__``, which typer reads with
    ``inspect.signature``); the command receives them as one ``PolicyArgs``."""
    signature = inspect.signature(command, eval_str=True)
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name != "policy":
            parameters.append(parameter)
            continue
        parameters += [
            inspect.Parameter(name, parameter.kind, default=None, annotation=annotation)
            for name, annotation in POLICY_OPTIONS.items()
        ]

    @functools.wraps(command)
    def with_flags(**given: Any) -> None:
        policy = PolicyArgs(**{name: given.pop(name) for name in POLICY_OPTIONS})
        command(policy=policy, **given)

    with_flags.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    with_flags.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_flags
