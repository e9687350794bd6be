"""``verify``, ``run show/list`` and ``cache list/show/rm``: Runs, verdicts and their reuse.

Exit codes of ``verify``: 0 GREEN, 1 RED, 2 ERROR, cancelled or invalid input, 3 Human
wait timeout (``--wait``), 4 INCOMPLETE. Readers (``run``, ``cache``) never create state.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from artifactize.domain.reviews.human.wait_limits import (
    WAIT_NEEDS_WAIT,
    WAIT_TIMEOUT_DEFAULT_MS,
    check_wait_timeout,
)
from artifactize.entrypoints.cli import ci_reports, policy_options
from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode, exit_for_status
from artifactize.entrypoints.cli.options import argument, option
from artifactize.entrypoints.cli.output import emit
from artifactize.entrypoints.cli.output import emit_json as _emit_json
from artifactize.entrypoints.cli.render.runs import (
    cache_list_line,
    run_list_header,
    run_list_line,
    run_show_text,
    run_text,
)
from artifactize.entrypoints.cli.usage import ConventionalTyper
from artifactize.entrypoints.errors import CommandError
from artifactize.entrypoints.signals import until_signal
from artifactize.kernel.document_codec import execution_json
from artifactize.ports.ids import ReuseKey, RunId
from artifactize.ports.review_store import RemoteFailure
from artifactize.ports.state import KeyInUse, RunRecord
from artifactize.ports.statuses import RunStatus

if TYPE_CHECKING:
    from artifactize.domain.reviews.run.documents import RunResult
    from artifactize.domain.reviews.run.policy import VerifyOptions
    from artifactize.domain.reviews.run.selection import Selection
    from artifactize.entrypoints.bootstrap import PreparedRun, VerifyPlanning
    from artifactize.entrypoints.cli.ci_reports import CiReports
    from artifactize.ports.state import StateStore

RUN_LIST_DEFAULT_LIMIT = 50
READING_PHASE = "Reading declarations and fingerprints"
RUNNING_STATUS = RunStatus.RUNNING  # a Run not finished yet (or whose verifier died)
RUN_POLL_SECONDS = 0.1  # how often `run show --wait` reads the Run again (at most 0.2 s)

run_app = ConventionalTyper(help="Show saved Runs.", no_args_is_help=True)
cache_app = ConventionalTyper(help="Inspect and clear reusable verdicts.", no_args_is_help=True)

ReuseKeyArgument = Annotated[str, argument("A reuse key (64 hex).")]


# ``--wait`` and ``--timeout-ms``, of both commands that wait for a Run (verify, run show).
def _wait_flag(until: str) -> Any:
    return option("--wait", f"Stay until {until}")


def _timeout(span: str, then: str = "") -> Any:
    """``--timeout-ms``: how long ``--wait`` waits, over ``span``; ``then`` what follows."""
    limits = f"(default {WAIT_TIMEOUT_DEFAULT_MS}, 1-2147483647)"
    return option("--timeout-ms", f"With --wait: how long to wait{span} {limits}{then}.")


def _emit_rows(
    rows: list[dict[str, Any]], empty: str, line: Callable[[dict[str, Any]], str]
) -> None:
    """Rows as a JSON array with --json, else one text line each (or ``empty``)."""
    if CliContext.options.json:
        _emit_json(rows)
        return
    typer.echo("\n".join(line(row) for row in rows) if rows else empty)


@policy_options.with_policy_options
def verify(
    selector: Annotated[str | None, argument("ARTIFACT (its evals) or ARTIFACT/EVAL.")] = None,
    eval_id: policy_options.EvalOption = None,
    select_all: Annotated[bool, option("--all", "Every eval of the workspace.")] = False,
    force: Annotated[
        bool, option("--force", "Review again; never reuse or join earlier results.")
    ] = False,
    recursive: Annotated[
        bool,
        option(
            "--recursive",
            "Also run every eval of the required scope (what the selection consumes).",
        ),
    ] = False,
    ignore_gates: Annotated[
        bool,
        option("--ignore-gates", "Run evals before their inputs are GREEN; the obligations stay."),
    ] = False,
    wait: Annotated[bool, _wait_flag("the Human reviews are submitted (same Run).")] = False,
    timeout_ms: Annotated[int | None, _timeout(", from when scheduling starts")] = None,
    policy: policy_options.PolicyArgs = policy_options.NO_FLAGS,
    junit: ci_reports.JunitOption = None,
    quiet: ci_reports.QuietOption = False,
    comment: Annotated[
        str | None,
        option(
            "--comment",
            "Why this Run is started (one line, at most 500 characters); shown by "
            "run show, the monitor and the control surface's run_show.",
        ),
    ] = None,
) -> None:
    """Review the selected evals, reusing every verdict whose key still holds.

    The selected evals' targets and everything they consume are the Run's obligation:
    each needs all of its evals GREEN (or `basis = true`). An eval runs once every eval of
    the Artifacts it consumes is GREEN; a RED input blocks it.

    Exit codes: 0 GREEN, 1 RED, 2 ERROR or cancelled, 3 Human wait timeout (--wait),
    4 INCOMPLETE (an obligation unmet: an eval not run, waiting or blocked, past
    --max-executions, or a --reuse-only miss).

    In CI: `verify --all --reuse-only agent,human --junit PATH`; with GITHUB_ACTIONS=true it
    also writes the step summary and ::error annotations (docs/ci.md).
    """
    chosen = policy.selection(selector, eval_id, select_all, default_all=False)
    wait_timeout_ms, comment = _checked_wait(wait, timeout_ms), _checked_comment(comment)
    options = _options_for(
        force=force,
        wait=wait,
        wait_timeout_ms=wait_timeout_ms,
        recursive=recursive,
        ignore_gates=ignore_gates,
        policy=policy.run_policy(force=force),
        comment=comment,
    )
    report = ci_reports.CiReports.from_environment(junit, CliContext.options.repo, quiet=quiet)
    planning = _planning(chosen, options, report, quiet)
    if planning is not None:
        _replay(planning, quiet)
    prepared, outcome, progress = _run_verify(chosen, options, report, quiet, planning)
    result = prepared.service.result
    if result is None:
        raise CommandError("The Run was cancelled before it started.")
    prepared.remove_empty_scratch(str(result.run.id))
    exit_code = _verify_exit(outcome, result)
    with prepared.service.paused():  # a document per request, all kept until printed
        emit(run_view(result), lambda _: report.text(result, run_text))
        report.write(result, prepared.service.workspace, json_output=CliContext.options.json)
        if outcome is not None and progress is not None:
            CliContext.services().keep_verify_plan(
                prepared, result, progress, lambda shown: _answer(shown, report), exit_code
            )
    raise typer.Exit(exit_code)


def _planning(
    chosen: Selection,
    options: Callable[[str, str], VerifyOptions],
    report: CiReports,
    quiet: bool,
) -> VerifyPlanning | None:
    """Where this invocation's Run plan is kept, when its Run may be replayed: it writes
    no JUnit file nor GitHub report (docs/reviews.md, "A replayed Run"). A terminal's live
    progress prints other lines than a pipe's: each keeps its own plan."""
    from artifactize.entrypoints.bootstrap import verify_invocation
    from artifactize.entrypoints.cli.progress import is_live_terminal

    if report.junit is not None or report.github:
        return None
    services = CliContext.services()
    live = is_live_terminal(sys.stderr, os.environ)
    invocation = verify_invocation(chosen, services.verify_options(options), quiet, live)
    return services.verify_planning(invocation)


