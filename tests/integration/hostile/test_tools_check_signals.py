"""``tools check --execute`` and signals: SIGINT and SIGTERM cancel the call like ``verify``.

The tool leads a group of four processes; after the signal none survives, no per-call
directory is left in ``$TMPDIR``, and the command exits 2 with a JSON report that says it
was cancelled.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from artifactize.domain.use_cases.tools_check import CANCELLED
from tests.integration.test_tools_check_cli import (
    Env,
    fx_c,
)
from tests.support.hostile import GROUP_CHILDREN, reap_strays, spawning_tool_script, survivors
from tests.support.hostile import wait_for_pids as wait_for_group

pytestmark = pytest.mark.process  # real signals

EXIT_CANCELLED = 2
FINISH_SECONDS = 30


def start_check(env: Env, tmpdir: Path) -> tuple[subprocess.Popen[str], Path]:
    root = fx_c(env.tmp / "W")
    pid_file = env.tmp / "pids.json"
    (root / "tool.py").write_text(spawning_tool_script(pid_file), encoding="utf-8")
    child_env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [
        sys.executable,
        "-m",
        "artifactize.entrypoints.cli.app",
        "--repo",
        str(root),
        "tools",
        "check",
    ]
    argv += ["--execute", "--artifact", "a", "--audience", "agent", "--tool", "inspect"]
    process = subprocess.Popen(
        argv, env=child_env, cwd=env.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return process, pid_file


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_cancels_the_call_cleans_up_and_reports(env: Env, signum: int) -> None:
    tmpdir = env.tmp / "tmpdir"
    tmpdir.mkdir()
    process, pid_file = start_check(env, tmpdir)
    group: list[tuple[int, float]] = []
    try:
        group = wait_for_group(pid_file)
        assert len(group) == GROUP_CHILDREN + 1
        process.send_signal(signum)
        out, err = process.communicate(timeout=FINISH_SECONDS)
        assert survivors(group) == []
    finally:
        reap_strays(group)
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == EXIT_CANCELLED, (out, err)
    assert "Traceback" not in err
    report = json.loads(out)
    assert report["cancelled"] is True and report["ok"] is False
    assert report["checks"][-1] == {
        "stage": "execute",
        "tool": "inspect_a",
        "ok": False,
        "message": CANCELLED,
    }
    assert list(tmpdir.iterdir()) == []  # the per-call directories are gone too
