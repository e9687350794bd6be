"""The state machines of a Run, a request and an execution (kernel/transitions.py): every
legal move is taken, every illegal one refused with a message naming both statuses."""

from __future__ import annotations

import itertools

import pytest

from artifactize.kernel.transitions import (
    EXECUTION_TRANSITIONS,
    REQUEST_TRANSITIONS,
    RUN_TRANSITIONS,
    IllegalTransition,
    execution_moves,
    request_moves,
    run_moves,
)
from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus

R = RequestStatus
LEGAL_REQUEST_PATHS = [
    # runtime or Agent: queued, parked behind its inputs, run, settled
    (R.QUEUED, R.WAIT_DEPENDENCY, R.QUEUED, R.RUNNING, R.GREEN),
    (R.QUEUED, R.BLOCKED, R.WAIT_DEPENDENCY, R.RUNNING, R.RED),
    (R.QUEUED, R.RUNNING, R.ERROR),
    # a Human eval asks and is answered, superseded or cancelled
    (R.QUEUED, R.WAITING_HUMAN, R.GREEN),
    (R.QUEUED, R.WAITING_HUMAN, R.SUPERSEDED),
    (R.WAIT_DEPENDENCY, R.WAITING_HUMAN, R.CANCELLED),
    # joined another request's Human execution
    (R.QUEUED, R.RUNNING, R.WAITING_HUMAN, R.RED),
    # reused, derived or not run at all
    (R.QUEUED, R.GREEN),
    (R.QUEUED, R.STALE),
    (R.QUEUED, R.BUDGET_EXHAUSTED),
    (R.BLOCKED, R.UNREVIEWED),
]
ILLEGAL_REQUEST_MOVES = [
    (R.GREEN, R.RUNNING),
    (R.RED, R.GREEN),
    (R.ERROR, R.QUEUED),
    (R.RUNNING, R.QUEUED),
    (R.RUNNING, R.SUPERSEDED),
    (R.WAITING_HUMAN, R.RUNNING),
    (R.WAITING_HUMAN, R.QUEUED),
    (R.SUPERSEDED, R.GREEN),
    (R.CANCELLED, R.WAITING_HUMAN),
    (R.STALE, R.RUNNING),
    (R.BUDGET_EXHAUSTED, R.GREEN),
    (R.UNREVIEWED, R.RUNNING),
]


@pytest.mark.parametrize("path", LEGAL_REQUEST_PATHS)
def test_a_request_takes_every_legal_path(path: tuple[RequestStatus, ...]) -> None:
    for current, new in itertools.pairwise(path):
        assert request_moves(current, new) is new


@pytest.mark.parametrize(("current", "new"), ILLEGAL_REQUEST_MOVES)
def test_a_request_refuses_an_illegal_move(current: RequestStatus, new: RequestStatus) -> None:
    with pytest.raises(IllegalTransition) as info:
        request_moves(current, new)
    assert str(info.value) == f"A request cannot go from {current} to {new}."


def test_saving_the_same_status_again_is_always_legal() -> None:
    for run in RunStatus:
        assert run_moves(run, run) is run
    for request in RequestStatus:
        assert request_moves(request, request) is request
    for execution in ExecutionStatus:
        assert execution_moves(execution, execution) is execution


def test_the_current_status_may_be_text_read_back_from_json() -> None:
    assert request_moves("WAITING_HUMAN", R.GREEN) is R.GREEN
    assert run_moves("INCOMPLETE", RunStatus.GREEN) is RunStatus.GREEN
    with pytest.raises(IllegalTransition, match="cannot go from GREEN to RUNNING"):
        execution_moves("GREEN", ExecutionStatus.RUNNING)


def test_an_unknown_current_status_is_refused() -> None:
    with pytest.raises(IllegalTransition, match="A Run cannot go from INCOMPLETE-ish to GREEN"):
        run_moves("INCOMPLETE-ish", RunStatus.GREEN)
    # a Run's word is not a request's
    with pytest.raises(IllegalTransition, match="from INCOMPLETE to ERROR"):
        request_moves("INCOMPLETE", R.ERROR)


def test_a_run_settles_once_and_an_incomplete_run_again_when_its_wait_ends() -> None:
    for ended in (RunStatus.GREEN, RunStatus.RED, RunStatus.ERROR, RunStatus.INCOMPLETE):
        assert run_moves(RunStatus.RUNNING, ended) is ended
    for ended in (RunStatus.GREEN, RunStatus.RED, RunStatus.ERROR):
        assert run_moves(RunStatus.INCOMPLETE, ended) is ended
    for settled in (RunStatus.GREEN, RunStatus.RED, RunStatus.ERROR):
        for other in RunStatus:
            if other is not settled:
                with pytest.raises(IllegalTransition):
                    run_moves(settled, other)
    with pytest.raises(IllegalTransition):
        run_moves(RunStatus.INCOMPLETE, RunStatus.RUNNING)


def test_an_execution_holds_its_key_then_settles_for_good() -> None:
    E = ExecutionStatus
    assert execution_moves(E.RUNNING, E.WAITING_HUMAN) is E.WAITING_HUMAN
    for ended in (E.GREEN, E.RED, E.ERROR):
        assert execution_moves(E.RUNNING, ended) is ended
        assert execution_moves(E.WAITING_HUMAN, ended) is ended
        for other in E:
            if other is not ended:
                with pytest.raises(IllegalTransition, match=f"An execution cannot go from {ended}"):
                    execution_moves(ended, other)
    with pytest.raises(IllegalTransition):
        execution_moves(E.WAITING_HUMAN, E.RUNNING)


def test_every_status_has_a_row_and_every_move_stays_in_its_own_machine() -> None:
    assert set(RUN_TRANSITIONS) == set(RunStatus)
    assert set(REQUEST_TRANSITIONS) == set(RequestStatus)
    assert set(EXECUTION_TRANSITIONS) == set(ExecutionStatus)
    for run_moves_to in RUN_TRANSITIONS.values():
        assert all(type(s) is RunStatus for s in run_moves_to)
    for request_moves_to in REQUEST_TRANSITIONS.values():
        assert all(type(s) is RequestStatus for s in request_moves_to)
    for execution_moves_to in EXECUTION_TRANSITIONS.values():
        assert all(type(s) is ExecutionStatus for s in execution_moves_to)
