"""The state machines of a Run, a request and an execution: which status may follow which.

Every place that changes a saved status asks here first (``run_moves``, ``request_moves``,
``execution_moves``): an illegal move raises :class:`IllegalTransition` instead of saving a
document no reader can explain (a GREEN request going back to RUNNING, a settled Run
becoming RUNNING again). Writing the status a document already has is always legal (saving
a document again). The current status may be the plain ``str`` read back from saved JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus

Status = TypeVar("Status", RunStatus, RequestStatus, ExecutionStatus)

_RUN_SETTLED = frozenset({RunStatus.GREEN, RunStatus.RED, RunStatus.ERROR})
RUN_TRANSITIONS: Mapping[RunStatus, frozenset[RunStatus]] = {
    RunStatus.RUNNING: _RUN_SETTLED | {RunStatus.INCOMPLETE},
    # its last waiting Human request settled (or its owner died while it waited)
    RunStatus.INCOMPLETE: _RUN_SETTLED,
    RunStatus.GREEN: frozenset(),
    RunStatus.RED: frozenset(),
    RunStatus.ERROR: frozenset(),
}

# A request not yet started: its gate may open or close again before it runs.
_PARKED = frozenset({RequestStatus.QUEUED, RequestStatus.WAIT_DEPENDENCY, RequestStatus.BLOCKED})
_SETTLED = frozenset({RequestStatus.GREEN, RequestStatus.RED, RequestStatus.ERROR})
_FROM_PARKED = (
    _PARKED
    | _SETTLED
    | {
        RequestStatus.RUNNING,
        RequestStatus.WAITING_HUMAN,
        RequestStatus.UNREVIEWED,
        RequestStatus.STALE,
        RequestStatus.BUDGET_EXHAUSTED,
    }
)
REQUEST_TRANSITIONS: Mapping[RequestStatus, frozenset[RequestStatus]] = {
    **{status: _FROM_PARKED for status in _PARKED},
    # a runtime or Agent review settles; a request that joined a Human execution waits with it
    RequestStatus.RUNNING: _SETTLED | {RequestStatus.WAITING_HUMAN},
    RequestStatus.WAITING_HUMAN: _SETTLED | {RequestStatus.SUPERSEDED, RequestStatus.CANCELLED},
    **{
        status: frozenset()
        for status in (
            *_SETTLED,
            RequestStatus.UNREVIEWED,
            RequestStatus.STALE,
            RequestStatus.BUDGET_EXHAUSTED,
            RequestStatus.SUPERSEDED,
            RequestStatus.CANCELLED,
        )
    },
}

_EXECUTION_SETTLED = frozenset({ExecutionStatus.GREEN, ExecutionStatus.RED, ExecutionStatus.ERROR})
EXECUTION_TRANSITIONS: Mapping[ExecutionStatus, frozenset[ExecutionStatus]] = {
    ExecutionStatus.RUNNING: _EXECUTION_SETTLED | {ExecutionStatus.WAITING_HUMAN},
    ExecutionStatus.WAITING_HUMAN: _EXECUTION_SETTLED,
    ExecutionStatus.GREEN: frozenset(),
    ExecutionStatus.RED: frozenset(),
    ExecutionStatus.ERROR: frozenset(),
}


class IllegalTransition(ValueError):
    """A status change its state machine does not allow; the message names both statuses."""

    def __init__(self, kind: str, current: str, new: str) -> None:
        article = "An" if kind[0] in "aeiou" else "A"
        super().__init__(f"{article} {kind} cannot go from {current} to {new}.")
        self.kind = kind
        self.current = current
        self.new = new


def _move(
    kind: str,
    table: Mapping[Status, frozenset[Status]],
    statuses: type[Status],
    current: Status | str,
    new: Status,
) -> Status:
    try:
        known = statuses(current)
    except ValueError:
        raise IllegalTransition(kind, str(current), new) from None
    if known is not new and new not in table[known]:
        raise IllegalTransition(kind, known, new)
    return new


def run_moves(current: RunStatus | str, new: RunStatus) -> RunStatus:
    """``new``, when a Run in ``current`` may take it; else :class:`IllegalTransition`."""
    return _move("Run", RUN_TRANSITIONS, RunStatus, current, new)


def request_moves(current: RequestStatus | str, new: RequestStatus) -> RequestStatus:
    """``new``, when a request in ``current`` may take it; else :class:`IllegalTransition`."""
    return _move("request", REQUEST_TRANSITIONS, RequestStatus, current, new)


def execution_moves(current: ExecutionStatus | str, new: ExecutionStatus) -> ExecutionStatus:
    """``new``, when an execution in ``current`` may take it; else :class:`IllegalTransition`."""
    return _move("execution", EXECUTION_TRANSITIONS, ExecutionStatus, current, new)
