"""Diagnostics for tool authors in ``tools check --execute`` (issue 12, Build 3), through the
real CLI and real processes, and the rule that nothing a reviewer sees or a review stores
ever carries them (stderr never reaches a reviewer, seed 000).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from artifactize.domain.tools.commands.diagnostics import (
    STDERR_TAIL_BYTES,
    STDOUT_HEAD_BYTES,
    current,
)
from tests.support.cli import run_cli
from tests.support.fake_provider import FakeProvider, openai_text, openai_tool_call
from tests.support.processes import no_process_left_behind as no_process_left_behind_in

REPO_ROOT = Path(__file__).resolve().parents[2]
EXECUTION_FAILED = "Agent tool execution failed."
INVALID_OUTPUT = "Agent tool returned invalid output."
SECRET = "SECRET-STDERR-LINE"
AGENT_TOOL = ("--artifact", "app", "--audience", "agent", "--tool")

DECLARATION = """name = "app"

[views.agent_tools.typo]
description = "A mistyped script path."
protocol = "json"
command = "python3"
args = ["tools/covrage.py"]

[views.agent_tools.chatty]
description = "Prints a debug line before its JSON."
protocol = "json"
command = "python3"
args = ["tools/chatty.py"]

[views.agent_tools.failing]
description = "Writes to stderr and exits 3."
protocol = "json"
command = "python3"
args = ["tools/failing.py"]

[views.agent_tools.loud]
description = "Writes more stderr than an author is shown."
protocol = "json"
command = "python3"
args = ["tools/loud.py"]

[views.agent_tools.long]
description = "Prints more stdout than an author is shown, not JSON."
protocol = "json"
command = "python3"
args = ["tools/long.py"]

[views.agent_tools.good]
description = "A valid result."
protocol = "json"
command = "python3"
args = ["tools/good.py"]

[evals.review]
title = "Review"
profile = { kind = "agent", backend = "openai", model = "m1" }
payload.instruction = "Review {app}."
"""

RESULT = '{"content": [{"type": "text", "text": "ok"}]}'
SCRIPTS = {
    "chatty.py": f"print('debug: starting')\nprint({RESULT!r})\n",
    "failing.py": f"import sys\nprint({SECRET!r}, file=sys.stderr)\nsys.exit(3)\n",
    "loud.py": (
        "import sys\n"
        f"sys.stderr.write('a' * {STDERR_TAIL_BYTES} + 'END')\n"  # 3 bytes past the tail
        "sys.exit(1)\n"
    ),
    "long.py": f"import sys\nsys.stdout.write('x' * {STDOUT_HEAD_BYTES + 1})\n",
    "good.py": f"print({RESULT!r})\n",
}


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / "tools").mkdir(parents=True)
    (path / "index.artf").write_text(DECLARATION, encoding="utf-8")
    for name, text in SCRIPTS.items():
        (path / "tools" / name).write_text(text, encoding="utf-8")
    return path


def environment(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    return {
        **env,
        "ARTIFACTIZE_STATE_HOME": str(tmp_path / "state"),
        "ARTIFACTIZE_REMOTE": "off",
        **(extra or {}),
    }


def execute(repo: Path, tool: str) -> tuple[int, dict[str, Any]]:
    done = run_cli(
        "--repo",
        str(repo),
        "tools",
        "check",
        "--execute",
        *AGENT_TOOL,
        tool,
        cwd=REPO_ROOT,
        env=environment(repo.parent),
    )
    return done.returncode, json.loads(done.stdout)


def test_a_missing_script_shows_its_exit_code_and_stderr(repo: Path) -> None:
    code, report = execute(repo, "typo")
    assert code == 1
    assert report["result"]["content"][0]["text"] == EXECUTION_FAILED  # the reviewer's view
    diagnostics = report["diagnostics"]
    assert (diagnostics["exitCode"], diagnostics["signal"]) == (2, None)
    assert "can't open file" in diagnostics["stderrTail"]
    assert "tools/covrage.py" in diagnostics["stderrTail"]
    assert isinstance(diagnostics["durationMs"], int) and diagnostics["durationMs"] >= 0


def test_a_debug_line_before_the_json_shows_stdout_and_where_parsing_failed(repo: Path) -> None:
    code, report = execute(repo, "chatty")
    assert code == 1 and report["result"]["content"][0]["text"] == INVALID_OUTPUT
    invalid = report["diagnostics"]["invalidOutput"]
    assert invalid["stdoutHead"].startswith("debug: starting\n{")
    assert invalid["parseError"] == {
        "message": "Expecting value",
        "line": 1,
        "column": 1,
        "offset": 0,
    }
    assert "stderr" in invalid["hint"]
    assert report["diagnostics"]["exitCode"] == 0


def test_a_nonzero_exit_shows_the_code_and_the_stderr(repo: Path) -> None:
    code, report = execute(repo, "failing")
    assert code == 1 and report["result"]["content"][0]["text"] == EXECUTION_FAILED
    assert report["diagnostics"]["exitCode"] == 3
    assert report["diagnostics"]["stderrTail"] == f"{SECRET}\n"
    assert SECRET not in json.dumps(report["result"])  # never in the reviewer's result


def test_stderr_is_cut_to_its_last_4_kib_and_stdout_to_its_first_1_kib(repo: Path) -> None:
    _, loud = execute(repo, "loud")
    tail = loud["diagnostics"]["stderrTail"]
    assert len(tail) == STDERR_TAIL_BYTES and tail.endswith("END")
    assert loud["diagnostics"]["stderrBytes"] == STDERR_TAIL_BYTES + 3
    assert loud["diagnostics"]["stderrTailTruncated"] is True
    _, long = execute(repo, "long")
    invalid = long["diagnostics"]["invalidOutput"]
    assert invalid["stdoutHead"] == "x" * STDOUT_HEAD_BYTES
    assert invalid["stdoutBytes"] == STDOUT_HEAD_BYTES + 1


def test_a_good_call_has_diagnostics_too_and_a_static_check_has_none(repo: Path) -> None:
    code, report = execute(repo, "good")
    assert code == 0 and report["diagnostics"]["exitCode"] == 0
    assert (
        report["diagnostics"]["stderrTail"] == "" and "invalidOutput" not in report["diagnostics"]
    )
    static = run_cli(
        "--repo", str(repo), "tools", "check", cwd=REPO_ROOT, env=environment(repo.parent)
    )
    assert "diagnostics" not in json.loads(static.stdout)


def test_no_recording_outside_tools_check() -> None:
    assert current() is None


def test_a_review_never_carries_diagnostics_or_stderr(repo: Path, tmp_path: Path) -> None:
    """An Agent review calls the failing tool: the model gets the generic error, and the
    saved Run holds neither stderr nor a diagnostics object."""
    with FakeProvider() as fake:
        fake.enqueue(
            openai_tool_call("call_1", "failing_app", {}),
            openai_text('{"verdict": "GREEN"}'),
        )
        done = run_cli(
            "--repo",
            str(repo),
            "--json",
            "verify",
            "app/review",
            cwd=REPO_ROOT,
            env=environment(tmp_path, fake.env()),
        )
        posts = fake.posts()
    assert done.returncode == 0, done.stdout + done.stderr
    sent = json.dumps(posts[1].body)
    assert EXECUTION_FAILED in sent and SECRET not in sent
    assert SECRET not in done.stdout and "diagnostics" not in done.stdout
    assert "stderrTail" not in done.stdout
