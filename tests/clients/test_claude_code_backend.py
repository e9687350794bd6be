"""``backend = "claude-code"``: the real Claude Code CLI (npm, pinned, ``tests/support/
npm_clients.py``) against the fake provider, end to end through ``verify`` on a copy of the
bundled example (``examples/handbook``, whose ``calc/review`` is switched to Claude Code).

Claude Code talks to the fake at ``ANTHROPIC_BASE_URL`` with a fake ``ANTHROPIC_API_KEY``;
the scripted model (``Script``) answers each review request in turn and gives the short
title Claude Code asks for on the side (a request without tools) a plain text. Claude Code
sends beta fields the SDK's stable request types do not know, so the fake does not validate
requests here.

Every test ends with no process whose command line names the test's folder (Claude Code's
private folder is made there, through ``TMPDIR``) and that folder empty.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_tool_sessions import harness_processes, wait_until
from tests.support.fake_provider import (
    FAKE_ANTHROPIC_KEY,
    FakeProvider,
    ReceivedRequest,
    Reply,
    anthropic_text,
    anthropic_tool_use,
    hang,
)
from tests.support.images import PNG1
from tests.support.npm_clients import CLAUDE_CODE_VERSION, claude_code

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "handbook"
EVAL = "calc/review"
API_PROFILE = (
    'profile = { kind = "agent", backend = "anthropic", model = "claude-sonnet-4-5", '
    'reasoning = "high" }'
)
MODEL = "claude-fake"
TOOL = "mcp__artifactize__{name}_calc"
VERIFY_SECONDS = 240
EXIT_SECONDS = 30.0
BUILTINS_ASKED = ("Bash", "Read")
TITLE_REQUEST = "Generate a concise, sentence-case title"


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_code()


class Script:
    """The scripted model: each review request takes the next step; Claude Code's side
    request for a session title (its system prompt asks for one) gets a title."""

    def __init__(self, *steps: Reply) -> None:
        self.steps = list(steps)
        self.requests: list[ReceivedRequest] = []
        self.lock = threading.Lock()
        self.arrived = threading.Event()

    def __call__(self, request: ReceivedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        if TITLE_REQUEST in json.dumps(body.get("system")):
            return anthropic_text("A review")
        with self.lock:
            self.requests.append(request)
            self.arrived.set()
            if not self.steps:
                return anthropic_text("script exhausted")
            return self.steps.pop(0)

    def tool_names(self, index: int) -> list[str]:
        return [tool["name"] for tool in self.requests[index].body["tools"]]

    def last_messages(self, index: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.requests[index].body["messages"]
        return messages


class World:
    """A copy of the example whose ``calc/review`` runs on Claude Code, with a PNG and a
    ``view_image`` tool beside its other tools; its own HOME, TMPDIR and state home."""

    def __init__(self, root: Path, claude: Path, profile_extra: str = "") -> None:
        self.root = root
        self.repo = root / "repo"
        shutil.copytree(EXAMPLE, self.repo)
        declaration = self.repo / "code" / "index.artf"
        text = declaration.read_text(encoding="utf-8")
        assert API_PROFILE in text, "the example's calc/review profile changed"
        profile = (
            f'profile = {{ kind = "agent", backend = "claude-code", model = "{MODEL}"'
            f"{profile_extra} }}"
        )
        text = text.replace(API_PROFILE, profile)
        text = text.replace(
            "[views.agent_tools]\n", '[views.agent_tools]\nshot = { builtin = "view_image" }\n', 1
        )
        declaration.write_text(text, encoding="utf-8")
        (self.repo / "code" / "diagram.png").write_bytes(PNG1)
        self.home = root / "home"
        self.tmp = root / "tmp"
        self.state = root / "state"
        for folder in (self.home, self.tmp):
            folder.mkdir()
        self.claude = claude

    def env(self, fake: FakeProvider, **extra: str) -> dict[str, str]:
        environment = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("ARTIFACTIZE_", "ANTHROPIC_", "OPENAI_"))
        }
        environment.update(
            HOME=str(self.home),
            TMPDIR=str(self.tmp),
            ARTIFACTIZE_STATE_HOME=str(self.state),
            ARTIFACTIZE_CLAUDE_CODE_PATH=str(self.claude),
            ANTHROPIC_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY=FAKE_ANTHROPIC_KEY,
            PYTHONDONTWRITEBYTECODE="1",
        )
        environment.update(extra)
        return {name: value for name, value in environment.items() if value}

    def command(self, *args: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "artifactize.entrypoints.cli.app",
            "--repo",
            str(self.repo),
            "--json",
            *args,
        ]

    def verify(self, fake: FakeProvider, **extra: str) -> tuple[int, dict[str, Any]]:
        done = subprocess.run(
            self.command("verify", "--recursive", EVAL),
            capture_output=True,
            text=True,
            env=self.env(fake, **extra),
            timeout=VERIFY_SECONDS,
        )
        assert done.stdout, done.stderr
        return done.returncode, json.loads(done.stdout)

    def nothing_left(self) -> None:
        assert wait_until(lambda: not harness_processes(self.root), EXIT_SECONDS), [
            process.cmdline() for process in harness_processes(self.root)
        ]
        ours = [path for path in self.tmp.iterdir() if path.name.startswith("artifactize-")]
        assert ours == [], "the private folders of every run were removed"


def request_of(run: dict[str, Any]) -> dict[str, Any]:
    found: list[dict[str, Any]] = [r for r in run["requests"] if r["evalId"] == EVAL]
    assert len(found) == 1, run["requests"]
    return found[0]


@pytest.fixture
def world(tmp_path: Path, claude: Path) -> Iterator[World]:
    made = World(tmp_path, claude)
    yield made
    made.nothing_left()


def tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        block
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def test_claude_code_reviews_with_only_the_declared_tools_and_the_verdict_is_reused(
    world: World,
) -> None:
    script = Script(
        anthropic_tool_use("tu_bash", BUILTINS_ASKED[0], {"command": "cat /etc/passwd"}),
        anthropic_tool_use("tu_read_file", BUILTINS_ASKED[1], {"file_path": "/etc/passwd"}),
        anthropic_tool_use("tu_read", TOOL.format(name="read"), {"path": "src/calc.py"}),
        anthropic_tool_use("tu_shot", TOOL.format(name="shot"), {"path": "diagram.png"}),
        anthropic_text('{"verdict": "GREEN"}'),
    )
    with FakeProvider(responder=script, check_sdk=False) as fake:
        code, run = world.verify(fake)
        assert code == 0, run
        request = request_of(run)
        assert request["status"] == "GREEN", request
        # Claude Code offered the model our tools and nothing else, by their served names
        offered = script.tool_names(0)
        assert sorted(offered) == sorted(
            TOOL.format(name=name) for name in ("read", "search", "coverage", "evaluate", "shot")
        )
        # the built-ins the model asked for do not exist for it
        results = tool_results(script.last_messages(4))
        refused = {
            r["tool_use_id"]: r for r in results if r["tool_use_id"] in ("tu_bash", "tu_read_file")
        }
        for tool_use_id, name in (("tu_bash", "Bash"), ("tu_read_file", "Read")):
            assert refused[tool_use_id]["is_error"] is True
            assert f"No such tool available: {name}" in json.dumps(refused[tool_use_id]["content"])
        # our tools answered: text, then an image
        read = next(r for r in results if r["tool_use_id"] == "tu_read")
        assert "def divide" in json.dumps(read["content"])
        shot = next(r for r in results if r["tool_use_id"] == "tu_shot")
        assert any(block.get("type") == "image" for block in shot["content"]), shot
        # the Run records only the declared calls, the model and Claude Code's usage
        assert [call["name"] for call in request["toolCalls"]] == ["read_calc", "shot_calc"]
        assert request["agent"]["backend"] == "claude-code"
        assert request["agent"]["requestedModel"] == MODEL
        assert request["agent"]["reportedModel"] == MODEL + "-20250929"
        [attempt] = request["usage"]  # one Claude Code run: its own totals
        assert attempt["usage"]["inputTokens"] > 0 and attempt["usage"]["totalTokens"] > 0

        again_code, again = world.verify(fake)
        assert again_code == 0
        assert request_of(again)["source"]["kind"] == "cache"
        assert len(script.requests) == 5, "the second verify reused the verdict"


def test_an_invalid_answer_is_repaired_once_in_the_same_claude_code_session(world: World) -> None:
    script = Script(anthropic_text("Looks correct to me."), anthropic_text('{"verdict": "RED"}'))
    with FakeProvider(responder=script, check_sdk=False) as fake:
        code, run = world.verify(fake)
    assert code == 1, request_of(run)
    assert request_of(run)["status"] == "RED"
    resumed = json.dumps(script.last_messages(1))
    assert "Looks correct to me." in resumed, "the repair continued the first conversation"
    assert "did not match the required schema" in json.dumps(script.last_messages(1)[-1])


@pytest.mark.parametrize(
    ("extra", "steps", "message"),
    [
        (
            ", max_tool_calls = 1",
            2,
            "PROVIDER_BUDGET_EXCEEDED: review exceeded its maxToolCalls budget.",
        ),
        (", max_tokens = 50", 1, "PROVIDER_BUDGET_EXCEEDED: review exceeded its maxTokens budget."),
    ],
)
def test_a_budget_stops_claude_code_group_and_all(
    tmp_path: Path, claude: Path, extra: str, steps: int, message: str
) -> None:
    world = World(tmp_path, claude, extra)
    script = Script(
        *[
            anthropic_tool_use(f"tu_{n}", TOOL.format(name="read"), {"path": "src/calc.py"})
            for n in range(steps + 1)
        ]
    )
    with FakeProvider(responder=script, check_sdk=False) as fake:
        code, run = world.verify(fake)
    request = request_of(run)
    assert (code, request["status"], request["errorCode"]) == (
        2,
        "ERROR",
        "PROVIDER_BUDGET_EXCEEDED",
    ), request
    assert request["error"] == message
    world.nothing_left()


def test_a_cancelled_claude_code_review_leaves_nothing_behind(world: World) -> None:
    script = Script(hang())
    with FakeProvider(responder=script, check_sdk=False) as fake:
        verify = subprocess.Popen(
            world.command("verify", "--recursive", EVAL),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=world.env(fake),
        )
        try:
            assert script.arrived.wait(VERIFY_SECONDS), "Claude Code never asked the model"
            assert harness_processes(world.root), "Claude Code is running"
            verify.send_signal(signal.SIGINT)
            out, _ = verify.communicate(timeout=VERIFY_SECONDS)
        finally:
            if verify.poll() is None:
                verify.kill()
                verify.wait()
    run = json.loads(out)
    assert request_of(run)["errorCode"] == "CANCELLED"


def fake_agent(world: World, body: str) -> Path:
    """A stand-in ``claude`` that behaves as the test needs (a crash, noise, a leak)."""
    path = world.root / "bin" / "claude"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


INIT = json.dumps({"type": "system", "subtype": "init", "session_id": "s1", "tools": []})


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (
            f"echo '{INIT}'\necho boom >&2\nexit 3",
            "AGENT_ERROR",
            r"ended \(exit code 3\) without a result: boom",
        ),
        ("echo 'Welcome to Claude!'\nsleep 60", "AGENT_ERROR", "wrote what is not stream-json"),
        (
            "echo '"
            + json.dumps({"type": "system", "subtype": "init", "tools": ["Bash", "Read"]})
            + "'\nsleep 60",
            "AGENT_UNAVAILABLE",
            r"offered tools artifactize did not serve \(Bash, Read\)",
        ),
        (
            None,
            "AGENT_UNAVAILABLE",
            "ARTIFACTIZE_CLAUDE_CODE_PATH names .*, which is not an executable file",
        ),
    ],
    ids=["crash", "not-its-protocol", "not-confined", "not-installed"],
)
def test_a_broken_claude_code_ends_the_review_error_with_a_code(
    world: World, body: str | None, code: str, message: str
) -> None:
    program = fake_agent(world, body) if body is not None else world.root / "missing"
    with FakeProvider(check_sdk=False) as fake:
        status, run = world.verify(fake, ARTIFACTIZE_CLAUDE_CODE_PATH=str(program))
    request = request_of(run)
    assert (status, request["status"], request["errorCode"]) == (2, "ERROR", code), request
    assert re.search(message, request["error"]), request["error"]
    checked = subprocess.run(
        world.command("config", "check"), capture_output=True, text=True, env=world.env(fake)
    )
    assert checked.returncode == 0, checked.stdout


def test_a_signed_out_claude_code_ends_the_review_error_saying_to_sign_in(world: World) -> None:
    with FakeProvider(check_sdk=False) as fake:
        status, run = world.verify(fake, ANTHROPIC_API_KEY="")
    request = request_of(run)
    assert (status, request["errorCode"]) == (2, "AGENT_UNAVAILABLE"), request
    assert "run `claude login`" in request["error"]


@pytest.mark.parametrize("signed_in", [True, False])
def test_doctor_says_where_claude_code_is_its_version_and_whether_it_is_signed_in(
    world: World, signed_in: bool
) -> None:
    with FakeProvider(check_sdk=False) as fake:
        key = FAKE_ANTHROPIC_KEY if signed_in else ""
        done = subprocess.run(
            world.command("doctor"),
            capture_output=True,
            text=True,
            env=world.env(fake, ANTHROPIC_API_KEY=key),
            timeout=VERIFY_SECONDS,
        )
    report = json.loads(done.stdout)
    [agent] = [b for b in report["backends"] if b["backend"] == "claude-code"]
    assert agent["program"] == str(world.claude)
    assert agent["programSource"] == "ARTIFACTIZE_CLAUDE_CODE_PATH"
    assert agent["version"] == CLAUDE_CODE_VERSION
    assert agent["signedIn"] is signed_in and agent["ready"] is signed_in
    if not signed_in:
        assert any("claude login" in problem for problem in report["problems"])
