"""The field round (docs/field.md) on a generated project: what a user does to a repository
between two commands, and the answer ``status`` and ``verify`` must give after each, with
the warm paths on (the file index's declarations, kept walks and kept discovery).

Each answer is compared with the one a state without the file index gives (the index is an
optimisation only), and nothing is written into the repository. ``lib`` is a child folder
Artifact, so its walk is kept once its files are safely old (``RACY_MARGIN_NS``); the root
Artifact's walk never is. The runtime eval runs ``/bin/sh check.sh {lib}/value.txt``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.file_index import RACY_MARGIN_NS
from artifactize.entrypoints.container import FILE_INDEX_FILE
from tests.support.cli import run_cli
from tests.support.workspaces import declare, entries_under, write

EVAL = "checks/run"
RED, OPERATIONAL = 1, 2


def _repo(root: Path) -> Path:
    declare(root, {"name": "root"})
    declare(root / "lib", {"name": "lib", "basis": True})
    write(root / "lib" / "value.txt", "good\n")
    write(root / "lib" / "extra.txt", "extra\n")
    write(root / "lib" / "sub" / "deep.txt", "deep\n")
    declare(
        root / "checks",
        {
            "name": "checks",
            "evals": {
                "run": {
                    "title": "lib's value is good",
                    "profile": {
                        "kind": "runtime",
                        "command": "/bin/sh",
                        "args": ["check.sh", "{lib}/value.txt"],
                    },
                    "payload": {"instruction": "Check {lib}."},
                }
            },
        },
    )
    write(root / "checks" / "check.sh", 'grep -qx good "$1"\n')
    return root


def _settle() -> None:
    """Leave every file safely old, so the next command may keep what it reads."""
    time.sleep(RACY_MARGIN_NS / 1e9 + 0.1)


def _run(repo: Path, state: Path, *args: str) -> tuple[int, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    env.update(ARTIFACTIZE_STATE_HOME=str(state), ARTIFACTIZE_REMOTE="off")
    done = run_cli("--repo", str(repo), "--json", *args, cwd=repo, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.code, json.loads(done.stdout)


def _status(repo: Path, state: Path, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    """``status --json`` of the eval, checked equal to a state without the file index."""
    code, answer = _run(repo, state, "status", EVAL)
    unindexed = tmp_path / "unindexed"
    shutil.rmtree(unindexed, ignore_errors=True)
    shutil.copytree(state, unindexed, ignore=shutil.ignore_patterns(FILE_INDEX_FILE + "*"))
    assert _run(repo, unindexed, "status", EVAL) == (code, answer)
    return code, next(e for e in answer["evals"] if e["evalId"] == EVAL)


def _verify(repo: Path, state: Path, *args: str) -> tuple[int, dict[str, Any]]:
    code, run = _run(repo, state, "verify", *args)
    return code, run["requests"][0] if "requests" in run else run


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return _repo(tmp_path / "repo")


def test_edits_between_commands_get_the_answers_of_a_fresh_state(
    repo: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    lib = repo / "lib"
    assert _verify(repo, state, EVAL)[1]["status"] == "GREEN"
    _settle()
    before = entries_under(repo)
    assert _status(repo, state, tmp_path)[1]["state"] == "PASS"  # kept from here on

    (lib / "value.txt").write_text("bad!\n", encoding="utf-8")  # the same size
    code, stale = _status(repo, state, tmp_path)
    assert (code, stale["state"], stale["changes"]["dependencies"]) == (1, "STALE", ["lib"])
    code, red = _verify(repo, state, EVAL)
    assert (code, red["status"]) == (RED, "RED")
    (lib / "value.txt").write_text("good\n", encoding="utf-8")  # reverted: the GREEN again
    assert _verify(repo, state, EVAL)[1]["source"]["kind"] == "cache"
    os.utime(lib / "value.txt")  # touched, unchanged
    assert _status(repo, state, tmp_path)[1]["state"] == "PASS"

    (lib / "extra.txt").rename(lib / "renamed.txt")
    assert _status(repo, state, tmp_path)[1]["state"] == "STALE"
    (lib / "renamed.txt").rename(lib / "extra.txt")
    _settle()
    assert _status(repo, state, tmp_path)[1]["state"] == "PASS"

    # A .gitignore above lib hides one of its files: lib's kept walk is not trusted.
    write(repo / ".gitignore", "lib/extra.txt\n")
    hidden = _status(repo, state, tmp_path)[1]
    assert hidden["state"] == "STALE"
    _settle()
    (lib / "extra.txt").write_text("changed, but hidden\n", encoding="utf-8")
    assert _status(repo, state, tmp_path)[1]["key"] == hidden["key"]
    (repo / ".gitignore").unlink()
    (lib / "extra.txt").write_text("extra\n", encoding="utf-8")
    _settle()
    assert _status(repo, state, tmp_path)[1]["state"] == "PASS"

    # A folder of the kept walk replaced by a link: a fingerprint error, never a reuse.
    moved = tmp_path / "sub-elsewhere"
    (lib / "sub").rename(moved)
    (lib / "sub").symlink_to(moved)
    code, failed = _status(repo, state, tmp_path)
    assert (code, failed["state"]) == (OPERATIONAL, "ERROR")
    assert "`sub` is a symbolic link" in failed["reason"]
    code, refused = _verify(repo, state, EVAL)
    assert (code, list(refused)) == (OPERATIONAL, ["error"])
    (lib / "sub").unlink()
    moved.rename(lib / "sub")

    (state / FILE_INDEX_FILE).unlink()  # deleted: the same answer
    assert _status(repo, state, tmp_path)[1]["state"] == "PASS"
    assert entries_under(repo).keys() == before.keys()


def test_a_copied_state_home_sharded_and_pruned_still_reuses(repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert _verify(repo, state, EVAL)[1]["status"] == "GREEN"
    (repo / "lib" / "value.txt").write_text("bad!\n", encoding="utf-8")
    assert _verify(repo, state, EVAL)[1]["status"] == "RED"
    (repo / "lib" / "value.txt").write_text("good\n", encoding="utf-8")

    copy = tmp_path / "elsewhere" / "state"
    shutil.copytree(state, copy)
    assert _verify(repo, copy, EVAL)[1]["source"]["kind"] == "cache"

    selections = [
        _run(repo, copy, "status", "--shard", part)[1]["selection"] for part in ("1/2", "2/2")
    ]
    assert sorted(selections[0] + selections[1]) == [EVAL]

    code, dry = _run(repo, copy, "prune", "--keep", "1", "--dry-run")
    assert code == 0 and len(dry["runs"]) == 2
    assert _run(repo, copy, "prune", "--keep", "1") == (0, {**dry, "dryRun": False})
    code, kept = _status(repo, copy, tmp_path)
    assert (code, kept["state"]) == (0, "PASS")
    # The verdict's Run is gone, its record is not: status still names the Run.
    assert kept["reason"] == f"Reuses the GREEN verdict of Run {dry['runs'][-1]} (same key)."
    assert _verify(repo, copy, EVAL)[1]["source"]["kind"] == "cache"
