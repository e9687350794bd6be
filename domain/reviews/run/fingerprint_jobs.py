"""``--fingerprint-jobs N``: run the fingerprint scripts of a Run's evals N at a time.

A fingerprint script is a process: its key waits on it, not on Python, so worker threads
overlap scripts. Each key is computed once per eval; the first failure
(``FingerprintError``) is raised as itself once every started computation finished, before
any Run exists. With one job the keys are computed in turn, on the caller's thread.

Every key that needs no script is computed first, on the caller's thread
(``compute_scripts_apart``): an artifactsum is Python and short system calls (a few stats
when the file index keeps its walk, a listing, an open and a read per file when it does
not), and two threads running that only contend for the interpreter lock, each system call
handing the lock to the other thread. Measured at 10,000 Artifacts (100,000 files of about
1 KB): a warm ``verify``'s keys took 2.0 s of wall time and 2.4 s of CPU on two jobs
against 0.9 s on one; a ``status`` with an empty file index, by turns, 14.1–18.6 s of wall
time and 15.9–20.8 s of CPU on two jobs against 10.0–15.3 s and 9.9–14.7 s on one (with
the page cache dropped: 32.7 s against 30.4 s of wall time). Where every file is large
enough for its hash to let go of the lock for long (20 files of 20 MB), two jobs saved
nothing beyond the noise (0.60–1.35 s against 0.77–0.95 s).

N workers each take the next batch of names (at most ``BATCH_MAX``, and small enough that
each worker gets several) and compute it on a worker thread, one thread hop per batch. A
cancellation (Ctrl-C) is seen by each batch before its next name, so it waits for one
computation per worker at most (a fingerprint script may take seconds).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TypeVar

import anyio

from artifactize.domain.reviews.reuse.errors import NeedsScript
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


def compute_scripts_apart(
    compute: Callable[[str, bool], T], names: Sequence[str], jobs: int, threads: WorkerThreads
) -> dict[str, T]:
    """``compute_all`` of ``compute(name, False)``; with more than one job, each
    ``compute(name, True)`` first, on this thread: the key without running a fingerprint
    script, or ``NeedsScript``, and that name goes to the workers."""
    here: dict[str, T] = {}
    if jobs > 1:
        for name in names:
            try:
                here[name] = compute(name, True)
            except NeedsScript:
                continue
    rest = [name for name in names if name not in here]
    computed = compute_all(lambda name: compute(name, False), rest, jobs, threads)
    return {name: here[name] if name in here else computed[name] for name in names}
