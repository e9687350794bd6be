"""``compute_all`` (``--fingerprint-jobs``): one worker-thread hop per batch of names, the
same results as computing each name in turn."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

import anyio
import pytest

from artifactize.domain.reviews.reuse.errors import FingerprintError, NeedsScript
from artifactize.domain.reviews.run.fingerprint_jobs import (
    BATCH_MAX,
    batch_size,
    compute_all,
    compute_scripts_apart,
)

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class CountingThreads:
    """``WorkerThreads`` that runs the work on the calling thread and counts the hops."""

    def __init__(self) -> None:
        self.hops = 0
        self.largest = 0

    async def run(
        self,
        work: Callable[[*Ts], T],
        *args: *Ts,
        limiter: anyio.CapacityLimiter | None = None,
        abandon_on_cancel: bool = False,
    ) -> T:
        self.hops += 1
        batch = next(iter(args), None)  # compute_all hands over one list of names
        assert isinstance(batch, list)
        self.largest = max(self.largest, len(batch))
        await anyio.lowlevel.checkpoint()  # let the other workers take their turn
        return work(*args)


class Failed(Exception):
    pass


@pytest.mark.parametrize("count", [2, 7, 8, 9, 63, 64, 65, 500, 1000])
@pytest.mark.parametrize("jobs", [2, 3, 8])
def test_same_results_as_in_turn_with_one_hop_per_batch(count: int, jobs: int) -> None:
    names = [f"n{i}" for i in range(count)]
    threads = CountingThreads()
    computed: list[str] = []

    def compute(name: str) -> str:
        computed.append(name)
        return name.upper()

    found = compute_all(compute, names, jobs, threads)
    assert list(found.items()) == [(n, n.upper()) for n in names]  # the names' order
    assert sorted(computed) == sorted(names)  # each once
    size = batch_size(count, jobs)
    assert threads.largest == size <= BATCH_MAX
    assert threads.hops == -(-count // size)  # ceil: every hop but the last is a full batch
    if count >= jobs * 4 * BATCH_MAX:
        assert threads.hops < count // 50  # the point: not one hop per name


def test_a_failure_is_raised_as_itself_after_every_name_was_computed() -> None:
    names = [f"n{i}" for i in range(300)]
    computed: list[str] = []

    def compute(name: str) -> str:
        computed.append(name)
        if name in ("n3", "n200"):
            raise Failed(name)
        return name

    with pytest.raises(Failed):
        compute_all(compute, names, 2, CountingThreads())
    assert sorted(computed) == sorted(names)


def test_an_exception_returned_as_a_value_is_a_result() -> None:
    """``status`` returns a fingerprint failure as the eval's value, not raised."""
    value = Failed("returned")
    found = compute_all(lambda name: value, ["a", "b", "c"], 2, CountingThreads())
    assert found == {"a": value, "b": value, "c": value}


def test_one_job_computes_in_turn_without_threads() -> None:
    threads = CountingThreads()
    assert compute_all(str.upper, ["a", "b"], 1, threads) == {"a": "A", "b": "B"}
    assert threads.hops == 0


class _Work:
    """What a computation's function holds (a workspace, the fingerprints so far)."""


def _computed(work: _Work) -> dict[str, str]:
    """A caller whose frame holds what it computes with, as ``Verify.prepare``'s does."""

    def compute(name: str) -> str:
        assert isinstance(work, _Work)
        return name.upper()

    return compute_all(compute, ["a", "b", "c", "d"], 2, CountingThreads())


def test_a_finished_computation_leaves_no_cycle_holding_its_work() -> None:
    """The watch of a finished computation ends, it is not cancelled: a cancelled task's
    exception held its traceback, whose frames held their callers' (``compute_all``'s,
    its caller's and everything they hold) in a cycle only a full collection freed (and a
    frozen one kept until the end of a Run)."""
    work = _Work()
    held = weakref.ref(work)
    gc.disable()  # no pass may free a cycle: reference counting alone must
    try:
        assert _computed(work) == {"a": "A", "b": "B", "c": "C", "d": "D"}
        del work
        assert held() is None
    finally:
        gc.enable()


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_keys_without_a_script_on_this_thread_and_the_scripts_on_the_workers(jobs: int) -> None:
    """With more than one job, every name that needs no fingerprint script is computed on
    the caller's thread (no hop); only those that run a script go to the workers. With one
    job, every name in turn on this thread, as ``compute_all``."""
    names = [f"n{i}" for i in range(20)]
    scripted = {name for name in names if int(name[1:]) % 4 == 0}  # 5 run a script
    threads = CountingThreads()
    asked: list[tuple[str, bool]] = []

    def compute(name: str, without_scripts: bool) -> str:
        asked.append((name, without_scripts))
        if without_scripts and name in scripted:
            raise NeedsScript(name)
        return name.upper()

    found = compute_scripts_apart(compute, names, jobs, threads)
    assert list(found.items()) == [(n, n.upper()) for n in names]
    first_pass = jobs > 1
    assert [n for n, here in asked if here] == (names if first_pass else [])
    worked = sorted(n for n, here in asked if not here)
    assert worked == sorted(scripted if first_pass else names)
    assert (threads.hops > 0) == first_pass  # one job computes in turn, on this thread


def test_no_script_takes_no_hop() -> None:
    threads = CountingThreads()
    found = compute_scripts_apart(lambda name, _: name, ["a", "b", "c"], 2, threads)
    assert found == {"a": "a", "b": "b", "c": "c"} and threads.hops == 0


def test_a_failure_on_this_thread_is_raised_before_any_script_runs() -> None:
    """A key that fails without a script (an unreadable file, say) stops the computation
    there: no script of a later name is started."""
    threads = CountingThreads()

    def compute(name: str, without_scripts: bool) -> str:
        if name == "bad":
            raise FingerprintError("Artifact `bad`: fingerprint file `x` cannot be read")
        if without_scripts and name == "scripted":
            raise NeedsScript(name)
        return name

    with pytest.raises(FingerprintError, match="`bad`"):
        compute_scripts_apart(compute, ["scripted", "bad", "ok"], 2, threads)
    assert threads.hops == 0
