"""``artifactize prune``: parse, call the prune service, render (domain/use_cases/prune.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from artifactize.entrypoints.bootstrap import RUNS_FOLDER
from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.options import option
from artifactize.entrypoints.cli.output import emit
from artifactize.entrypoints.errors import CommandError


def prune_command(
    before: Annotated[
        str | None, option("--before", "Remove Runs created before DATE (YYYY-MM-DD or ISO time).")
    ] = None,
    keep: Annotated[
        int | None, option("--keep", "Keep the newest N Runs, remove the older.")
    ] = None,
    dry_run: Annotated[
        bool, option("--dry-run", "Say what would be removed; change nothing.")
    ] = False,
) -> None:
    """Remove old Runs, their requests and scratch folders; never a reusable verdict.

    Never a running Run or a waiting request either; compacts the database afterwards.
    """
    from artifactize.domain.use_cases.prune import PruneCriteria, PruneError, prune
    from artifactize.ports.state import StateError

    try:
        criteria = PruneCriteria.parse(before, keep, dry_run)
    except PruneError as exc:
        raise CommandError(str(exc)) from None
    services = CliContext.services()
    runs = Path(services.state_dir()) / RUNS_FOLDER

    def run_folder(run_id: str) -> str | None:
        path = runs / run_id
        return str(path) if os.path.lexists(path) else None

    try:
        report = prune(
            services.open_state(create=False), services.container.scratch(), run_folder, criteria
        )
    except StateError as exc:
        raise CommandError(str(exc)) from None
    emit(report.to_json(), report.text())
