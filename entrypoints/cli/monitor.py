"""``artifactize monitor [--all]``: watch Runs live, and hand a waiting Human review to
``artifactize review`` in the same terminal.

Read-only: a read-only state connection, no repository needed (``--repo`` only chooses
whose Runs are listed), no owner code run. Interactive only: ``--json`` is refused, and so
is a standard input or output that is not a terminal.

Exit codes: 0 when the monitor quits, 2 for an error before the screen opens and when a
stop signal (SIGTERM, SIGHUP, SIGQUIT) ended it.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.options import option
from artifactize.entrypoints.cli.terminal_reviewer import ALL_WITH_REPO as ALL_WITH_REPO
from artifactize.entrypoints.cli.terminal_reviewer import check_interactive

JSON_REFUSED = "monitor is interactive and has no --json output; use run list and run show."
NEEDS_TERMINAL = "monitor needs an interactive terminal (standard input and output)."


def review_argv(request_id: str, state_dir: str, repo: str | None) -> list[str]:
    """The child that reviews ``request_id``: this program, the same state directory and
    the same repository selection."""
    where = ["--all"] if repo is None else ["--repo", repo]
    return [
        sys.executable,
        "-m",
        "artifactize.entrypoints.cli.app",
        "--state-dir",
        state_dir,
        "review",
        request_id,
        *where,
    ]


def monitor_command(
    all_repos: Annotated[bool, option("--all", "Show the Runs of every repository.")] = False,
) -> None:
    """Watch Runs live; o hands a waiting Human review to `review`. Writes nothing."""
    from artifactize.entrypoints.monitor_tui.app import MonitorApp

    check_interactive(all_repos, JSON_REFUSED, NEEDS_TERMINAL)
    services = CliContext.services()
    source = services.monitor_source(all_repos=all_repos)
    state_dir = services.state_dir()
    app = MonitorApp(source, lambda request: review_argv(request, state_dir, source.repo))
    app.run()
    if app.stopped_by_signal:
        raise typer.Exit(ExitCode.ERROR)  # a stop signal ended it
