"""``verify --shard`` and ``status --shard`` end to end: the real CLI, real files, SQLite.

A generated repository (``bench/scale.py``'s generator, 40 Artifacts, runtime evals that
run ``true``): the two shards' ``verify`` Runs select every eval exactly once between them,
``status --json --shard`` lists its shard as its ``selection``, and a bad value exits 2
with a one-line error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.scale import generate

ENV = {**os.environ, "ARTIFACTIZE_REMOTE": "off"}
REUSE_ONLY = ("--reuse-only", "agent,human")


def _cli(repo: Path, state: Path, *args: str) -> tuple[int, Any]:
    command = [sys.executable, "-m", "artifactize.entrypoints.cli.app", "--repo", str(repo)]
    command += ["--state-dir", str(state), "--json", *args]
    done = subprocess.run(command, cwd=repo, env=ENV, capture_output=True, text=True, check=False)
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shards") / "repo"
    generate(root, 40)
    return root


def test_two_verify_shards_select_every_eval_once(repo: Path, tmp_path: Path) -> None:
    code, everything = _cli(repo, tmp_path / "all", "status", "--all")
    assert code in (0, 1)
    selections = []
    for part in ("1/2", "2/2"):
        code, run = _cli(repo, tmp_path / "state", "verify", "--all", "--shard", part, *REUSE_ONLY)
        assert code in (0, 4), run
        selections.append(run["selection"])
    first, second = selections
    assert first and second
    assert not set(first) & set(second)
    assert sorted(first + second) == sorted(everything["selection"])


def test_status_lists_its_shard_as_its_selection(repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    _, whole = _cli(repo, state, "status")
    _, third = _cli(repo, state, "status", "--shard", "3/3")
    assert third["selection"]
    assert set(third["selection"]) < set(whole["selection"])
    _, again = _cli(repo, state, "status", "--shard", "3/3")
    assert again["selection"] == third["selection"]  # deterministic


def test_a_bad_shard_exits_2_with_a_json_error(repo: Path, tmp_path: Path) -> None:
    code, answer = _cli(repo, tmp_path / "state", "verify", "--all", "--shard", "3/2")
    assert code == 2
    assert answer == {"error": "--shard takes I/N with 1 <= I <= N <= 1024, got '3/2'."}
