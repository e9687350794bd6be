"""Start-up benchmark: how long ``artifactize`` takes to answer, against ``python -c pass``.

Every case is a fresh process of this interpreter, so the reference (``python -c pass``)
pays the same interpreter start and site import as artifactize does; what the ratio shows is
what artifactize adds. Each case runs once as a warm-up (bytecode caches, page cache), then
``--runs`` times (at least 7; 15 by default), interleaved so a burst of load on the machine
hits every case alike. The median is reported, and its ratio to the reference's median.

Targets (issue #9): ``--version`` and ``--help`` within 6x, ``config check`` on
``examples/handbook`` within 15x.

``status`` (reported, no target) is a reader's start before the first ``verify``: the
workspace, the selection and the reuse keys. It runs on a state home of its own, which it
never writes, so it finds no state and never imports SQLAlchemy.

``libraries config check needs`` (reported, no target) imports only the four libraries
``config check`` cannot do without — typer (its command line), dependency-injector (the
composition root; it imports asyncio), jsonschema (admitting declared schemas) and pathspec
(``.artfignore``) — and nothing of artifactize: the floor under ``config check`` that no
change of ours can lower, short of dropping one of them.

    .venv/bin/python bench/startup.py
    .venv/bin/python bench/startup.py --runs 15 --json
"""

from __future__ import annotations

import argparse
import json
import os
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
CLI = [sys.executable, "-c", "from entrypoints.cli.launch import main; main()"]
CASES: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "artifactize --version": [*CLI, "--version"],
    "artifactize --help": [*CLI, "--help"],
    "artifactize config check": [*CLI, "--repo", str(EXAMPLE), "config", "check"],
    "artifactize status": [*CLI, "--repo", str(EXAMPLE), "status"],
    "libraries config check needs": [
        sys.executable,
        "-c",
        "import typer, jsonschema, pathspec, entrypoints.injector_import",
    ],
}
TARGETS = {
    "artifactize --version": 6.0,
    "artifactize --help": 6.0,
    "artifactize config check": 15.0,
}


def once(argv: list[str], environment: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, cwd=ROOT, env=environment, check=False)
    if done.returncode not in (0, 1):  # status exits 1: nothing has been reviewed yet
        raise SystemExit(f"{argv} exited {done.returncode}")
    return time.perf_counter() - start


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
        for _ in range(runs):
            for name, argv in CASES.items():
                times[name].append(once(argv, environment))
    reference = statistics.median(times["python -c pass"])
    rows: list[dict[str, Any]] = []
    for name, samples in times.items():
        median = statistics.median(samples)
        rows.append(
            {
                "case": name,
                "medianSeconds": round(median, 4),
                "ratio": round(median / reference, 2),
                "target": TARGETS.get(name),
            }
        )
    if args.json:
        print(json.dumps({"runs": runs, "cases": rows}, indent=2))
        return
    print(f"start-up, median of {runs} runs, ratio to python -c pass")
    for row in rows:
        target = f"  (target <= {row['target']}x)" if row["target"] else ""
        print(
            f"  {row['case']:<30} {row['medianSeconds'] * 1000:8.1f} ms  {row['ratio']:6.2f}x{target}"
        )


if __name__ == "__main__":
    main()
