"""Reviews benchmark: what a fingerprint and a reuse hit cost, against plain references.

Generates, in a temporary directory removed at the end (even on error or Ctrl-C), a
workspace with one folder Artifact ``bench`` holding ``--files`` files (default 5,000 of
about 8 KiB: ~40 MB) and an Agent eval ``bench/review``. Then, in this one process (best
of ``--runs`` after one warm-up, contenders taking turns within each round):

- **artifactsum** (``compute_artifactsum``: the pinned no-follow walk, ignore rules,
  per-file SHA-256) against a plain Python reference: ``os.walk`` + ``open``/``read`` +
  ``hashlib.sha256`` of every file, the least any content fingerprint must do;
- **a reuse hit**: ``verify bench/review`` when the key already has a record (load the
  workspace, fingerprint, claim → REUSED, save the Run) against the least a reuse needs:
  ``ConfigService.load`` plus the same artifactsum.

    .venv/bin/python bench/reviews.py
    .venv/bin/python bench/reviews.py --files 2000 --runs 3 --json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from artifactize.adapters.ids import SecretIds
from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.adapters.posix.process_table import PsutilProcessTable
from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.adapters.system_clock import SystemClock
from artifactize.adapters.worker_threads import AnyioWorkerThreads
from artifactize.domain.reviews.agent.review import ReviewPorts
from artifactize.domain.reviews.reuse.artifactsum import compute_artifactsum
from artifactize.domain.reviews.run.context import VerifyPorts
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.tools.registry import ToolPorts
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.domain.use_cases.verify import Verify
from artifactize.ports.ids import ExecutionId
from artifactize.ports.state import ExecutionRecord
from artifactize.ports.statuses import ExecutionStatus

DECLARATION = """name = "bench"
[views.agent_tools]
read = { builtin = "read" }
[evals.review]
title = "Bench"
profile = { kind = "agent", backend = "openai", model = "m1" }
payload.instruction = "Review {bench}."
"""


def generate(root: Path, files: int) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "index.artf").write_text(DECLARATION)
    line = b"def handler(value):\n    return value * 2  # a line of about sixty bytes\n"
    for index in range(files):
        folder = repo / f"d{index // 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{index:05d}.py").write_bytes(line * 110 + str(index).encode())
    return repo


def plain_hash(repo: Path) -> str:
    digest = hashlib.sha256()
    for folder, dirs, names in os.walk(repo):
        dirs.sort()
        for name in sorted(names):
            with open(os.path.join(folder, name), "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def best(function: Callable[[], Any], runs: int) -> float:
    function()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


class NoBackends:
    def open(self, backend: str) -> Any:
        raise AssertionError("a reuse hit must not open a backend")

    def test_endpoint(self, backend: str) -> None:
        return None


def reuse_hit(repo: Path, state_dir: Path) -> Callable[[], None]:
    config = ConfigService(PosixFilesystem())
    stores = SqliteStateStores()
    store = stores.open(str(state_dir), create=True)
    assert store is not None
    tools = ToolPorts(PosixFilesystem(), None, None, {}, threads=AnyioWorkerThreads())  # type: ignore[arg-type]
    review = ReviewPorts(
        SystemClock(),
        NoBackends(),  # type: ignore[arg-type]
        tools,
        None,  # type: ignore[arg-type]
        lambda: config.load(str(repo)),
        threads=AnyioWorkerThreads(),
    )
    ports = VerifyPorts(
        review, store, PsutilProcessTable(), lambda run_id: str(state_dir), {}, SecretIds()
    )

    def seed() -> None:
        workspace = config.load(str(repo))
        service = Verify(ports, workspace, VerifyOptions(str(repo), str(state_dir)))
        refs = [workspace.find_eval("bench/review")]
        (keys,) = service.prepare(refs)
        me = PsutilProcessTable().own_identity()
        data: Any = {  # a seed: only what a reuse hit reads
            "status": "GREEN",
            "result": {"verdict": "GREEN"},
            "profile": {"kind": "agent"},
            "provenance": {"runId": "run-seed00", "requestId": "run-seed00-1"},
            "usage": [],
        }
        execution = ExecutionRecord(
            ExecutionId("execution-seed"),
            keys.key,
            keys.def_hash,
            ExecutionStatus.RUNNING,
            me.pid,
            me.create_time,
            "openai",
            None,
            data,
        )
        store.claim(execution, lambda pid, start: True)
        done = ExecutionRecord(
            ExecutionId("execution-seed"),
            keys.key,
            keys.def_hash,
            ExecutionStatus.GREEN,
            me.pid,
            me.create_time,
            "openai",
            "2026-01-01T00:00:00.000000000Z",
            data,
        )
        store.complete_execution(done, record=True)

    seed()

    def run() -> None:
        workspace = config.load(str(repo))
        service = Verify(ports, workspace, VerifyOptions(str(repo), str(state_dir)))
        refs = [workspace.find_eval("bench/review")]
        result = anyio.run(service.run, refs, service.prepare(refs))
        source = result.requests[0].source
        assert source is not None and source["kind"] == "cache", result.requests[0]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="artifactize-bench-reviews-"))
    try:
        repo = generate(root, options.files)
        filesystem = PosixFilesystem()
        workspace = ConfigService(filesystem).load(str(repo))
        ours = best(lambda: compute_artifactsum(workspace, "bench", filesystem), options.runs)
        plain = best(lambda: plain_hash(repo), options.runs)
        config = ConfigService(filesystem)

        def floor() -> None:
            loaded = config.load(str(repo))
            compute_artifactsum(loaded, "bench", filesystem)

        hit = best(reuse_hit(repo, root / "state"), options.runs)
        least = best(floor, options.runs)
        figures = {
            "files": options.files,
            "artifactsumSeconds": round(ours, 4),
            "plainHashSeconds": round(plain, 4),
            "artifactsumRatio": round(ours / plain, 2),
            "reuseHitSeconds": round(hit, 4),
            "loadPlusFingerprintSeconds": round(least, 4),
            "reuseHitRatio": round(hit / least, 2),
        }
        if options.json:
            print(json.dumps(figures, indent=2))
        else:
            print(
                f"artifactsum of {options.files} files: {ours:.3f} s vs plain walk+sha256 "
                f"{plain:.3f} s = {ours / plain:.2f}x"
            )
            print(
                f"verify reuse hit: {hit:.3f} s vs load+fingerprint {least:.3f} s = "
                f"{hit / least:.2f}x"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
