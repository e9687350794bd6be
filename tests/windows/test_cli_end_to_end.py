"""The real CLI, end to end, on a small repository: the same test and the same expected
output on Linux (``make test``: POSIX adapters) and on Windows CPython under Wine (``make
test-windows``: Windows adapters). A team with one Windows laptop runs exactly this.

It covers ``config check``; ``verify`` with runtime evals (a Python script, GREEN and RED, named
by the interpreter's absolute path with the platform's separators and with ``/``; a
platform-native script, ``.cmd`` on Windows and ``.sh`` elsewhere) and an Agent eval answered
by the fake provider over real HTTP on 127.0.0.1 (its conversation saved through the
platform's private files and read back by ``session show``); verdict reuse on a second run;
``status`` and ``run list``; ``mcp`` over stdio; bad input exiting 2 with ``{"error": ...}``;
and the default state home (``%LOCALAPPDATA%\\artifactize`` on Windows,
``$XDG_STATE_HOME/artifactize`` elsewhere).
No command may print a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_provider import FakeProvider, openai_text

pytestmark = pytest.mark.process  # the Windows lane

WINDOWS = sys.platform == "win32"
REPO_ROOT = Path(__file__).resolve().parents[2]
# One CLI call may take this long under Wine on a busy 2-core machine.
CLI_BOUND_SECONDS = 180
CHECK_SCRIPT = """import sys
if sys.argv[1] == "pass":
    print("checked: all good")
    sys.exit(0)
