"""One racer of the SQLite claim race: ``python -m tests.support.sqlite_claim_race
STATE_DIR WORKER KEYS GO_FILE``.

Touches GO_FILE.ready-WORKER once imported, then waits for GO_FILE (so every racer opens
the fresh state at about the same time), opens it
with ``create=True``, then claims keys ``key-000``… (starting at a worker-specific offset, so
racers collide in different orders). An even-numbered key it owns is settled GREEN and
recorded, so later claimants may reuse it; an odd-numbered one stays held (claimants: BUSY). Prints ``{key: outcome}`` as JSON on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.kernel.document_codec import execution_from_json
from artifactize.ports.ids import ExecutionId, ReuseKey
from artifactize.ports.state import ClaimOutcome, ExecutionRecord
from artifactize.ports.statuses import ExecutionStatus

GO_WAIT_SECONDS = 10.0


def main(argv: list[str]) -> int:
    state_dir, worker, keys, go_file = argv[0], int(argv[1]), int(argv[2]), Path(argv[3])
    Path(f"{go_file}.ready-{worker}").touch()
    deadline = time.monotonic() + GO_WAIT_SECONDS
    while not go_file.exists():
        if time.monotonic() > deadline:
            print("no go signal", file=sys.stderr)
            return 1
        time.sleep(0.002)
    store = SqliteStateStores().open(state_dir, create=True)
    assert store is not None
    outcomes: dict[str, str] = {}
    try:
        for step in range(keys):
            number = (step + worker * 7) % keys
            key = f"key-{number:03d}"
            execution = ExecutionRecord(
                id=ExecutionId(f"execution-w{worker}-{key}"),
                key=ReuseKey(key),
                eval_def_hash="hash",
                status=ExecutionStatus.RUNNING,
                owner_pid=os.getpid(),
                owner_start_time=float(worker),
                backend=None,
                completed_at=None,
                data=execution_from_json({"worker": worker}),
            )
            claim = store.claim(execution, lambda _pid, _start: True)
            outcomes[key] = claim.outcome.value
            if claim.outcome is ClaimOutcome.OWNED and number % 2 == 0:
                store.complete_execution(
                    replace(execution, status=ExecutionStatus.GREEN), record=True
                )
    finally:
        store.close()
    print(json.dumps(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
