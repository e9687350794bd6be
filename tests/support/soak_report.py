"""``python -m tests.support.soak_report COUNTS``: the hostile suite's counts, summed per
check (trials, failures), as ``make soak`` prints them. Exit 1 when any check failed."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def main(argv: list[str]) -> int:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    path = Path(argv[0])
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    for line in lines:
        entry = json.loads(line)
        totals[entry["name"]][0] += entry["trials"]
        totals[entry["name"]][1] += entry["failures"]
    width = max((len(name) for name in totals), default=10)
    print(f"{'check':<{width}}  {'trials':>8}  {'failures':>8}")
    for name in sorted(totals):
        trials, failures = totals[name]
        print(f"{name:<{width}}  {trials:>8}  {failures:>8}")
    return 1 if any(failures for _trials, failures in totals.values()) or not totals else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
