"""``--fingerprint-jobs N``: compute the reuse keys of a Run's evals N at a time.

Fingerprints read files (artifactsum) or run owner scripts, so they wait on the disk or on
a process, not on Python: worker threads overlap them. Each key is computed once per eval;
the first failure (``FingerprintError``) is raised as itself once every started
computation finished, before any Run exists. With one job the keys are computed in turn,
on the caller's thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import anyio

from artifactize.ports.threads import WorkerThreads

T = TypeVar("T")


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
    limiter = anyio.CapacityLimiter(jobs)
    results: dict[str, T] = {}
    failures: list[Exception] = []

    async def one(name: str) -> None:
        try:
            results[name] = await threads.run(compute, name, limiter=limiter)
        except Exception as exc:  # raised below as itself, not in an exception group
            failures.append(exc)

    async with anyio.create_task_group() as group:
        for name in names:
            group.start_soon(one, name)
    if failures:
        raise failures[0]
    return {name: results[name] for name in names}
