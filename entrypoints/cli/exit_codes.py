"""Every exit code of the command line, mapped once (reference/declarations.md §4.2).

A command ends with ``typer.Exit(code)`` where ``code`` comes from here, and only from here:
``ExitCode`` names what each number means, and ``EXIT_FOR_STATUS`` maps a Run's final status
to its code, for ``verify`` and ``run show --wait`` alike.
"""

from __future__ import annotations

import enum

from artifactize.ports.statuses import RunStatus


class ExitCode(enum.IntEnum):
    OK = 0  # success, GREEN, ready, accepted
    NOT_READY = 1  # RED, not ready, unmet, not accepted
    ERROR = 2  # usage or operational error, ERROR, cancelled, a tool's or cleanup's failure
    WAIT_TIMED_OUT = 3  # a Human wait ran out of time
    INCOMPLETE = 4  # INCOMPLETE, or the records asked for do not exist


EXIT_FOR_STATUS: dict[str, ExitCode] = {
    RunStatus.GREEN: ExitCode.OK,
    RunStatus.RED: ExitCode.NOT_READY,
    RunStatus.ERROR: ExitCode.ERROR,
    RunStatus.INCOMPLETE: ExitCode.INCOMPLETE,
}


def exit_for_status(status: str) -> ExitCode:
    """A Run's final status as an exit code; any other (a cancelled Run) is an error."""
    return EXIT_FOR_STATUS.get(status, ExitCode.ERROR)
