"""``verify --shard`` and ``status --shard`` end to end: the real CLI, real files, SQLite.

A generated repository (``bench/scale.py``'s generator, 40 Artifacts, runtime evals that
run ``true``): the two shards' ``verify`` Runs select every eval exactly once between them,
``status --json --shard`` lists its shard as its ``selection``, and a bad value exits 2
with a one-line error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scale import generate
from tests.support.scale_repo import REUSE_ONLY, run_json


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shards") / "repo"
    generate(root, 40)
    return root


def test_two_verify_shards_select_every_eval_once(repo: Path, tmp_path: Path) -> None:
    code, everything = run_json(repo, tmp_path / "all", "status", "--all")
    assert code in (0, 1)
    selections = []
    for part in ("1/2", "2/2"):
        code, run = run_json(
            repo, tmp_path / "state", "verify", "--all", "--shard", part, *REUSE_ONLY
        )
        assert code in (0, 4), run
        selections.append(run["selection"])
    first, second = selections
    assert first and second
    assert not set(first) & set(second)
    assert sorted(first + second) == sorted(everything["selection"])


def test_status_lists_its_shard_as_its_selection(repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    _, whole = run_json(repo, state, "status")
    _, third = run_json(repo, state, "status", "--shard", "3/3")
    assert third["selection"]
    assert set(third["selection"]) < set(whole["selection"])
    _, again = run_json(repo, state, "status", "--shard", "3/3")
    assert again["selection"] == third["selection"]  # deterministic


def test_a_bad_shard_exits_2_with_a_json_error(repo: Path, tmp_path: Path) -> None:
    code, answer = run_json(repo, tmp_path / "state", "verify", "--all", "--shard", "3/2")
    assert code == 2
    assert answer == {"error": "--shard takes I/N with 1 <= I <= N <= 1024, got '3/2'."}
