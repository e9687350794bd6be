"""``until_signal``: the command's work, its stop signals watched beside it."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import anyio
import pytest

from artifactize.entrypoints.signals import until_signal


class Held:
    """Something a command holds while its work runs (a Run holds millions)."""


@pytest.fixture
def no_collector() -> Iterator[None]:
    """Reference counting alone: what a cycle holds stays until a collection."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _command() -> tuple[str | None, weakref.ref[Held]]:
    held = Held()

    async def work() -> str:
        return "done"

    return anyio.run(until_signal, work), weakref.ref(held)


def test_the_work_answers(no_collector: None) -> None:
    assert _command()[0] == "done"


def test_a_finished_command_leaves_no_cycle_holding_what_it_held(no_collector: None) -> None:
    """The watcher returns inside a cancel scope of its own: a watcher cancelled through the
    task group ended its task with a CancelledError that the group's callback kept in its own
    frame's local, a cycle whose frames, through their callers, held the command's objects
    until the interpreter's final full collection (fails on the base)."""
    answer, held = _command()
    assert answer == "done"
    assert held() is None


def test_a_failing_work_raises_its_own_error(no_collector: None) -> None:
    async def work() -> str:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        anyio.run(until_signal, work)
