"""Scheduling benchmark: what ``verify --jobs`` buys, and what scheduling costs per eval.

Writes, in a temporary directory removed at the end (even on an error or Ctrl-C), a
workspace with two folder Artifacts and runs the real CLI (``python -m
entrypoints.cli.app verify``) against a fresh state each time:

- **jobs**: ``sleepy`` has ``--sleepers`` runtime evals (default 8) that each sleep
  ``--sleep`` seconds (default 1). ``verify sleepy --jobs 1`` against ``--jobs 4``: the
  ratio of the Runs' own wall times (``summary.wallMs``: from the Run's creation to its
  end, so interpreter start-up is left out). Target: ≥ 3× faster with 4 jobs.
- **overhead**: ``instant`` has ``--instant`` runtime evals (default 200) whose command is
  ``true``. ``verify instant --jobs 1``: the Run's wall time per eval, against the bare
  cost of the same work without us (``subprocess.run(["true"])`` 200 times in this
  process): the ratio, and the overhead per eval in milliseconds (scheduling, fingerprint
  recheck, the private directories and the state writes of each request).
- **history** (``--history N``, default 0: skipped): the same overhead measured again on a
  state whose reuse history already holds ``N`` settled records of other keys (written
  through the store's own API, as a long-used state holds them; the cap is 100,000), so a
  per-eval cost that grows with the history shows.

    .venv/bin/python bench/scheduling.py
    .venv/bin/python bench/scheduling.py --sleepers 8 --instant 200 --json
    .venv/bin/python bench/scheduling.py --history 20000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_SPEEDUP = 3.0
MILLISECONDS = 1000


def declare(folder: Path, name: str, evals: dict[str, list[str]], command: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"name = {json.dumps(name)}"]
    for eval_id, args in evals.items():
        lines += [
            f"[evals.{eval_id}]",
            f"title = {json.dumps(eval_id)}",
            f'profile = {{ kind = "runtime", command = {json.dumps(command)}, '
            f"args = {json.dumps(args)} }}",
            f"payload.instruction = {json.dumps('Run ' + eval_id + '.')}",
        ]
    (folder / "index.artf").write_text("\n".join(lines) + "\n", encoding="utf-8")


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its waited-for children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def seed_history(state: Path, records: int) -> None:
    """A fresh state at ``state`` whose reuse history holds ``records`` settled GREEN
    records, each of its own key (none an eval of the benchmark's)."""
    from artifactize.adapters.sqlite.state import SqliteStateStores
    from artifactize.kernel.document_codec import execution_from_json
    from artifactize.ports.ids import ExecutionId, ReuseKey
    from artifactize.ports.state import ClaimOutcome, ExecutionRecord
    from artifactize.ports.statuses import ExecutionStatus

    shutil.rmtree(state, ignore_errors=True)
    store = SqliteStateStores().open(str(state), create=True)
    assert store is not None
    with store.batch():  # one transaction: seeding is not what is measured
        for number in range(records):
            identifier = f"execution-seed-{number}"
            running = ExecutionRecord(
                id=ExecutionId(identifier),
                key=ReuseKey(f"seed-{number:064d}"),
                eval_def_hash="seed",
                status=ExecutionStatus.RUNNING,
                owner_pid=os.getpid(),
                owner_start_time=0.0,
                backend=None,
                completed_at=None,
                data=execution_from_json({"id": identifier}),
            )
            if store.claim(running, lambda _pid, _start: True).outcome is not ClaimOutcome.OWNED:
                raise SystemExit(f"seeding the history: {identifier} was not claimed")
            completed = f"2026-01-01T00:{number // 60 % 60:02d}:{number % 60:02d}.000000000Z"
            data = {"id": identifier, "status": "GREEN", "completedAt": completed}
            settled = dataclasses.replace(
                running,
                status=ExecutionStatus.GREEN,
                completed_at=completed,
                data=execution_from_json(data),
            )
            store.complete_execution(settled, record=True)
    store.close()


def verify(repo: Path, state: Path, *args: str, keep_state: bool = False) -> dict[str, Any]:
    """One ``verify`` in a fresh interpreter (on a fresh state unless ``keep_state``); its
    Run as JSON."""
    if not keep_state:
        shutil.rmtree(state, ignore_errors=True)
    command = [sys.executable, "-m", "artifactize.entrypoints.cli.app", "--repo", str(repo)]
    command += ["--state-dir", str(state), "--json", "verify", *args]
    env = {**os.environ, "ARTIFACTIZE_REMOTE": "off"}
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=REPO_ROOT, env=env, check=False
    )
    run: dict[str, Any] = json.loads(done.stdout)
    if done.returncode != 0:
        raise SystemExit(f"verify {' '.join(args)} exited {done.returncode}: {run}")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sleepers", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--instant", type=int, default=200)
    parser.add_argument("--history", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="artifactize-bench-scheduling-"))
    try:
        repo, state = root / "repo", root / "state"
        sleeper = shutil.which("sleep") or "sleep"
        instant = shutil.which("true") or "true"
        declare(
            repo / "sleepy",
            "sleepy",
            {f"s{n}": [str(options.sleep)] for n in range(options.sleepers)},
            sleeper,
        )
        declare(repo / "instant", "instant", {f"i{n}": [] for n in range(options.instant)}, instant)
        declare(repo / "single", "single", {"i0": []}, instant)

        serial = verify(repo, state, "sleepy", "--jobs", "1")["summary"]["wallMs"]
        parallel = verify(repo, state, "sleepy", "--jobs", "4")["summary"]["wallMs"]

        cpu = cpu_seconds()
        verify(repo, state, "single", "--jobs", "1")
        single_cpu = cpu_seconds() - cpu
        cpu = cpu_seconds()
        run = verify(repo, state, "instant", "--jobs", "1")
        # CPU per eval: the difference to a one-eval verify, so start-up is left out
        ours_cpu_ms = (cpu_seconds() - cpu - single_cpu) * MILLISECONDS / (options.instant - 1)
        ours_ms = run["summary"]["wallMs"] / options.instant
        cpu = cpu_seconds()
        started = time.perf_counter()
        for _ in range(options.instant):
            subprocess.run([instant], check=True)
        bare_ms = (time.perf_counter() - started) * MILLISECONDS / options.instant
        bare_cpu_ms = (cpu_seconds() - cpu) * MILLISECONDS / options.instant

        if options.history:
            # the same overhead on a state with a history (seeded outside the CPU counted)
            seed_history(state, options.history)
            cpu = cpu_seconds()
            verify(repo, state, "single", "--jobs", "1", keep_state=True)
            history_single_cpu = cpu_seconds() - cpu
            seed_history(state, options.history)
            cpu = cpu_seconds()
            history_run = verify(repo, state, "instant", "--jobs", "1", keep_state=True)
            history_cpu_ms = (
                (cpu_seconds() - cpu - history_single_cpu) * MILLISECONDS / (options.instant - 1)
            )
            history_ms = history_run["summary"]["wallMs"] / options.instant

        figures = {
            "sleepers": options.sleepers,
            "sleepSeconds": options.sleep,
            "jobs1WallMs": serial,
            "jobs4WallMs": parallel,
            "speedup": round(serial / parallel, 2),
            "speedupTarget": TARGET_SPEEDUP,
            "instantEvals": options.instant,
            "perEvalMs": round(ours_ms, 2),
            "barePerEvalMs": round(bare_ms, 2),
            "overheadPerEvalMs": round(ours_ms - bare_ms, 2),
            "overheadRatio": round(ours_ms / bare_ms, 2),
            "cpuPerEvalMs": round(ours_cpu_ms, 2),
            "bareCpuPerEvalMs": round(bare_cpu_ms, 2),
            "cpuRatio": round(ours_cpu_ms / bare_cpu_ms, 2),
        }
        if options.history:
            figures.update(
                historyRecords=options.history,
                historyPerEvalMs=round(history_ms, 2),
                historyOverheadRatio=round(history_ms / bare_ms, 2),
                historyCpuPerEvalMs=round(history_cpu_ms, 2),
                historyCpuRatio=round(history_cpu_ms / bare_cpu_ms, 2),
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if options.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"{figures['sleepers']} evals sleeping {figures['sleepSeconds']} s: --jobs 1 "
        f"{serial} ms, --jobs 4 {parallel} ms: {figures['speedup']}x faster "
        f"(target >= {TARGET_SPEEDUP}x)"
    )
    print(
        f"{options.instant} instant evals (--jobs 1): {figures['perEvalMs']} ms per eval, "
        f"bare process {figures['barePerEvalMs']} ms: {figures['overheadRatio']}x, "
        f"overhead {figures['overheadPerEvalMs']} ms per eval; CPU {figures['cpuPerEvalMs']} ms "
        f"per eval against {figures['bareCpuPerEvalMs']} ms: {figures['cpuRatio']}x"
    )
    if options.history:
        print(
            f"the same on a history of {options.history} records: "
            f"{figures['historyPerEvalMs']} ms per eval ({figures['historyOverheadRatio']}x), "
            f"CPU {figures['historyCpuPerEvalMs']} ms per eval ({figures['historyCpuRatio']}x)"
        )


if __name__ == "__main__":
    main()
