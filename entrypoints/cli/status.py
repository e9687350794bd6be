"""``status [SELECTOR]``: what ``verify`` would do, read-only (reference/declarations.md §4.5).

It computes fingerprints and reads the state; it never runs an eval or a tool, never
creates a Run or a state database (a missing one reads as "nothing reviewed yet"), and
never updates a record's last-used time.

Exit codes: 0 every obligation of the required scope is met, 1 some remain, 2 invalid
input, an unusable state or a fingerprint failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from artifactize.entrypoints.cli import policy_options
from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.options import argument, option
from artifactize.entrypoints.cli.output import json_text
from artifactize.entrypoints.errors import CommandError

if TYPE_CHECKING:
    from artifactize.domain.use_cases.status import StatusReport
    from artifactize.ports.stored_answers import StoredAnswer

ONE_SELECTOR = "Give at most one selector: ARTIFACT, ARTIFACT/EVAL, --eval or --all."


def _as_verify(flag: str, effect: str) -> Any:
    """A flag of ``verify``'s that ``status`` takes too, with what it changes here."""
    return option(flag, f"As verify {flag}: {effect}")


@policy_options.with_policy_options
def status_command(
    selector: Annotated[
        str | None, argument("ARTIFACT (its evals) or ARTIFACT/EVAL; default --all.")
    ] = None,
    eval_id: policy_options.EvalOption = None,
    select_all: Annotated[
        bool, option("--all", "Every eval of the workspace (the default).")
    ] = False,
    recursive: Annotated[bool, _as_verify("--recursive", "every scope eval would run.")] = False,
    ignore_gates: Annotated[
        bool, _as_verify("--ignore-gates", "no eval waits for inputs.")
    ] = False,
    force: Annotated[bool, _as_verify("--force", "selected evals reuse nothing.")] = False,
    policy: policy_options.PolicyArgs = policy_options.NO_FLAGS,
) -> None:
    """Show what `verify` would do: per eval its state, action and reason. Runs nothing.

    Exit codes: 0 every obligation is met, 1 obligations remain, 2 invalid input, state or
    a fingerprint failure.
    """
    given = [x for x in (selector, eval_id) if x is not None]
    if len(given) + int(select_all) > 1:
        raise CommandError(ONE_SELECTOR)
    chosen = policy.selection(selector, eval_id, select_all, default_all=True)
    from artifactize.domain.use_cases.status import StatusOptions

    options = StatusOptions(
        recursive=recursive,
        ignore_gates=ignore_gates,
        force=force,
        policy=policy.run_policy(force=force),
    )
    services = CliContext.services()
    with services.collector_paused():
        # A state that cannot be read: StateError, exit 2. The answer may be the one kept
        # when nothing it was made of changed since (docs/reviews.md, "Stored answers").
        answer = services.status_answer(chosen, options, _rendered)
        typer.echo(answer.text)
    raise typer.Exit(answer.exit_code)


def _rendered(report: StatusReport) -> StoredAnswer:
    """The report as this invocation prints it (``--json`` or text), and its exit code."""
    from artifactize.ports.stored_answers import StoredAnswer

    if CliContext.options.json:
        text = json_text(report.to_json())
    else:
        from artifactize.entrypoints.cli.render.status import status_text

        text = status_text(report)
    return StoredAnswer.of(text, exit_code(report))


def exit_code(report: StatusReport) -> int:
    if report.fingerprint_failures:
        return ExitCode.ERROR
    return ExitCode.OK if report.satisfied else ExitCode.NOT_READY
