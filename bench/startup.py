"""Start-up benchmark: how long ``artifactize`` takes to answer, against ``python -c pass``.

Every case is a fresh process of this interpreter, so the reference (``python -c pass``)
pays the same interpreter start and site import as artifactize does; what the ratio shows is
what artifactize adds. Each case runs once as a warm-up (bytecode caches, page cache), then
``--runs`` times (at least 7; 15 by default), interleaved so a burst of load on the machine
hits every case alike. The median is reported, and its ratio to the reference's median; the
median CPU time (user + system, from ``getrusage``) beside it, which the machine's load moves
much less than the wall time.

Each command is judged against the floor of its libraries, imported the ordinary way
(issue 25: no patched or imitated library internals to save import time): ``--version``
imports no library (its floor is ``python -c pass``; target 3x), ``--help`` is typer's
(``floor: typer parsing one option``), ``config check`` and ``status`` are typer's plus
dependency-injector, jsonschema and pathspec (``floor: config check's libraries``;
``config check`` target 1.5x).

``status`` (reported, no target) is a reader's start before the first ``verify``: the
workspace, the selection and the reuse keys. It runs on a state home of its own, which it
never writes, so it finds no state and never imports SQLAlchemy. ``run list``, ``request
list`` and ``mcp log`` (reported, against typer's and dependency-injector's floor) are the readers ``mcp --control``
and scripts start most: on that empty state home they need no workspace (issue 25 item 6).

The floors import only libraries and nothing of artifactize: typer (the command line; the
floor parses one option value, as every command does), and for
``config check`` also dependency-injector (the composition root; it imports asyncio, and
Starlette and pydantic for its integrations), jsonschema (admitting declared schemas) and
pathspec (``.artfignore``): what no change of ours can lower, short of dropping a library.

    .venv/bin/python bench/startup.py
    .venv/bin/python bench/startup.py --runs 15 --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MIN_RUNS = 7
DEFAULT_RUNS = 15  # the reference is 11-23 ms on this kind of machine: more runs, steadier
ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "handbook"
# The console script's own code path, with this interpreter (no PATH lookup, no shell).
CLI = [sys.executable, "-c", "from artifactize.entrypoints.cli.launch import main; main()"]
# The floors: each command's libraries imported the ordinary way (no artifactize), doing the
# least the command makes them do. typer's floor parses one ``str`` option of a one-command
# app, so its coercion is paid as every typer command pays it (typer is pinned to 0.28, the
# newest that coerces without pydantic: docs/architecture.md).
TYPER_FLOOR = (
    "import typer\n"
    "app = typer.Typer(add_completion=False)\n"
    "@app.command()\n"
    "def check(repo: str = '.') -> None: pass\n"
    "app(['--repo', '.'], standalone_mode=False)\n"
)
CONFIG_CHECK_FLOOR = (
    "import dependency_injector.containers, dependency_injector.providers, jsonschema, pathspec\n"
    + TYPER_FLOOR
)
# ``run list``, ``request list`` and ``mcp log`` parse options and build the container: typer
# and dependency-injector; they admit no declarations (no jsonschema, no pathspec).
READER_FLOOR = (
    "import dependency_injector.containers, dependency_injector.providers\n" + TYPER_FLOOR
)
CASES: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "artifactize --version": [*CLI, "--version"],
    "artifactize --help": [*CLI, "--help"],
    "artifactize config check": [*CLI, "--repo", str(EXAMPLE), "config", "check"],
    "artifactize status": [*CLI, "--repo", str(EXAMPLE), "status"],
    "artifactize run list": [*CLI, "--repo", str(EXAMPLE), "run", "list"],
    "artifactize request list": [*CLI, "--repo", str(EXAMPLE), "request", "list"],
    "artifactize mcp log": [*CLI, "--repo", str(EXAMPLE), "mcp", "log"],
    "floor: typer parsing one option": [sys.executable, "-c", TYPER_FLOOR],
    "floor: config check's libraries": [sys.executable, "-c", CONFIG_CHECK_FLOOR],
    "floor: a reader's libraries": [sys.executable, "-c", READER_FLOOR],
}
# Each command against the floor of its libraries (the ratio it is judged by).
FLOORS = {
    "artifactize --version": "python -c pass",
    "artifactize --help": "floor: typer parsing one option",
    "artifactize config check": "floor: config check's libraries",
    "artifactize status": "floor: config check's libraries",
    "artifactize run list": "floor: a reader's libraries",
    "artifactize request list": "floor: a reader's libraries",
    "artifactize mcp log": "floor: a reader's libraries",
}
# Targets, as ratios to each command's floor (issue 25: config check within 1.5x of it).
TARGETS = {
    "artifactize --version": 3.0,
    "artifactize config check": 1.5,
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def once(argv: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """The wall time and the CPU time (user + system) of one fresh process."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, cwd=ROOT, env=environment, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):  # status exits 1: nothing has been reviewed yet
        raise SystemExit(f"{argv} exited {done.returncode}")
    return wall, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = max(args.runs, MIN_RUNS)
    with tempfile.TemporaryDirectory() as state:
        # As on a user's machine, Python caches the bytecode it compiles: with
        # PYTHONDONTWRITEBYTECODE (set on this kind of machine) every run would compile
        # artifactize's own modules again (an editable install has no .pyc until first run).
        environment = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "ARTIFACTIZE_STATE_HOME": state,
        }
        for argv in CASES.values():
            once(argv, environment)
        times: dict[str, list[float]] = {name: [] for name in CASES}
        cpu: dict[str, list[float]] = {name: [] for name in CASES}
        for _ in range(runs):
            for name, argv in CASES.items():
                wall, spent = once(argv, environment)
                times[name].append(wall)
                cpu[name].append(spent)
    reference = statistics.median(times["python -c pass"])
    rows: list[dict[str, Any]] = []
    for name, samples in times.items():
        median = statistics.median(samples)
        cpu_median = statistics.median(cpu[name])
        floor = FLOORS.get(name)
        rows.append(
            {
                "case": name,
                "medianSeconds": round(median, 4),
                "ratio": round(median / reference, 2),
                "floor": floor,
                "ratioToFloor": (
                    round(median / statistics.median(times[floor]), 2) if floor else None
                ),
                # CPU time moves less than wall time on a loaded machine (bench/README.md)
                "cpuMedianSeconds": round(cpu_median, 4),
                "cpuRatioToFloor": (
                    round(cpu_median / statistics.median(cpu[floor]), 2) if floor else None
                ),
                "target": TARGETS.get(name),
            }
        )
    if args.json:
        print(json.dumps({"runs": runs, "cases": rows}, indent=2))
        return
    print(f"start-up, median of {runs} runs; ratio to python -c pass, and to the floor")
    for row in rows:
        target = f"  (target <= {row['target']}x the floor)" if row["target"] else ""
        floor = (
            f"  {row['ratioToFloor']:5.2f}x floor (CPU {row['cpuRatioToFloor']:5.2f}x)"
            if row["floor"]
            else ""
        )
        print(
            f"  {row['case']:<34} {row['medianSeconds'] * 1000:8.1f} ms"
            f"  {row['ratio']:6.2f}x  CPU {row['cpuMedianSeconds'] * 1000:6.1f} ms{floor}{target}"
        )


if __name__ == "__main__":
    main()
