"""``artifactize request …``: list, show, claim, release, run tools and submit Human reviews.

Exit codes: 0 success (``request submit`` also for a RED verdict); 2 for a refused or
failed action (not found, not waiting, not the claimant, changed declarations, invalid
result, a recheck that settled the request ERROR, a publishing failure after the local
settle) and for a Human tool that returned an error (``request tool``). Readers (``list``,
``show``) never create state and need no repository.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.options import ReviewerOption, argument, option
from artifactize.entrypoints.cli.output import emit as _emit
from artifactize.entrypoints.cli.output import emit_json as _emit_json
from artifactize.entrypoints.cli.output import emit_json_array
from artifactize.entrypoints.cli.render import requests as render
from artifactize.entrypoints.cli.usage import ConventionalTyper
from artifactize.entrypoints.errors import CommandError
from artifactize.entrypoints.fields_file import read_fields_file
from artifactize.entrypoints.signals import until_signal
from artifactize.ports.ids import RequestId, RunId
from artifactize.ports.state import StateError

if TYPE_CHECKING:
    from artifactize.domain.use_cases.human_reviews import HumanReviews

LAUNCHED_TEXT = "Launched {tool}."
NO_REQUESTS = "No requests."
TAB = "\t"  # between the fields of a text list's line
STATUS_AND_WAITING = "Give --status or --waiting, not both (--waiting is --status WAITING_HUMAN)."
ACTION_CANCELLED = "The Human action was cancelled."

request_app = ConventionalTyper(
    help="List, claim and submit Human review requests.", no_args_is_help=True
)

T = TypeVar("T")

# The request a lifecycle command acts on, as its help names it.
WaitingRequest = Annotated[str, argument("A waiting Human request ID.")]
ClaimedRequest = Annotated[str, argument("A Human request ID you claimed.")]


def _run(work: Callable[[], Awaitable[T]]) -> T:
    """Run a lifecycle action; Ctrl-C or SIGTERM cancels it (exit 2), errors exit 2."""
    import anyio

    from artifactize.domain.reviews.human.errors import HumanReviewError

    try:
        outcome = anyio.run(until_signal, work)
    except HumanReviewError as exc:
        raise CommandError(exc.message) from None
    except StateError as exc:
        raise CommandError(str(exc)) from None
    if outcome is None:
        raise CommandError(ACTION_CANCELLED)
    return outcome


def _lifecycle(request_id: str, reviewer: str | None) -> tuple[str, HumanReviews]:
    """Who acts (``--reviewer``, else ``$USER``) and the Human review lifecycle over the
    existing state (``reviews.ports.state``); no state, or no such request, exits 2."""
    services = CliContext.services()
    name = services.reviewer_name(reviewer)
    return name, services.human_reviews(services.existing_state(request_id))


def _act(
    request_id: str,
    reviewer: str | None,
    action: Callable[[HumanReviews, RequestId, str], Awaitable[T]],
) -> tuple[T, HumanReviews]:
    """``action(reviews, request, who)`` run as a lifecycle action (``_run``) by who acts
    (``_lifecycle``); its outcome and the lifecycle."""
    name, reviews = _lifecycle(request_id, reviewer)
    return _run(lambda: action(reviews, RequestId(request_id), name)), reviews


@request_app.command("list")
def request_list(
    run_id: Annotated[str | None, option("--run", "Only this Run's requests.")] = None,
    status: Annotated[
        str | None, option("--status", "Only these statuses, comma-separated: S[,S].")
    ] = None,
    waiting: Annotated[bool, option("--waiting", "Only requests waiting for a person.")] = False,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="At most this many (default: all).")
    ] = None,
    ids: Annotated[
        bool, option("--ids", "Only the request IDs, one a line (for scripts).")
    ] = False,
) -> None:
    """Saved requests (waiting, claimed, settled), newest Run first; filters narrow them."""
    from artifactize.domain.use_cases.request_views import RequestViews

    statuses = _statuses(status, waiting)
    services = CliContext.services()
    store = services.open_state(create=False)
    json_output = CliContext.options.json
    # One read, written as it is read: a Run (or a page of lines) at a time. Its documents
    # make no cycles, so the collector waits (its passes were 40% of a 158,000-request list).
    with services.collector_paused(), contextlib.ExitStack() as reading:
        run = None if run_id is None else RunId(run_id)
        reader = None if store is None else RequestViews(store)
        if store is not None:
            reading.enter_context(store.batch(write=False))
        if json_output:
            pages = iter(()) if reader is None else reader.pages(run, statuses, limit)
            emit_json_array(view for page in pages for view in page)
            return
        lines = iter(()) if reader is None else reader.line_pages(run, statuses, limit)
        _print_lines(lines, ids=ids)


def _print_lines(pages: Iterator[list[str]], *, ids: bool) -> None:
    """The text list, a page of lines at a time (one write each); ``--ids``: each line's
    first field, the request ID (IDs hold no tab)."""
    from artifactize.domain.use_cases.request_views import LIST_COLUMNS

    if ids:
        for page in pages:
            typer.echo("".join(f"{line.partition(TAB)[0]}\n" for line in page), nl=False)
        return
    heading = [TAB.join(LIST_COLUMNS)]  # above the first page; "No requests." without one
    for page in pages:
        typer.echo("\n".join([*heading, *page]))
        heading = []
    if heading:
        typer.echo(NO_REQUESTS)


def _statuses(status: str | None, waiting: bool) -> frozenset[str] | None:
    """``--status S[,S]`` or ``--waiting`` (not both); None: every status."""
    from artifactize.domain.use_cases.request_views import parse_statuses
    from artifactize.ports.statuses import RequestStatus

    if status is not None and waiting:
        raise CommandError(STATUS_AND_WAITING)
    if waiting:
        return frozenset({RequestStatus.WAITING_HUMAN})
    try:
        return parse_statuses(status) if status is not None else None
    except ValueError as exc:
        raise CommandError(str(exc)) from None


@request_app.command("show")
def request_show(request_id: Annotated[str, argument("A request ID.")]) -> None:
    """The request with its claim, source execution and saved definition, as JSON."""
    from artifactize.domain.reviews.human.errors import REQUEST_ID_NOT_FOUND
    from artifactize.domain.use_cases.request_views import RequestViews

    store = CliContext.services().existing_state(request_id)
    request = store.get_request(RequestId(request_id))
    if request is None:
        raise CommandError(REQUEST_ID_NOT_FOUND.format(id=request_id))
    _emit_json(RequestViews(store).view(request))


@request_app.command("claim")
def request_claim(request_id: WaitingRequest, reviewer: ReviewerOption = None) -> None:
    """Take the reviewer lock (the same reviewer again is fine; another is refused)."""
    claim, reviews = _act(request_id, reviewer, lambda reviews, id_, who: reviews.claim(id_, who))
    if CliContext.options.json:
        _emit_json(claim.to_json())
        return
    from artifactize.kernel.document_codec import request_json

    request = reviews.ports.state.get_request(RequestId(request_id))
    typer.echo(render.claim_text(claim.to_json(), request_json(request.data) if request else {}))


@request_app.command("unclaim")
def request_unclaim(request_id: ClaimedRequest, reviewer: ReviewerOption = None) -> None:
    """Release your claim without a verdict, so someone else can claim the request."""
    claim, _ = _act(request_id, reviewer, lambda reviews, id_, who: reviews.unclaim(id_, who))
    _emit(claim.to_json(), render.unclaim_text)


@request_app.command("cancel")
def request_cancel(
    request_id: WaitingRequest,
    reason: Annotated[str | None, option("--reason", "Why, recorded with the request.")] = None,
    reviewer: ReviewerOption = None,
) -> None:
    """End a waiting request without a verdict (CANCELLED): the claimant, or anyone while it
    is unclaimed. Followers end with it. Prints the cancelled request."""
    from artifactize.domain.use_cases.request_views import RequestViews

    ended, reviews = _act(
        request_id, reviewer, lambda reviews, id_, who: reviews.cancel(id_, who, reason)
    )
    store = reviews.ports.state
    request = store.get_request(RequestId(ended[0]))
    assert request is not None  # just written
    _emit(RequestViews(store).view(request), lambda view: render.cancel_text(view, ended[1:]))


@request_app.command("tool")
def request_tool(
    request_id: ClaimedRequest,
    tool: Annotated[str, argument("A Human tool: <name>_<artifact> or <name>.")],
    reviewer: ReviewerOption = None,
) -> None:
    """Run one Human tool of the request (claimant only). A tool error exits 2."""
    result, _ = _act(
        request_id, reviewer, lambda reviews, id_, who: reviews.run_human_tool(id_, who, tool)
    )
    if CliContext.options.json:
        _emit_json(result.to_json())
    elif result.is_launch:
        typer.echo(LAUNCHED_TEXT.format(tool=tool))
    else:
        typer.echo(result.text_content)
    if result.is_error:
        raise typer.Exit(ExitCode.ERROR)


@request_app.command("submit")
def request_submit(
    request_id: ClaimedRequest,
    verdict: Annotated[str, option("--verdict", "GREEN or RED.")],
    fields: Annotated[str | None, option("--fields", "The owner fields as a JSON object.")] = None,
    fields_file: Annotated[
        str | None, option("--fields-file", "A regular file holding --fields.")
    ] = None,
    reviewer: ReviewerOption = None,
) -> None:
    """Submit a verdict (claimant only); prints the settled request. Exit 0 also for RED."""
    import anyio

    from artifactize.domain.use_cases.request_views import RequestViews

    result = _human_result(verdict, fields, fields_file)
    name, reviews = _lifecycle(request_id, reviewer)
    store = reviews.ports.state
    remote = (
        CliContext.services().remote_store()
    )  # an invalid configuration fails before anything settles

    async def work() -> Any:
        try:
            return await reviews.submit_and_publish(
                RequestId(request_id), name, result, remote, _warn
            )
        finally:
            if remote is not None:
                with anyio.CancelScope(shield=True):
                    await remote.aclose()

    submitted = _run(work)
    view = RequestViews(store).view(submitted.request)
    run = store.run_head(submitted.request.run_id)  # its status: the Run is not decoded
    _emit(view, lambda shown: render.submit_text(shown, run.status if run else None))


def _human_result(verdict: str, fields: str | None, fields_file: str | None) -> dict[str, Any]:
    """The submitted result: the verdict with the owner fields of ``--fields`` or of
    ``--fields-file`` (not both), checked as a submission is."""
    from artifactize.domain.reviews.human.submission import FIELDS_BOTH, FieldsError, human_result

    if fields is not None and fields_file is not None:
        raise CommandError(FIELDS_BOTH)
    text: str | bytes | None = fields
    if fields_file is not None:
        text = read_fields_file(fields_file)
    try:
        return human_result(verdict, text)
    except FieldsError as exc:
        raise CommandError(exc.message) from None


def _warn(message: str) -> None:
    typer.echo(message, err=True)