def _replay(planning: VerifyPlanning, quiet: bool) -> None:
    """Print the Run replayed from the kept plan and exit its code, when it holds."""
    from artifactize.entrypoints.cli.output import emit_kept
    from artifactize.entrypoints.cli.progress import display_for_verify

    services = CliContext.services()
    with services.replay_paused() as exiting:
        replayed = services.replay_verify(planning)
        if replayed is None:
            return
        exiting()  # what the replay made stays alive to the end of the command
        display_for_verify(sys.stderr, quiet=quiet).replay(replayed.progress)
        emit_kept(replayed.answer)
    raise typer.Exit(replayed.exit_code)


def _answer(result: RunResult, report: CiReports) -> str:
    """What ``verify`` prints on stdout for ``result``, as ``emit`` prints it."""
    from artifactize.entrypoints.cli.output import json_text

    if CliContext.options.json:
        return json_text(run_view(result)) + "\n"
    return report.text(result, run_text) + "\n"


def _checked_comment(comment: str | None) -> str | None:
    """``--comment``: one line, at most the documented length (exit 2 otherwise)."""
    from artifactize.domain.reviews.run.policy import check_comment

    if comment is not None:
        try:
            check_comment(comment)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
    return comment


def _options_for(**chosen: Any) -> Callable[[str, str], VerifyOptions]:
    """The Run's options (``VerifyOptions`` fields) once the repository and the state home
    are known."""
    from artifactize.domain.reviews.run.policy import VerifyOptions

    def options(repo: str, state: str) -> VerifyOptions:
        return VerifyOptions(repo=repo, state_dir=state, **chosen)

    return options


