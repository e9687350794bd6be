"""Dead owners settle: what every reader of the state does first.

A ``verify`` killed with SIGKILL leaves its Run RUNNING and its scratch folder under
``<state>/runs/``. The state store settles such Runs (ERROR / OWNER_DIED, with their
requests, in one transaction each) when their recorded owner — that very process, pid and
start time, never a reused pid — is gone; then the scratch folders of Runs that ended that
way are removed (no-follow). ``run list``, ``run show`` (also each poll of ``--wait``),
``status``, ``verify`` and the request commands all open the state through
``Services.open_state``, which calls this.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from artifactize.entrypoints.bootstrap import RUNS_FOLDER
from artifactize.entrypoints.container import Container
from artifactize.ports.ids import RunId
from artifactize.ports.sessions import ProcessIdentity
from artifactize.ports.state import StateError, StateStore
from artifactize.ports.statuses import ErrorCode


def settle_dead_runs(store: StateStore, container: Container, state_dir: str) -> tuple[str, ...]:
    """Settle the Runs of dead owners, then sweep their scratch folders; the IDs settled."""
    table = container.process_table()

    def owner_alive(pid: int, start_time: float) -> bool:
        return bool(table.is_alive(ProcessIdentity(pid, start_time)))

    try:
        settled = store.settle_dead_runs(owner_alive)
    except StateError:
        return ()  # a busy or read-only state: the next reader settles them
    sweep_dead_run_folders(store, container, state_dir)
    return settled


def sweep_dead_run_folders(store: StateStore, container: Container, state_dir: str) -> None:
    """Remove ``<state>/runs/RUN`` of every Run that ended OWNER_DIED (its owner cannot)."""
    try:
        folders = list((Path(state_dir) / RUNS_FOLDER).iterdir())
    except OSError:
        return
    scratch = container.scratch()
    for folder in folders:
        run = store.get_run(RunId(folder.name))
        if run is None or run.data.get("errorCode") != ErrorCode.OWNER_DIED:
            continue
        with contextlib.suppress(OSError):
            scratch.remove_tree(str(folder))
