"""Process adapter benchmark: one run of ``true`` through ``PosixProcessRunner`` against a
bare ``subprocess.run(["true"])`` in the same process.

The runner is the CLI's (a group journal, here in a temporary directory removed at the end):
a new session, the leader's identity, the journal's record and release, the pipes and the
exit pumped from one task, the group's SIGKILL and the reap. A third side runs the same
through ``run_between`` (the one worker-thread trip a command-tool call or a runtime eval
makes: the spawn, the wait on the pidfd and the pipes, and the reap on the worker thread,
nothing before or after). Every side runs ``--runs`` times in ``--rounds`` alternating
rounds (the other sessions' load moves them alike); the
medians of the rounds are reported: wall time per run, this process's own CPU per run
(``RUSAGE_SELF``: the adapter's Python side; the child's exec is the same on both sides)
and the total with the children's CPU.

    .venv/bin/python bench/process_run.py
    .venv/bin/python bench/process_run.py --runs 1200 --rounds 6 --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from artifactize.adapters.posix.group_journal import GroupJournal
from artifactize.adapters.posix.process import PosixProcessRunner
from artifactize.ports.process import ProcessSpec

MILLISECONDS = 1000


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    program = shutil.which("true") or "/bin/true"
    root = tempfile.mkdtemp(prefix="artifactize-bench-process-")
    try:
        runner = PosixProcessRunner(GroupJournal(os.path.join(root, "groups")))
        spec = ProcessSpec(argv=(program,), cwd=root, env=dict(os.environ), timeout_ms=60_000)
        figures = anyio.run(measure, runner, spec, program, options.runs, options.rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if options.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"one run of true, {figures['runsPerSide']} per side in {options.rounds} rounds: "
        f"adapter {figures['wallMs']} ms, bare {figures['bareWallMs']} ms "
        f"({figures['wallRatio']}x); own CPU {figures['ownCpuMs']} ms against "
        f"{figures['bareOwnCpuMs']} ms ({figures['ownCpuRatio']}x); with the child's "
        f"{figures['totalCpuRatio']}x; through run_between {figures['betweenWallMs']} ms "
        f"({figures['betweenWallRatio']}x), own CPU {figures['betweenOwnCpuMs']} ms "
        f"({figures['betweenOwnCpuRatio']}x), with the child's {figures['betweenTotalCpuRatio']}x"
    )


async def measure(
    runner: PosixProcessRunner, spec: ProcessSpec, program: str, runs: int, rounds: int
) -> dict[str, float | int]:
    per_round = max(runs // rounds, 1)

    async def adapter() -> None:
        for _ in range(per_round):
            outcome = await runner.run(spec)
            if outcome.exit_code != 0:
                raise SystemExit(f"true failed through the adapter: {outcome}")

    async def between() -> None:
        for _ in range(per_round):
            outcome = await runner.run_between(lambda: spec, lambda done: done)
            if outcome.exit_code != 0:
                raise SystemExit(f"true failed through run_between: {outcome}")

    async def bare() -> None:
        for _ in range(per_round):
            subprocess.run([program], check=True)

    await adapter()  # warm up: the journal's directory and sweep, imports
    await between()
    await bare()
    sides = {"adapter": adapter, "between": between, "bare": bare}
    samples: dict[str, list[tuple[float, float, float]]] = {side: [] for side in sides}
    for _ in range(rounds):
        for side, work in sides.items():
            own = cpu_seconds(resource.RUSAGE_SELF)
            children = cpu_seconds(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            await work()
            wall = time.perf_counter() - started
            own = cpu_seconds(resource.RUSAGE_SELF) - own
            children = cpu_seconds(resource.RUSAGE_CHILDREN) - children
            scale = MILLISECONDS / per_round
            samples[side].append((wall * scale, own * scale, (own + children) * scale))
    ours, trip, theirs = (
        [statistics.median(sample[i] for sample in samples[side]) for i in range(3)]
        for side in ("adapter", "between", "bare")
    )
    return {
        "runsPerSide": per_round * rounds,
        "wallMs": round(ours[0], 3),
        "bareWallMs": round(theirs[0], 3),
        "wallRatio": round(ours[0] / theirs[0], 2),
        "ownCpuMs": round(ours[1], 3),
        "bareOwnCpuMs": round(theirs[1], 3),
        "ownCpuRatio": round(ours[1] / theirs[1], 2),
        "totalCpuMs": round(ours[2], 3),
        "bareTotalCpuMs": round(theirs[2], 3),
        "totalCpuRatio": round(ours[2] / theirs[2], 2),
        "betweenWallMs": round(trip[0], 3),
        "betweenWallRatio": round(trip[0] / theirs[0], 2),
        "betweenOwnCpuMs": round(trip[1], 3),
        "betweenOwnCpuRatio": round(trip[1] / theirs[1], 2),
        "betweenTotalCpuMs": round(trip[2], 3),
        "betweenTotalCpuRatio": round(trip[2] / theirs[2], 2),
    }


if __name__ == "__main__":
    main()