def _run_verify(
    chosen: Selection,
    options: Callable[[str, str], VerifyOptions],
    report: CiReports,
    quiet: bool,
    planning: VerifyPlanning | None,
) -> tuple[PreparedRun, object | None, list[tuple[bool, str]] | None]:
    """Prepare and run, with the live progress display (closed, its block cleared, on every
    path); the outcome is None when a signal cancelled the Run. With ``planning``, the
    progress lines printed are recorded and returned too."""
    import anyio

    from artifactize.entrypoints.cli.progress import display_for_verify

    display = display_for_verify(sys.stderr, quiet=quiet).start()
    if planning is not None:
        display.record()
    services = CliContext.services()
    services.progress, services.observer = display.notice, display
    try:
        display.phase(READING_PHASE)
        prepared = services.prepare_verify(chosen, chosen.select_all, options, planning)
        try:
            report.check_outside_artifacts(
                prepared.service.options.repo, prepared.service.workspace
            )
            display.phase(None)
            return prepared, anyio.run(until_signal, prepared.run), display.recorded
        except RemoteFailure as failure:
            _remote_failed(prepared, failure)
        finally:
            prepared.close()  # the Run's freeze, also when it never ran
    finally:
        display.close()


def _remote_failed(prepared: PreparedRun, failure: RemoteFailure) -> NoReturn:
    """The team store failed the Run: with ``--json`` the Run so far and the error, else the
    error alone (exit 2 either way)."""
    if prepared.service.result is not None and CliContext.options.json:
        _emit_json({**run_view(prepared.service.result), "error": failure.message})
        raise typer.Exit(ExitCode.ERROR) from None
    raise CommandError(failure.message) from None


def _verify_exit(outcome: object | None, result: RunResult) -> int:
    if outcome is None:
        return ExitCode.ERROR  # cancelled by a signal
    if result.run.wait_timed_out:
        return ExitCode.WAIT_TIMED_OUT
    return exit_for_status(result.status)


def _checked_wait(wait: bool, timeout_ms: int | None) -> int:
    """``--timeout-ms`` needs ``--wait``; the wait it gives (or the default)."""
    if timeout_ms is not None and not wait:
        raise CommandError(WAIT_NEEDS_WAIT)
    return _wait_timeout(timeout_ms)


def _wait_timeout(timeout_ms: int | None) -> int:
    """``--timeout-ms`` checked (1-2147483647), or the default wait."""
    try:
        return check_wait_timeout(WAIT_TIMEOUT_DEFAULT_MS if timeout_ms is None else timeout_ms)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def run_view(result: RunResult) -> dict[str, Any]:
    """The Run with its requests, its summaries computed from them as they stand."""
    from artifactize.domain.reviews.run.current import current_run

    return current_run(result.run, result.requests)


@run_app.command("show")
def run_show(
    run_id: Annotated[str, argument("A Run ID, e.g. run-Hq2b9X.")],
    wait: Annotated[bool, _wait_flag("the Run is no longer RUNNING; exit its code.")] = False,
    timeout_ms: Annotated[
        int | None, _timeout("", "; then print the Run as it is and exit 3")
    ] = None,
) -> None:
    """Print a saved Run with its requests (the full document with --json). Needs no
    repository; runs nothing.

    With --wait, poll until the Run settled (another terminal's `verify` finishes it), then
    exit 0 GREEN, 1 RED, 2 ERROR, 4 INCOMPLETE; 3 when --timeout-ms passed first.
    """
    from artifactize.domain.reviews.run.current import current_run

    limit_ms = _checked_wait(wait, timeout_ms)
    store = CliContext.services().open_state(create=False)
    run = store.get_run(RunId(run_id)) if store is not None else None
    if run is None or store is None:
        raise CommandError(f"Unknown Run: {run_id}")
    if wait:
        run = _until_settled(store, run, limit_ms)
    view = current_run(run.data, [r.data for r in store.list_requests(RunId(run_id))])
    if CliContext.options.json:
        _emit_json(view)
    else:
        typer.echo(run_show_text(view))
    if wait:
        settled = run.status != RUNNING_STATUS
        raise typer.Exit(exit_for_status(run.status) if settled else ExitCode.WAIT_TIMED_OUT)


