"""The symlink-swap race, counted: at least 2,000 ``read``, ``list``, ``glob`` and ``grep``
calls (20,000 under ``make soak``) while a directory of the Artifact is swapped for a
symlink to ``/`` or to a sibling full of canaries, and back. No call may ever show anything
from outside the workspace."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.integration.test_builtins_hostile import CANARY, EVAL_TOML, TOOLS_TOML, Swapper, tools
from tests.support.hostile import record_counts, scaled
from tests.support.workspaces import write

pytestmark = pytest.mark.anyio

CALLS = 2000

ARGUMENTS: dict[str, dict[str, Any]] = {
    "read_a": {"path": "data/file.txt"},
    "list_a": {"path": "data"},
    "glob_a": {"pattern": "**/*.txt"},
    "grep_a": {"pattern": f"inside|{CANARY}|root"},
}


async def test_swapped_calls_never_escape(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path)) / "W"
    write(root / "a" / "index.artf", 'name = "a"\n' + TOOLS_TOML + EVAL_TOML)
    write(root / "a" / "data" / "file.txt", "inside\n")
    write(root / "a" / "data" / "sub" / "x.txt", "inside\n")
    outside = root.parent / "outside"
    for name in ("file.txt", "sub/x.txt", "canary-only.txt"):
        write(outside / name, f"{CANARY}\n")
    call = tools(root)
    wanted = scaled(CALLS)
    made = escapes = refused = 0

    async def hammer(name: str) -> None:
        nonlocal made, escapes, refused
        while made < wanted:
            made += 1
            result = await call(name, ARGUMENTS[name])
            text = json.dumps(result.to_json(), ensure_ascii=False)
            if CANARY in text or "canary-only" in text:
                escapes += 1
            refused += result.is_error

    swapper = Swapper(root / "a" / "data", outside)
    thread = threading.Thread(target=swapper.run, name="swapper")
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    thread.start()
    try:
        async with anyio.create_task_group() as group:
            for name in ARGUMENTS:
                group.start_soon(hammer, name)
    finally:
        swapper.stop()
        thread.join()
        sys.setswitchinterval(interval)
    record_counts("symlink swap: read/list/glob/grep calls (failures: escapes)", made, escapes)
    assert swapper.failure is None, swapper.failure
    assert made >= wanted and escapes == 0
    assert 0 < refused < made  # the race was real: some calls met a symlink, some did not
    assert swapper.swaps > 0
