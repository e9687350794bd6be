"""Base and branch by turns on one discovery tree: bare, no index, cold and warm, interleaved.

``bench/discovery.py`` measures one version, each figure in its own block of runs, so a
shared machine's load moves one block and not the next. This script generates one tree
with ``bench/discovery.py``'s generator, then runs ``--rounds`` pairs of processes, the
base's (``--base``: a checkout of the older commit, put first on ``PYTHONPATH``) and this
checkout's, alternating. Each process fills its own file index, then ``--runs`` times
times the bare walk, the load without an index, a cold load and a warm load one after the
other, and prints the best of each; the ratios are to the bare walk of the same process.

    git archive <commit> | tar -x -C /tmp/base
    .venv/bin/python bench/discovery_turns.py --base /tmp/base --folders 1000 --files 100
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def side(tree: str, index: str, runs: int) -> dict[str, float]:
    """The best of each figure in this process (ms), ``artifactize`` as imported here."""
    sys.path.append(str(ROOT))  # last: the side's own artifactize comes first
    from bench.discovery import _drop, _reset_caches, bare, ours, ours_indexed

    _drop(index)
    ours_indexed(tree, index)  # cold: fills it
    cold_index = index + ".cold"

    def timed(run: Callable[[], object]) -> float:
        gc.collect()
        start = time.perf_counter()
        run()
        return time.perf_counter() - start

    times: dict[str, list[float]] = {"bare": [], "uncached": [], "cold": [], "warm": []}
    for _ in range(runs):
        times["bare"].append(timed(lambda: bare(tree)))
        _reset_caches()
        times["uncached"].append(timed(lambda: ours(tree)))
        _reset_caches()
        _drop(cold_index)
        times["cold"].append(timed(lambda: ours_indexed(tree, cold_index)))
        _reset_caches()
        times["warm"].append(timed(lambda: ours_indexed(tree, index)))
    return {name: round(min(values) * 1000, 2) for name, values in times.items()}


def turns(base: Path, folders: int, files: int, rounds: int, runs: int) -> None:
    sys.path.insert(0, str(ROOT))
    from artifactize.adapters.file_index import RACY_MARGIN_NS
    from bench.discovery import build_workspace_tree

    with tempfile.TemporaryDirectory(prefix="artifactize-turns-") as tmp:
        tree = os.path.join(os.path.realpath(tmp), "repo")
        build_workspace_tree(Path(tree), folders, files)
        time.sleep(RACY_MARGIN_NS / 1e9 + 0.1)  # older than the racy margin: kept
        sides = {"base": {**os.environ, "PYTHONPATH": str(base)}, "branch": dict(os.environ)}
        print(f"{folders:,} + {files:,} Artifacts; best of {runs} per process (ms)")
        for turn in range(1, rounds + 1):
            for name, env in sides.items():
                argv = [sys.executable, __file__, "--side", tree, f"{tmp}/{name}.idx"]
                done = subprocess.run(
                    [*argv, "--runs", str(runs)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                best = json.loads(done.stdout)
                ratios = " ".join(
                    f"{key} {best[key]:.1f} ({best[key] / best['bare']:.2f}x)"
                    for key in ("warm", "cold", "uncached")
                )
                print(f"turn {turn} {name:6} bare {best['bare']:.1f}  {ratios}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="a checkout of the base commit")
    parser.add_argument("--folders", type=int, default=1_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4, help="process pairs (default 4)")
    parser.add_argument("--runs", type=int, default=7, help="runs per process (default 7)")
    parser.add_argument("--side", nargs=2, metavar=("TREE", "INDEX"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(side(args.side[0], args.side[1], args.runs)))
        return 0
    if args.base is None or args.folders < 1 or args.rounds < 1 or args.runs < 1:
        parser.error("--base is required; --folders, --rounds and --runs at least 1")
    turns(args.base, args.folders, args.files, args.rounds, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
