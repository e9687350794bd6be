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

    .venv/bin/python bench/scheduling.py
    .venv/bin/python bench/scheduling.py --sleepers 8 --instant 200 --json
"""

from __future__ import annotations

import argparse
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


def verify(repo: Path, state: Path, *args: str) -> dict[str, Any]:
    """One ``verify`` in a fresh interpreter; its Run as JSON."""
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


if __name__ == "__main__":
    main()
