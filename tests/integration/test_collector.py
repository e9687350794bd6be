"""The collector adapters (``adapters/collector.py``) on CPython's real ``gc``."""

from __future__ import annotations

import gc

from artifactize.adapters.collector import (
    freeze_collector,
    pause_collector,
    pause_collector_to_exit,
    pause_keeping,
)


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_freeze_leaves_what_existed_out_and_collects_what_is_new() -> None:
    before = gc.get_freeze_count()
    assert before == 0  # nothing else froze objects in this process
    with freeze_collector():
        assert gc.get_freeze_count() > 0  # what existed is frozen
        _Cycle()  # new cyclic garbage
        assert gc.collect() >= 1  # still collected inside the block
    assert gc.get_freeze_count() == 0  # and everything is back in the oldest generation


def test_a_freeze_inside_another_changes_nothing() -> None:
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        with freeze_collector():
            pass
        # not unfrozen by the inner block (an unfreeze empties the permanent generation; its
        # count is not compared exactly: a frozen object freed meanwhile leaves it)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_pause_disables_the_collector_and_restores_it() -> None:
    assert gc.isenabled()
    with pause_collector():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_to_exit_keeps_what_is_alive_out_of_the_next_passes() -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    try:
        with pause_collector_to_exit():
            assert not gc.isenabled()
            kept = [_Cycle() for _ in range(100)]  # alive at the end of the block
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(kept)  # frozen: no pass traverses them again
    finally:
        gc.unfreeze()


def test_a_pause_to_exit_inside_a_disabled_collector_changes_nothing() -> None:
    gc.disable()
    try:
        with pause_collector_to_exit():
            pass
        assert not gc.isenabled()
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_keeping_pause_inside_a_freeze_freezes_what_it_allocated() -> None:
    """A Run's documents, allocated in ``pause_keeping`` blocks inside the Run's freeze,
    are left out of every pass until the Run ends, then go back with the rest."""
    with freeze_collector():
        frozen = gc.get_freeze_count()
        with pause_keeping():
            assert not gc.isenabled()
            kept = [[index] for index in range(1000)]  # containers the collector tracks
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen + len(kept)  # the new lists joined them
    assert gc.get_freeze_count() == 0


def test_a_keeping_pause_outside_a_freeze_is_a_pause() -> None:
    with pause_keeping():
        assert not gc.isenabled()
        kept = [[index] for index in range(100)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # nothing would ever give them back
    assert kept
