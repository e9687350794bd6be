"""Base and branch by turns on one generated repository: CPU beside wall, for a before/after.

``bench/scale.py`` measures one version; comparing two needs both measured on the same tree,
the same state and the same load. This script generates one repository of ``--size``
Artifacts with ``bench/scale.py``'s generator, fills one state with a ``verify --all``
(branch code), copies it for the base before each command's set (so neither pays for the
other's grown history), then runs each command on the base (``--base``: a checkout of the
older commit, put first on ``PYTHONPATH``) and on this checkout in turn, ``--runs`` times,
and prints the best CPU (user + sys of the process and its threads) and wall time of each,
and the CPU ratio to ``git status --porcelain`` on the same tree.

    git archive <commit> | tar -x -C /tmp/base
    .venv/bin/python bench/scale_turns.py --base /tmp/base --size 1000 --runs 5
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scale import ENV, REUSE_ONLY, cli, generate
from bench.scale import timed as _timed

COMMANDS = {
    "status": ("--json", "status"),
    "verify": ("--json", "verify", "--all", *REUSE_ONLY),
}


def turns(base: Path, size: int, runs: int, commands: Sequence[str], workdir: Path) -> None:
    repo, state = workdir / "repo", workdir / "state"
    generate(repo, size)
    fill = cli(repo, state, "--json", "verify", "--all", "--jobs", "2", *REUSE_ONLY)
    subprocess.run(fill, env=ENV, cwd=repo, capture_output=True, check=False)
    sides = {"base": {**ENV, "PYTHONPATH": str(base)}, "branch": dict(ENV)}
    git = min(_timed(["git", "status", "--porcelain"], repo)[0] for _ in range(runs))
    print(f"{size:,} Artifacts; git status --porcelain {git:.3f} s of CPU")
    for command in commands:
        states = {"base": workdir / "state-base", "branch": state}
        shutil.rmtree(states["base"], ignore_errors=True)
        shutil.copytree(state, states["base"])
        best = {side: [float("inf"), float("inf")] for side in sides}
        for round_ in range(runs + 1):  # the first round warms each side's file index
            for side, env in sides.items():
                cpu, wall = _timed(cli(repo, states[side], *COMMANDS[command]), repo, env)
                if round_:
                    best[side] = [min(best[side][0], cpu), min(best[side][1], wall)]
        for side, (cpu, wall) in best.items():
            print(
                f"{command:7s} {side:7s} CPU {cpu:.3f} s ({cpu / git:.1f}x git)  wall {wall:.3f} s"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="a checkout of the base")
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--commands", default="status,verify")
    options = parser.parse_args(argv)
    if not (options.base / "artifactize").is_dir():
        parser.error(f"--base {options.base}: no artifactize package there (a checkout?)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="artifactize-turns-"))
    try:
        turns(
            options.base.resolve(), options.size, options.runs, options.commands.split(","), workdir
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
