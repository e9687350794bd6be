"""What the state check before the first read costs (issue 26): ``PRAGMA quick_check`` on a
read-only connection, against opening the state and its first read without it.

States of growing size are made by copying one real Run document (about 2.5 KB) many
times. For each, the median of ``--runs`` rounds (interleaved) of:

* ``open + first read``: ``SqliteStateStores().open`` and ``list_runs`` (the 50 newest,
  what ``run list`` reads), with the check already done (so not counted);
* ``check``: ``check_state_integrity`` alone (the header, then ``quick_check``).

The ratio is check / (open + first read): what a command pays on top of its first read. The
check is linear in the file's size (it reads every page once); a command checks a file once
per process.

    .venv/bin/python bench/state_check.py
    .venv/bin/python bench/state_check.py --runs 9 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from artifactize.adapters.sqlite import integrity
from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.kernel.document_codec import run_from_json
from artifactize.ports.ids import RunId
from artifactize.ports.state import RunRecord
from artifactize.ports.statuses import RunStatus

SIZES = (10, 1_000, 10_000)  # Runs in the state
DEFAULT_RUNS = 7
DOCUMENT_PADDING = "x" * 2_000


def make_state(folder: Path, runs: int) -> str:
    store = SqliteStateStores().open(str(folder), create=True)
    assert store is not None
    for number in range(runs):
        run_id = f"run-b{number:07d}"
        data: Any = {"id": run_id, "status": "GREEN", "createdAt": f"{number:020d}",
                     "padding": DOCUMENT_PADDING}  # fmt: skip
        store.create_run(
            RunRecord(RunId(run_id), "/repo", RunStatus.GREEN, run_from_json(data)), []
        )
    store.close()
    return str(folder / "state.sqlite")


def open_and_read(folder: Path) -> float:
    started = time.perf_counter()
    store = SqliteStateStores().open(str(folder), create=False)
    assert store is not None
    store.list_runs(None, 50, 0)
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed


def check(database: str) -> float:
    integrity.forget_checked(database)
    started = time.perf_counter()
    integrity.check_state_integrity(database)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in SIZES:
            folder = Path(scratch) / f"state-{size}"
            database = make_state(folder, size)
            check(database)  # warm-up: page cache, and the reads below skip the check
            opened, checked = [], []
            for _ in range(arguments.runs):
                opened.append(open_and_read(folder))
                checked.append(check(database))
            base, cost = statistics.median(opened), statistics.median(checked)
            rows.append({
                "runs": size,
                "megabytes": round(Path(database).stat().st_size / 2**20, 2),
                "openAndFirstReadMs": round(base * 1000, 2),
                "checkMs": round(cost * 1000, 2),
                "ratio": round(cost / base, 2),
            })  # fmt: skip
    if arguments.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(f"{row['runs']:>6} Runs ({row['megabytes']} MB): open + first read "
              f"{row['openAndFirstReadMs']} ms, check {row['checkMs']} ms, "
              f"ratio {row['ratio']}x")  # fmt: skip


if __name__ == "__main__":
    main()
