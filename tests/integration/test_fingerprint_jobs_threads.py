"""``compute_all`` on real worker threads: a cancellation (Ctrl-C) stops a batch before its
next name, so it waits for one computation per worker, not for the rest of the batch."""

from __future__ import annotations

import anyio
import anyio.from_thread
import anyio.lowlevel

from artifactize.adapters.worker_threads import AnyioWorkerThreads
from artifactize.domain.reviews.run import fingerprint_jobs


def test_a_cancelled_batch_stops_before_its_next_name() -> None:
    names = [f"n{i}" for i in range(400)]
    assert fingerprint_jobs.batch_size(len(names), 1) > 1  # one batch holds many names
    computed: list[str] = []

    async def main() -> None:
        with anyio.CancelScope() as scope:

            def compute(name: str) -> str:
                computed.append(name)
                if len(computed) == 1:  # Ctrl-C while the first name is computed
                    anyio.from_thread.run_sync(scope.cancel)
                    anyio.from_thread.run(anyio.lowlevel.checkpoint)  # the loop saw it
                return name

            await fingerprint_jobs._compute_all(compute, names, 1, AnyioWorkerThreads())
        assert scope.cancelled_caught

    anyio.run(main)
    assert computed == ["n0"]


def test_on_threads_every_name_is_computed_once_in_order() -> None:
    names = [f"n{i}" for i in range(300)]
    found = fingerprint_jobs.compute_all(str.upper, names, 3, AnyioWorkerThreads())
    assert list(found.items()) == [(name, name.upper()) for name in names]
