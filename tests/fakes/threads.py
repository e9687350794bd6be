"""The worker threads the tests give the domain: the real adapter (anyio's worker threads),
so a test's blocking work runs off the event loop exactly as in the CLI."""

from __future__ import annotations

from artifactize.adapters.worker_threads import AnyioWorkerThreads

THREADS = AnyioWorkerThreads()
