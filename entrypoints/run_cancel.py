"""``run cancel RUN_ID``: stop a Run that another process is running.

The Run's owner (the ``verify`` that runs it: pid and start time, saved in the state) is
asked to stop as on Ctrl-C (``ProcessInterrupt``; SIGTERM on POSIX, never a reused pid).
That process then does what it does on Ctrl-C: cancels its reviews, stops every process
group it started (runtime commands, tool sessions, coding agents) and records its Run and
requests CANCELLED. This waits, at most CANCEL_WAIT_SECONDS, until the state says the Run
is no longer RUNNING. An owner that is already gone is settled as dead owners are
(ERROR / OWNER_DIED).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from artifactize.entrypoints.errors import CommandError
from artifactize.ports.ids import RunId
from artifactize.ports.sessions import ProcessIdentity, ProcessInterrupt
from artifactize.ports.statuses import RunStatus

if TYPE_CHECKING:
    from artifactize.entrypoints.bootstrap import Services
    from artifactize.ports.state import RunRecord

CANCEL_WAIT_SECONDS = 30.0
CANCEL_POLL_SECONDS = 0.1
UNKNOWN_RUN = "Unknown Run: {run_id}"
NOT_RUNNING = "Run {run_id} is not running: it ended {status}."
DID_NOT_STOP = (
    "Run {run_id} did not stop within {seconds:g} s: its owner (pid {pid}) still runs; "
    "stop that process yourself."
)


def cancel_run(services: Services, run_id: str) -> RunRecord:
    """The Run once it stopped; CommandError when unknown, already ended, or not stopping."""
    store = services.open_state(create=False)
    run = store.get_run(RunId(run_id)) if store is not None else None
    if store is None or run is None:
        raise CommandError(UNKNOWN_RUN.format(run_id=run_id))
    if run.status != RunStatus.RUNNING:
        raise CommandError(NOT_RUNNING.format(run_id=run_id, status=run.status))
    owner = run.data.owner
    table: ProcessInterrupt = services.container.process_interrupt()
    if owner is not None:
        table.interrupt(ProcessIdentity(int(owner["pid"]), float(owner["startTime"])))
    deadline = time.monotonic() + CANCEL_WAIT_SECONDS
    while True:
        services.settle_dead_runs(store)
        current = store.get_run(RunId(run_id)) or run
        if current.status != RunStatus.RUNNING:
            return current
        if time.monotonic() >= deadline:
            pid = owner.get("pid") if owner is not None else None
            raise CommandError(
                DID_NOT_STOP.format(run_id=run_id, seconds=CANCEL_WAIT_SECONDS, pid=pid)
            )
        time.sleep(CANCEL_POLL_SECONDS)