def _until_settled(store: StateStore, run: RunRecord, limit_ms: int) -> RunRecord:
    """Poll until the Run is no longer RUNNING (a dead owner's Run settles too) or the wait
    ran out; a signal ends the command (exit 2)."""
    import anyio

    clock = CliContext.container.clock()
    deadline = clock.monotonic() + limit_ms / 1000

    async def poll() -> RunRecord:
        status = run.status
        while status == RUNNING_STATUS and clock.monotonic() < deadline:
            await anyio.sleep(min(RUN_POLL_SECONDS, max(0.0, deadline - clock.monotonic())))
            CliContext.services().settle_dead_runs(store)
            head = store.run_head(run.id)  # its status alone, not the Run
            status = head.status if head is not None else status
        return store.get_run(run.id) or run

    polled = anyio.run(until_signal, poll)
    if polled is None:
        raise typer.Exit(ExitCode.ERROR)
    return polled


@run_app.command("cancel")
def run_cancel(run_id: Annotated[str, argument("A RUNNING Run's ID.")]) -> None:
    """Stop a Run another process is running: its owner cancels its reviews, stops the
    processes it started and records the Run CANCELLED; prints the Run (as run show does; --json: its document). Exit 0 once it
    stopped, 2 when the Run is unknown, already ended, or did not stop in time."""
    from artifactize.domain.reviews.run.current import current_run
    from artifactize.entrypoints.run_cancel import cancel_run

    services = CliContext.services()
    run = cancel_run(services, run_id)
    store = services.open_state(create=False)
    requests = [r.data for r in store.list_requests(run.id)] if store is not None else []
    emit(current_run(run.data, requests), run_show_text)  # the Run as run show prints it


@run_app.command("list")
def run_list(
    all_repos: Annotated[bool, option("--all", "Runs of every repository.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1)] = RUN_LIST_DEFAULT_LIMIT,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
) -> None:
    """Runs newest first, for this repository (or --all)."""
    store = CliContext.services().open_state(create=False)
    repo = None if all_repos else os.path.realpath(CliContext.options.repo)
    runs = store.list_runs(repo, limit, offset) if store is not None else []
    counts = store.status_counts([run.id for run in runs]) if store is not None else {}
    rows = [
        {
            "id": run.id,
            "repo": run.repo,
            "status": run.status,
            "createdAt": run.data.created_at,
            "completedAt": run.data.completed_at,
            "counts": counts.get(run.id, {}),
        }
        for run in runs
    ]
    header = None if CliContext.options.json else run_list_header(rows)
    if header is not None:  # a header row names the columns
        typer.echo(header)
    _emit_rows(rows, "No Runs.", run_list_line)


@cache_app.command("list")
def cache_list() -> None:
    """The latest reusable record of every key."""
    store = CliContext.services().open_state(create=False)
    latest = store.latest_records() if store is not None else []
    rows = [
        {
            "key": record.key,
            "evalId": record.data.eval_id,
            "verdict": record.status,
            "completedAt": record.completed_at,
            "executionId": record.id,
            "runId": record.data.run_id,
            "producer": (record.data.producer or {}).get("name"),
            "records": count,
        }
        for record, count in latest
    ]

    _emit_rows(rows, "No reusable records.", cache_list_line)


@cache_app.command("show")
def cache_show(
    key: ReuseKeyArgument,
    history: Annotated[bool, option("--history", "Every record, newest first.")] = False,
) -> None:
    """The latest saved execution of KEY as JSON; `null` and exit 4 when there is none."""
    store = CliContext.services().open_state(create=False)
    if history:
        records = store.history(ReuseKey(key)) if store is not None else []
        _emit_json([execution_json(r.data) for r in records])
        raise typer.Exit(ExitCode.OK if records else ExitCode.INCOMPLETE)
    record = store.latest_record(ReuseKey(key), touch=False) if store is not None else None
    _emit_json(execution_json(record.data) if record is not None else None)
    raise typer.Exit(ExitCode.OK if record is not None else ExitCode.INCOMPLETE)


@cache_app.command("rm")
def cache_rm(key: ReuseKeyArgument) -> None:
    """Forget KEY's reusable records; the Runs and executions stay."""
    store = CliContext.services().open_state(create=False)
    try:
        removed = store.remove_key(ReuseKey(key)) if store is not None else False
    except KeyInUse:
        raise CommandError(f"Key {key} is in use by an active execution or waiter.") from None
    _emit_json({"removed": removed})