print("checked: 2 problems", file=sys.stderr)
sys.exit(1)
"""
NATIVE_CMD = "@echo off\r\necho native %1\r\nexit /b 0\r\n"
NATIVE_SH = '#!/bin/sh\necho "native $1"\nexit 0\n'
NATIVE = "./tools/native.cmd" if WINDOWS else "./tools/native.sh"
EVAL_IDS = ("forward", "native", "review", "script-fail", "script-pass")


def toml(value: Any) -> str:
    return json.dumps(value)


def declaration() -> str:
    python = sys.executable
    runtime = [
        ("script-pass", python, ["tools/check.py", "pass"]),
        ("script-fail", python, ["tools/check.py", "fail"]),
        ("forward", python.replace("\\", "/"), ["tools/check.py", "pass"]),
        ("native", NATIVE, ["hello world", "a&b"]),
    ]
    blocks = ['name = "winrepo"', 'fingerprint = { files = ["tools"] }']
    for eval_id, command, args in runtime:
        blocks.append(
            f"[evals.{eval_id}]\ntitle = {toml('Runtime ' + eval_id)}\n"
            f'profile = {{ kind = "runtime", command = {toml(command)}, args = {toml(args)} }}\n'
            f"payload.instruction = {toml('Run ' + eval_id + '.')}"
        )
    blocks.append(
        '[evals.review]\ntitle = "The tools read well"\n'
        'profile = { kind = "agent", backend = "openai", model = "m1" }\n'
        'payload.instruction = "Review the tools."'
    )
    return "\n\n".join(blocks) + "\n"


class World:
    def __init__(self, root: Path, fake: FakeProvider) -> None:
        self.fake = fake
        self.repo = root / "repo"
        tools = self.repo / "tools"
        tools.mkdir(parents=True)
        (tools / "check.py").write_text(CHECK_SCRIPT, encoding="utf-8")
        native = tools / NATIVE.rsplit("/", 1)[1]
        native.write_bytes((NATIVE_CMD if WINDOWS else NATIVE_SH).encode())
        native.chmod(0o755)
        (self.repo / "index.artf").write_text(declaration(), encoding="utf-8")
        # The default state home: no ARTIFACTIZE_STATE_HOME, no --state-dir.
        self.home = root / "home"
        self.home.mkdir()
        self.state = self.home / "artifactize"

    def environment(self) -> dict[str, str]:
        environment = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ARTIFACTIZE_", "XDG_", "PYTEST_"))
            and k.upper() not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LOCALAPPDATA")
        }
        environment["ARTIFACTIZE_REMOTE"] = "off"
        environment["LOCALAPPDATA" if WINDOWS else "XDG_STATE_HOME"] = str(self.home)
        environment.update(self.fake.env())
        return environment

    def cli(
        self, *args: str, json_output: bool = True, stdin: str | None = None
    ) -> tuple[int, Any, str]:
        command = [
            sys.executable,
            "-m",
            "artifactize.entrypoints.cli.app",
            "--repo",
            str(self.repo),
        ]
        done = subprocess.run(
            [*command, *(["--json"] if json_output else []), *args],
            input=stdin,
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=self.environment(),
            cwd=REPO_ROOT,
            timeout=CLI_BOUND_SECONDS,
        )
        for stream in (done.stdout, done.stderr):
            assert "Traceback" not in stream, stream
        out: Any = done.stdout
        if json_output:
            assert done.stdout.strip(), done.stderr
            out = json.loads(done.stdout)
        return done.returncode, out, done.stderr


@pytest.fixture
def world(tmp_path: Path) -> Any:
    with FakeProvider(check_sdk=False) as fake:
        yield World(tmp_path, fake)


def statuses(run: dict[str, Any]) -> dict[str, str]:
    return {r["evalId"].split("/", 1)[1]: r["status"] for r in run["requests"]}


def test_config_check_verify_reuse_status_and_runs(world: World) -> None:
    code, text, _ = world.cli("config", "check", json_output=False)
    assert code == 0
    *warnings, summary = text.splitlines()
    assert summary.startswith(
        "Configuration OK: 1 Artifact (1 folder, 0 file), 5 evals (runtime 4, agent 1, human 0)"
    )
    # the runtime evals run sys.executable, the interpreter artifactize runs on: warned
    assert len(warnings) == 3, warnings
    assert all("runs on artifactize's own interpreter" in line for line in warnings)

    world.fake.enqueue(openai_text('{"verdict": "GREEN"}'))
    code, run, _ = world.cli("verify", "--all")
    assert code == 1 and run["status"] == "RED"
    assert statuses(run) == {
        "forward": "GREEN",
        "native": "GREEN",
        "review": "GREEN",
        "script-fail": "RED",
        "script-pass": "GREEN",
    }
    assert len(world.fake.posts()) == 1
    requests = {r["evalId"].split("/", 1)[1]: r for r in run["requests"]}
    # Absolute programs run as given (on Windows C:\…\python.exe and C:/…/python.exe).
    assert requests["script-pass"]["argv"][0] == sys.executable
    assert requests["forward"]["argv"][0] == sys.executable.replace("\\", "/")
    assert requests["native"]["argv"][-2:] == ["hello world", "a&b"]
    # The default state home holds the Runs, and the conversation in its private folder.
    assert (world.state / "state.sqlite").is_file()
    assert [p.suffix for p in (world.state / "agent-sessions").iterdir()] == [".jsonl"]

    # The Agent review's conversation was saved privately and reads back.
    session_id = requests["review"]["sessionId"]
    assert session_id
    code, shown, _ = world.cli("session", "show", session_id)
    assert code == 0 and shown
    # A follow-up takes the conversation's lock and appends to it.
    world.fake.enqueue(openai_text("They read well."))
    code, answer, _ = world.cli("session", "send", session_id, "Why?")
    assert (code, answer["answer"]) == (0, "They read well.")
    suffixes = sorted(p.suffix for p in (world.state / "agent-sessions").iterdir())
    assert suffixes == [".jsonl", ".lock"]
    code, again, _ = world.cli("session", "show", session_id)
    assert code == 0 and len(json.dumps(again)) > len(json.dumps(shown))

    # Second run: every verdict reused, nothing executed, the same exit code.
    code, text, _ = world.cli("verify", "--all", json_output=False)
    assert code == 1
    assert "Summary: executed 0 (runtime 0, agent 0, human 0), reused 5 " in text
    assert "winrepo/script-fail [" in text and "Execution: RED" in text
    assert len(world.fake.posts()) == 2  # the review and the follow-up only

    code, status, _ = world.cli("status")
    assert code == 1
    assert {e["evalId"].split("/", 1)[1]: e["action"] for e in status["evals"]} == dict.fromkeys(
        EVAL_IDS, "reuse"
    )

    code, runs, _ = world.cli("run", "list")
    assert code == 0 and [r["status"] for r in runs] == ["RED", "RED"]


def test_red_output_tail_and_bad_input(world: World) -> None:
    code, text, _ = world.cli("verify", "winrepo/script-fail", json_output=False)
    assert code == 1
    assert "winrepo/script-fail [" in text and "RED — exit 1" in text
    assert "checked: 2 problems" in text

    code, answer, _ = world.cli("verify", "winrepo/nope")
    assert code == 2 and set(answer) == {"error"} and "winrepo/nope" in answer["error"]
    code, _, stderr = world.cli("verify", "winrepo/nope", json_output=False)
    assert code == 2 and "winrepo/nope" in stderr


def test_mcp_over_stdio_answers_then_ends_with_its_input(world: World) -> None:
    """The MCP wire is the process's stdin and stdout (pipes, read in a worker thread on
    Windows, where pipes cannot be polled)."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    wire = "".join(json.dumps(m) + "\n" for m in messages)
    code, out, stderr = world.cli("mcp", "--artifact", "winrepo", json_output=False, stdin=wire)
    assert code == 0, stderr
    answers = {a["id"]: a for a in map(json.loads, out.splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "artifactize"
    assert answers[2]["result"] == {"tools": []}
    assert "serving 0 tools of winrepo" in stderr


GREET_BAT = "@echo off\r\necho bat %1\r\n"
GREET_CMD = "@echo off\r\necho cmd %1\r\n"
GREET_TOOL = """
[views.agent_tools.greet]
description = "Greet {artifactName}."
protocol = "plain"
command = "greet"
args = ["{who}"]
input_schema = { type = "object", required = ["who"], properties = { who = { type = "string" } }, additionalProperties = false }
"""


@pytest.mark.skipif(not WINDOWS, reason="PATHEXT lookup is Windows' own")
def test_tools_check_finds_a_bare_name_through_pathext_on_the_real_path(world: World) -> None:
    """Issue 23: a bare command name whose ``NAME.bat`` and ``NAME.cmd`` lie in a folder on
    the ``PATH`` the artifactize process really has (set here, in the Windows environment
    of the child, not in a Unix shell Wine never reads) is found by ``tools check``'s
    preflight, ``.bat`` before ``.cmd`` (PATHEXT's order), and an argument a batch file
    cannot take safely is refused before anything runs."""
    folder = world.repo.parent / "on-path"
    folder.mkdir()
    (folder / "greet.bat").write_bytes(GREET_BAT.encode())
    (folder / "greet.cmd").write_bytes(GREET_CMD.encode())
    with (world.repo / "index.artf").open("a", encoding="utf-8") as declaration_file:
        declaration_file.write(GREET_TOOL)
    original = world.environment

    def with_folder_on_path() -> dict[str, str]:
        environment = original()
        environment["PATH"] = f"{folder};{environment.get('PATH', '')}"
        return environment

    world.environment = with_folder_on_path  # type: ignore[method-assign]
    check = ("tools", "check", "--artifact", "winrepo", "--audience", "agent", "--tool", "greet")
    code, report, _ = world.cli(*check)
    assert code == 0, report
    code, report, _ = world.cli(*check, "--execute", "--args", '{"who": "you"}')
    assert code == 0, report
    assert report["result"]["content"][0]["text"].strip() == "bat you"
    code, report, _ = world.cli(*check, "--execute", "--args", '{"who": "100%"}')
    assert report["result"]["isError"] is True, report
    assert "bat 100" not in json.dumps(report["result"])  # the batch file never ran
