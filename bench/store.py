"""Review store benchmark: the same store server on SQLite and on PostgreSQL, same script.

For each engine it starts ``artifactize server run`` as a real process (SQLite: the default
file in a temporary state directory; PostgreSQL: a throwaway server, ``initdb`` + ``pg_ctl``
on a free loopback port, as the tests start it), then ``--clients`` (default 8) concurrent
clients, each with its own HTTP connection:

- **publish**: every client PUTs ``--records`` (default 1,000) records of its own keys;
  the figure is records per second over all clients (first request to last answer);
- **batch publish**: the same again, other keys, each client POSTing its records to
  ``/v1/entries`` in batches of 500 (what ``remote push`` sends); records per second, and
  its ratio to the one-PUT-per-record figure;
- **lookup**: every client POSTs ``--batches`` lookups of ``--keys`` (default 1,000) keys,
  three quarters of them stored; the figures are the p50 and p99 of one batch's latency.

The ratios are PostgreSQL / SQLite: above 1 means PostgreSQL takes longer (latency) or
publishes more (throughput). Temporary directories and both servers are removed at the end,
also on an error or Ctrl-C.

    .venv/bin/python bench/store.py
    .venv/bin/python bench/store.py --records 200 --batches 3 --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2

from artifactize.adapters.review_store.database import open_review_store_db
from artifactize.ports.review_store import PUBLISH_BATCH_MAX_ENTRIES

REPO = Path(__file__).resolve().parents[1]
READY = re.compile(r"Review store listening on (?P<url>http://\S+)")
START_SECONDS = 30.0
BATCH_CLIENT_OFFSET = 2_000  # batch publishers' keys: apart from the PUT and missing keys
REQUEST_TIMEOUT_SECONDS = 120.0


def record(key: str, execution: str) -> dict[str, Any]:
    return {
        "schema": 2,
        "key": key,
        "evalDefHash": "cd" * 32,
        "fingerprints": {"doc": "content:" + "ef" * 32},
        "verdict": "GREEN",
        "evalId": "doc/review",
        "runId": "run-Bench1",
        "requestId": "run-Bench1-1",
        "executionId": execution,
        "profile": {"kind": "agent"},
        "options": {},
        "result": {"verdict": "GREEN"},
        "usage": None,
        "startedAt": "2026-01-02T03:04:00.000000000Z",
        "completedAt": "2026-01-02T03:04:05.000000000Z",
    }


def key_of(client: int, n: int) -> str:
    return f"{client:08x}{n:056x}"


@contextlib.contextmanager
def store_server(state: Path, database: str | None) -> Iterator[tuple[str, str]]:
    """(URL, token) of a ``server run`` process on ``database``; stopped at the end."""
    store = open_review_store_db(str(state), create=True, database=database)
    assert store is not None
    token = store.add_token("bench", ["read", "publish"]).token
    store.close()
    argv = [sys.executable, "-m", "artifactize.entrypoints.cli.app", "--state-dir", str(state)]
    argv += ["server", "run", "--listen", "127.0.0.1:0"]
    if database is not None:
        argv += ["--database", database]
    log = (state.parent / f"{state.name}.log").open("w+")
    process = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log, text=True)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            log.seek(0)
            match = READY.search(log.read())
            if match:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the store server did not start: {log.read()}")
            time.sleep(0.05)
        yield match["url"], token
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def in_parallel(clients: int, work: Any) -> list[Any]:
    barrier = threading.Barrier(clients)
    results: list[Any] = [None] * clients
    failures: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return results


def measure(url: str, token: str, args: argparse.Namespace) -> dict[str, float]:
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}

    def client() -> httpx2.Client:
        return httpx2.Client(base_url=url, trust_env=False, timeout=REQUEST_TIMEOUT_SECONDS)

    def publish(index: int) -> tuple[float, float]:
        with client() as http:
            started = time.perf_counter()
            for n in range(args.records):
                key = key_of(index, n)
                body = json.dumps(record(key, f"e-{index}-{n}"), separators=(",", ":"))
                answer = http.put(f"/v1/entries/{key}", content=body, headers=headers)
                assert answer.status_code == 201, answer.text
            return started, time.perf_counter()

    spans = in_parallel(args.clients, publish)
    elapsed = max(end for _s, end in spans) - min(start for start, _e in spans)
    throughput = args.clients * args.records / elapsed

    def publish_batches(index: int) -> tuple[float, float]:
        owner = index + BATCH_CLIENT_OFFSET  # keys of its own, none stored by the PUTs
        with client() as http:
            started = time.perf_counter()
            for first in range(0, args.records, PUBLISH_BATCH_MAX_ENTRIES):
                numbers = range(first, min(args.records, first + PUBLISH_BATCH_MAX_ENTRIES))
                batch = [record(key_of(owner, n), f"e-{owner}-{n}") for n in numbers]
                body = {"entries": [{"key": r["key"], "record": r} for r in batch]}
                content = json.dumps(body, separators=(",", ":"))
                answer = http.post("/v1/entries", content=content, headers=headers)
                assert answer.json() == {"created": [True] * len(batch)}, answer.text
            return started, time.perf_counter()

    spans = in_parallel(args.clients, publish_batches)
    elapsed = max(end for _s, end in spans) - min(start for start, _e in spans)
    batch_throughput = args.clients * args.records / elapsed

    def lookup(index: int) -> list[float]:
        stored = int(args.keys * 0.75)
        wanted = [key_of(index, n % args.records) for n in range(stored)]
        wanted += [key_of(index + 1_000, n) for n in range(args.keys - stored)]  # missing
        body = json.dumps({"keys": wanted})
        times = []
        with client() as http:
            for _ in range(args.batches):
                started = time.perf_counter()
                answer = http.post("/v1/lookup", content=body, headers=headers)
                times.append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text
        return times

    batches = sorted(t for times in in_parallel(args.clients, lookup) for t in times)
    p99 = batches[min(len(batches) - 1, round(0.99 * (len(batches) - 1)))]
    return {
        "publishPerSecond": throughput,
        "batchPublishPerSecond": batch_throughput,
        "lookupP50Ms": statistics.median(batches) * 1000,
        "lookupP99Ms": p99 * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--records", type=int, default=1000, help="published per client")
    parser.add_argument("--keys", type=int, default=1000, help="keys per lookup batch")
    parser.add_argument("--batches", type=int, default=10, help="lookup batches per client")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.keys > 1000:
        parser.error("--keys: the store takes at most 1000 keys per lookup")
    os.environ.pop("ARTIFACTIZE_STORE_DATABASE", None)
    results: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="artifactize-bench-store-"))
    try:
        with store_server(work / "sqlite", None) as (url, token):
            results["sqlite"] = measure(url, token, args)
        from tests.support.postgres import find_binaries, running_postgresql

        if find_binaries() is None:
            results["postgresql"] = None
        else:
            with running_postgresql() as server:
                name = server.create_database()
                with store_server(work / "postgresql", server.url(name)) as (url, token):
                    results["postgresql"] = measure(url, token, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sqlite, postgresql = results["sqlite"], results["postgresql"]
    if postgresql is not None:
        results["ratio"] = {name: postgresql[name] / sqlite[name] for name in sqlite}
    results["setup"] = vars(args) | {"json": None}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        f"{args.clients} clients; {args.records} publishes each; "
        f"{args.batches} lookups of {args.keys} keys each"
    )
    print(
        f"{'':12}{'publish/s':>12}{'batch/s':>12}{'batch/PUT':>11}"
        f"{'lookup p50 ms':>16}{'lookup p99 ms':>16}"
    )
    for engine in ("sqlite", "postgresql"):
        row = results[engine]
        if row is None:
            print(f"{engine:12}  (no PostgreSQL binaries: skipped)")
            continue
        gain = row["batchPublishPerSecond"] / row["publishPerSecond"]
        print(
            f"{engine:12}{row['publishPerSecond']:>12.0f}{row['batchPublishPerSecond']:>12.0f}"
            f"{gain:>10.1f}x{row['lookupP50Ms']:>16.1f}{row['lookupP99Ms']:>16.1f}"
        )
    if "ratio" in results:
        ratio = results["ratio"]
        print(
            f"{'pg/sqlite':12}{ratio['publishPerSecond']:>11.2f}x"
            f"{ratio['batchPublishPerSecond']:>11.2f}x{'':11}"
            f"{ratio['lookupP50Ms']:>15.2f}x{ratio['lookupP99Ms']:>15.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
