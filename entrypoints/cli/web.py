"""``artifactize web [--port N] [--no-browser] [--reviewer NAME] [--all]``: the reviewer and
the monitor in a browser, served on 127.0.0.1 (docs/web.md).

Prints one line, ``http://127.0.0.1:PORT/?token=TOKEN`` (with ``--json``:
``{"url": ...}``), opens the browser unless ``--no-browser``, and serves until SIGTERM,
SIGINT, SIGHUP or SIGQUIT. Exit codes: 2 after a stop signal (as for every command a
signal stops), and 2 for an error before serving (bad port, port taken, invalid
reviewer, invalid team store configuration).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.global_options import GlobalOptions
from artifactize.entrypoints.cli.options import ReviewerOption, option
from artifactize.entrypoints.cli.terminal_reviewer import ALL_WITH_REPO
from artifactize.entrypoints.errors import CommandError


def web_command(
    port: Annotated[int, option("--port", "Port on 127.0.0.1 (0: a free one).")] = 0,
    no_browser: Annotated[
        bool, option("--no-browser", "Print the URL only; open no browser.")
    ] = False,
    reviewer: ReviewerOption = None,
    all_repos: Annotated[
        bool, option("--all", "List the requests and Runs of every repository.")
    ] = False,
) -> None:
    """Review waiting Human requests and watch Runs in a browser (a local web app)."""
    from artifactize.entrypoints.web.server import bind, check_port, serve, web_context

    options = CliContext.options
    if all_repos and options.repo != GlobalOptions().repo:
        raise CommandError(ALL_WITH_REPO)
    sock = bind(check_port(port))
    try:
        context = web_context(CliContext.services(), reviewer, all_repos)
    except BaseException:
        sock.close()
        raise

    def announce(url: str) -> None:
        typer.echo(json.dumps({"url": url}) if options.json else url)

    if serve(context, sock, announce, open_browser=not no_browser):
        raise typer.Exit(ExitCode.ERROR)  # a stop signal ended it
