"""The pool of a Run's private invocation folders (``InvocationPool``): a set its command
left as created goes to the next runtime eval below the same Run folder, anything else is
removed at once, and ``drain`` removes what is kept."""

from __future__ import annotations

import pytest

from artifactize.domain.reviews.runtime.env import InvocationPool
from tests.fakes.processes import FakeScratch

RUN = "/state/runs/r1"


def test_a_set_left_as_created_is_handed_to_the_next_eval() -> None:
    scratch = FakeScratch()
    pool = InvocationPool(scratch)
    created: list[str] = []
    first = pool.take(RUN, created)
    assert len(created) == 5 and first.root == created[0]
    pool.give_back(RUN, created)
    assert created == [] and len(scratch.live) == 5  # kept, not removed
    again: list[str] = []
    assert pool.take(RUN, again) == first and len(scratch.created) == 5
    assert pool.take("/state/runs/r2", []) != first  # another Run folder: a fresh set
    pool.give_back(RUN, again)
    pool.drain()
    assert not any(path.startswith(RUN) for path in scratch.live)


def test_a_set_a_command_wrote_in_is_removed_not_kept() -> None:
    scratch = FakeScratch()
    pool = InvocationPool(scratch)
    created: list[str] = []
    dirs = pool.take(RUN, created)
    scratch.dirty.add(dirs.root)
    pool.give_back(RUN, created)
    assert created == [] and scratch.live == set()
    assert pool.take(RUN, []).root != dirs.root


def test_a_kept_set_changed_since_is_never_handed_out() -> None:
    scratch = FakeScratch()
    pool = InvocationPool(scratch)
    created: list[str] = []
    dirs = pool.take(RUN, created)
    pool.give_back(RUN, created)
    scratch.dirty.add(dirs.root)  # a straggler wrote after the check
    fresh: list[str] = []
    assert pool.take(RUN, fresh).root != dirs.root
    assert dirs.root not in scratch.live and fresh[0] in scratch.live


def test_a_failed_removal_keeps_the_paths_and_drain_tries_every_set() -> None:
    scratch = FakeScratch()
    pool = InvocationPool(scratch)
    sets: list[list[str]] = [[], []]
    for created in sets:
        pool.take(RUN, created)
    for created in sets:
        pool.give_back(RUN, created)
    scratch.remove_fails = True
    with pytest.raises(OSError):
        pool.drain()
    scratch.remove_fails = False
    pool.drain()  # nothing kept any more: the pool forgot them, the Run folder holds them
    assert len(scratch.live) == 10
