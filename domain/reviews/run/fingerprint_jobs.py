"""``--fingerprint-jobs N``: compute the reuse keys of a Run's evals N at a time.

Fingerprints read files (artifactsum) or run owner scripts, so they wait on the disk or on
a process, not on Python: worker threads overlap them. Each key is computed once per eval;
the first failure (``FingerprintError``) is raised as itself once every started
computation finished, before any Run exists. With one job the keys are computed in turn,
on the caller's thread.

N workers each take the next batch of names (at most ``BATCH_MAX``, and small enough that
each worker gets several) and compute it on a worker thread, one thread hop per batch: with
the file index most keys cost less than the hop itself (a wake-up of the event loop and of
the thread each), so one hop per name was most of a warm ``status``. A cancellation (Ctrl-C)
is seen by each batch before its next name, so it waits for one computation per worker at
most, as with one hop per name (a fingerprint script may take seconds).

With more than one job and a file index, ``compute_kept_first`` first computes on the
caller's thread every key whose fingerprints the index keeps: each costs a few stats, less
than its share of a hop, and two threads running such Python only contend for the
interpreter lock (an all-reused ``verify`` at 10,000 Artifacts spent 2.0 s of wall time and
2.4 s of CPU in its keys on two jobs, against 0.9 s on one). The workers get the rest.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TypeVar

import anyio

from artifactize.domain.reviews.reuse.errors import NotKept
from artifactize.ports.threads import WorkerThreads

T = TypeVar("T")

BATCH_MAX = 64  # names computed per worker-thread hop
BATCHES_PER_JOB = 4  # at least this many batches per worker, so the last ones even out


def batch_size(names: int, jobs: int) -> int:
    """Names per batch: at most ``BATCH_MAX``, at least 1, ``BATCHES_PER_JOB`` per job."""
    return max(1, min(BATCH_MAX, names // (jobs * BATCHES_PER_JOB)))


def compute_all(
    compute: Callable[[str], T], names: Sequence[str], jobs: int, threads: WorkerThreads
) -> dict[str, T]:
    """``{name: compute(name)}``, ``jobs`` computations at a time on ``threads`` (outside
    any event loop)."""
    if jobs <= 1 or len(names) <= 1:
        return {name: compute(name) for name in names}
    return anyio.run(_compute_all, compute, list(names), jobs, threads)


async def _compute_all(
    compute: Callable[[str], T], names: list[str], jobs: int, threads: WorkerThreads
) -> dict[str, T]:
    pending = deque(names)  # taken from on the event loop only
    size = batch_size(len(names), jobs)
    results: dict[str, T] = {}
    failures: list[Exception] = []

    stopped = [False]  # set on the event loop when the computation is cancelled

    def run_batch(batch: list[str]) -> list[tuple[str, T] | Exception]:
        done: list[tuple[str, T] | Exception] = []
        for name in batch:
            if stopped[0]:
                break  # cancelled: what is left is never returned
            try:
                done.append((name, compute(name)))
            except Exception as exc:  # raised below as itself, not in an exception group
                done.append(exc)
        return done

    async def worker() -> None:
        while pending:
            batch = [pending.popleft() for _ in range(min(size, len(pending)))]
            for outcome in await threads.run(run_batch, batch):
                if isinstance(outcome, tuple):  # (name, result): a result may be anything
                    results[outcome[0]] = outcome[1]
                else:
                    failures.append(outcome)

    finished = anyio.Event()

    async def watch() -> None:
        try:
            await finished.wait()
        finally:
            stopped[0] = True

    # The watch ends when the workers do, not by a cancellation: a cancelled task's
    # exception holds its traceback, whose frames hold their callers' up to this
    # computation's (every key and fingerprint computed) in a cycle only a full collection
    # frees (at 10,000 Artifacts 25,000 objects holding 660,000). Cancelled from outside
    # (Ctrl-C), it is cancelled at once, as the workers' thread calls are not.
    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            async with anyio.create_task_group() as workers:
                for _ in range(min(jobs, len(names))):
                    workers.start_soon(worker)
        finally:
            finished.set()  # every name computed (or a failure): stop watching
    if failures:
        raise failures[0]
    return {name: results[name] for name in names}


def compute_kept_first(
    compute: Callable[[str, bool], T],
    names: Sequence[str],
    jobs: int,
    threads: WorkerThreads,
    *,
    indexed: bool,
) -> dict[str, T]:
    """``compute_all`` of ``compute(name, False)``; with more than one job and a file index
    (``indexed``), each ``compute(name, True)`` first, on this thread: the index's answer,
    or ``NotKept`` when it keeps not every fingerprint the key needs, and that name goes to
    the workers."""
    kept: dict[str, T] = {}
    if jobs > 1 and indexed:
        for name in names:
            try:
                kept[name] = compute(name, True)
            except NotKept:
                continue
    rest = [name for name in names if name not in kept]
    computed = compute_all(lambda name: compute(name, False), rest, jobs, threads)
    return {name: kept[name] if name in kept else computed[name] for name in names}
