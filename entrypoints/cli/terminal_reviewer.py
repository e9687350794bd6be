"""``artifactize review [REQUEST_ID] [--all] [--reviewer NAME]``: the terminal reviewer.

Lists the waiting Human requests of the repository (``--repo``, default the current
directory; ``--all``: every repository), or opens REQUEST_ID directly. It claims, runs
tools, releases and submits through the same lifecycle calls as ``request …``, in this
process, and publishes a submission to the team review store exactly like
``request submit``. Interactive only: ``--json`` is refused, and so is a standard input or
output that is not a terminal.

Exit codes: 0 when the reviewer quits (also after a RED submission), 2 for an error
before the screen opens (unknown request, invalid reviewer, no terminal, bad options) and
when a stop signal (SIGTERM, SIGHUP, SIGQUIT, SIGINT from outside) ended it, as for
every command.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from artifactize.entrypoints.bootstrap import ON_WINDOWS
from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.global_options import GlobalOptions
from artifactize.entrypoints.cli.options import ReviewerOption, argument, option
from artifactize.entrypoints.errors import CommandError

JSON_REFUSED = "review is interactive and has no --json output; use request list, show and submit."
ALL_WITH_REPO = "Give either --all or --repo, not both."
NEEDS_TERMINAL = "review needs an interactive terminal (standard input and output)."


def check_interactive(all_repos: bool, json_refused: str, needs_terminal: str) -> None:
    """What a full-screen command (``review``, ``monitor``) refuses before its screen opens:
    ``--json``, ``--all`` beside ``--repo``, and a standard input or output that is no
    terminal (exit 2 each)."""
    options = CliContext.options
    if options.json:
        raise CommandError(json_refused)
    if all_repos and options.repo != GlobalOptions().repo:
        raise CommandError(ALL_WITH_REPO)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CommandError(needs_terminal)


def review_command(
    request_id: Annotated[
        str | None, argument("Open this request directly (default: the list).")
    ] = None,
    all_repos: Annotated[
        bool, option("--all", "List the waiting requests of every repository.")
    ] = False,
    reviewer: ReviewerOption = None,
) -> None:
    """Review waiting Human requests in the terminal: run their tools, submit a verdict."""
    import anyio

    from artifactize.entrypoints.review_tui.app import ReviewApp
    from artifactize.entrypoints.review_tui.waiting import NO_WAITING

    check_interactive(all_repos, JSON_REFUSED, NEEDS_TERMINAL)
    services = CliContext.services()
    session = services.review_session(request_id, reviewer, all_repos=all_repos)
    if session is None:  # nothing was ever recorded: nothing waits
        typer.echo(NO_WAITING)
        return

    app = ReviewApp(
        session, request_id, fallback_editor=services.fallback_editor, windows=ON_WINDOWS
    )

    async def work() -> str | None:
        try:
            return await app.run()
        finally:
            with anyio.CancelScope(shield=True):
                await session.aclose()

    message = anyio.run(work)
    if message:
        typer.echo(message)
    if app.stopped_by_signal:
        raise typer.Exit(ExitCode.ERROR)  # a stop signal ended it
