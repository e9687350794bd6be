"""``request list`` writes as it reads (docs/cli.md): read through a pipe whole it is one
JSON array; a reader that closes the pipe after a few bytes (``| head``) ends it with
exit 1 and nothing on stderr, no traceback, no process left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.processes import no_process_left_behind

REPO_ROOT = Path(__file__).resolve().parents[2]
EVALS = 80  # their views pass a pipe's 64 KiB buffer


def _cli(repo: Path, state: Path, *args: str) -> list[str]:
    where = ["--repo", str(repo), "--state-dir", str(state)]
    return [sys.executable, "-m", "artifactize.entrypoints.cli.app", *where, *args]


def test_a_reader_that_closes_the_pipe_ends_the_list_quietly(tmp_path: Path) -> None:
    repo, state = tmp_path / "repo", tmp_path / "state"
    (repo / "many").mkdir(parents=True)
    (repo / "index.artf").write_text('name = "root"\n', encoding="utf-8")
    evals = "".join(
        f'[evals.e{n}]\ntitle = "e{n}"\n'
        f'profile = {{ kind = "runtime", command = "true", args = ["{n}"] }}\n'
        f'payload.instruction = "Check {n}."\n\n'
        for n in range(EVALS)
    )
    (repo / "many" / "index.artf").write_text(f'name = "many"\n\n{evals}', encoding="utf-8")
    env = {**os.environ, "ARTIFACTIZE_REMOTE": "off"}
    filled = subprocess.run(
        _cli(repo, state, "verify", "--all"), env=env, cwd=REPO_ROOT, capture_output=True
    )
    assert filled.returncode == 0, filled.stderr
    whole = subprocess.run(
        _cli(repo, state, "--json", "request", "list"), env=env, cwd=REPO_ROOT, capture_output=True
    )
    assert whole.returncode == 0 and len(whole.stdout) > 2 * 65536
    assert len(json.loads(whole.stdout)) == EVALS
    with no_process_left_behind(grace=10):
        listing = subprocess.Popen(
            _cli(repo, state, "--json", "request", "list"),
            env=env,
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert listing.stdout is not None and listing.stderr is not None
        assert listing.stdout.read(10) == whole.stdout[:10]
        listing.stdout.close()
        errors = listing.stderr.read()
        assert listing.wait(timeout=60) == 1
        listing.stderr.close()
    assert errors == b""
