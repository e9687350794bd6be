"""``run cancel`` from another process, on Linux (``make test``: SIGTERM to the owner) and on
Windows CPython under Wine (``make test-windows``: the owner's stop-request event, since no
signal reaches another console's process): the owner stops as on Ctrl-C, so the running
request ends ERROR ``CANCELLED`` (not ``OWNER_DIED``: the owner's own cleanup ran) and the
owner exits 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI_BOUND_SECONDS = 180  # one CLI call under Wine on a busy 2-core machine
SLEEP_SECONDS = 600  # the eval would run this long: the test ends long before
DECLARATION = f"""name = "slow"

[evals.sleep]
title = "Sleeps"
profile = {{ kind = "runtime", command = {json.dumps(sys.executable)}, args = ["-c", "import time; time.sleep({SLEEP_SECONDS})"], timeout_ms = {SLEEP_SECONDS * 2000} }}
payload.instruction = "Sleep."
"""


def cli(repo: Path, state: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "artifactize.entrypoints.cli.app",
        "--repo",
        str(repo),
        "--state-dir",
        str(state),
        "--json",
        *args,
    ]


def environment() -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("ARTIFACTIZE_", "PYTEST_"))}
    return {**kept, "ARTIFACTIZE_REMOTE": "off"}


def run(repo: Path, state: Path, *args: str) -> tuple[int, Any]:
    done = subprocess.run(
        cli(repo, state, *args),
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=environment(),
        cwd=REPO_ROOT,
        timeout=CLI_BOUND_SECONDS,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_run_cancel_stops_the_owner_as_ctrl_c_does_and_the_run_ends_cancelled(
    tmp_path: Path,
) -> None:
    repo, state = tmp_path / "repo", tmp_path / "state"
    repo.mkdir()
    (repo / "index.artf").write_text(DECLARATION, encoding="utf-8")
    verify = subprocess.Popen(
        cli(repo, state, "verify", "slow/sleep"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=environment(),
        cwd=REPO_ROOT,
    )
    try:
        deadline = time.monotonic() + CLI_BOUND_SECONDS
        running: list[dict[str, Any]] = []
        while not running and time.monotonic() < deadline:
            if state.exists():
                _, listed = run(repo, state, "run", "list")
                running = [row for row in listed if row["status"] == "RUNNING"]
            if not running:
                time.sleep(0.5)
        assert running, "verify never started its Run"
        code, cancelled = run(repo, state, "run", "cancel", running[0]["id"])
        assert code == 0, cancelled
        [request] = cancelled["requests"]
        assert (cancelled["status"], request["errorCode"]) == ("ERROR", "CANCELLED"), cancelled
        out, err = verify.communicate(timeout=CLI_BOUND_SECONDS)
        assert verify.returncode == 2, err
        assert "Traceback" not in out + err, err
    finally:
        if verify.poll() is None:
            verify.kill()
            verify.wait()
