"""``backend = "claude-code"``: the real Claude Code CLI (npm, pinned, ``tests/support/
npm_clients.py``) against the fake provider, end to end through ``verify`` on a copy of the
bundled example whose ``calc/review`` runs on Claude Code (``tests/support/agent_world.py``).

Claude Code talks to the fake at ``ANTHROPIC_BASE_URL`` with a fake ``ANTHROPIC_API_KEY``;
the scripted model answers each review request in turn, and the short title Claude Code
asks for on the side with a plain text. Claude Code sends beta fields the SDK's stable
request types do not know, so the fake does not validate requests here.

Every test ends with no process whose command line names the test's folder and no private
folder of ours left.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_world import (
    DECLARED_TOOLS,
    EVAL,
    VERIFY_SECONDS,
    AgentClient,
    AgentWorld,
    Script,
    request_of,
)
from tests.support.fake_provider import (
    FAKE_ANTHROPIC_KEY,
    FakeProvider,
    ReceivedRequest,
    Reply,
    anthropic_text,
    anthropic_tool_use,
    hang,
)
from tests.support.npm_clients import CLAUDE_CODE_VERSION, claude_code

MODEL = "claude-fake"
TOOL = "mcp__artifactize__{name}_calc"
TITLE_REQUEST = "Generate a concise, sentence-case title"


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_code()


def title(request: ReceivedRequest) -> Reply | None:
    """Claude Code's side request for a session title (its system prompt asks for one)."""
    body = request.body if isinstance(request.body, dict) else {}
    return anthropic_text("A review") if TITLE_REQUEST in json.dumps(body.get("system")) else None


def script(*steps: Reply) -> Script:
    return Script(*steps, side=title)


CLIENT = AgentClient(
    "claude-code",
    "ARTIFACTIZE_CLAUDE_CODE_PATH",
    MODEL,
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    FAKE_ANTHROPIC_KEY,
)
new_world = CLIENT.world
signed_in = CLIENT.signed_in


@pytest.fixture
def world(tmp_path: Path, claude: Path) -> Iterator[AgentWorld]:
    yield from CLIENT.worlds(tmp_path, claude)


def tool_results(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        block["tool_use_id"]: block
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }


def test_claude_code_reviews_with_only_the_declared_tools_and_the_verdict_is_reused(
    world: AgentWorld,
) -> None:
    model = script(
        anthropic_tool_use("tu_bash", "Bash", {"command": "cat /etc/passwd"}),
        anthropic_tool_use("tu_read_file", "Read", {"file_path": "/etc/passwd"}),
        anthropic_tool_use("tu_read", TOOL.format(name="read"), {"path": "src/calc.py"}),
        anthropic_tool_use("tu_shot", TOOL.format(name="shot"), {"path": "diagram.png"}),
        anthropic_text('{"verdict": "GREEN"}'),
    )
    with FakeProvider(responder=model, check_sdk=False) as fake:
        code, run = world.verify(fake, **signed_in(fake))
        request = request_of(run)
        assert (code, request["status"]) == (0, "GREEN"), request
        # Claude Code offered the model our tools and nothing else
        offered = [tool["name"] for tool in model.body(0)["tools"]]
        assert sorted(offered) == sorted(TOOL.format(name=name) for name in DECLARED_TOOLS)
        # the built-ins the model asked for do not exist for it
        results = tool_results(model.body(4)["messages"])
        for tool_use_id, name in (("tu_bash", "Bash"), ("tu_read_file", "Read")):
            assert results[tool_use_id]["is_error"] is True
            assert f"No such tool available: {name}" in json.dumps(results[tool_use_id])
        # our tools answered: text, then an image
        assert "def divide" in json.dumps(results["tu_read"]["content"])
        assert any(block.get("type") == "image" for block in results["tu_shot"]["content"])
        # the Run records the declared calls, the model asked for and served, the usage
        assert [call["name"] for call in request["toolCalls"]] == ["read_calc", "shot_calc"]
        assert request["agent"]["backend"] == "claude-code"
        assert request["agent"]["requestedModel"] == MODEL
        assert request["agent"]["reportedModel"] == MODEL + "-20250929"
        [attempt] = request["usage"]  # one Claude Code run: its own totals
        assert attempt["usage"]["inputTokens"] > 0 and attempt["usage"]["totalTokens"] > 0

        again_code, again = world.verify(fake, **signed_in(fake))
        assert again_code == 0
        assert request_of(again)["source"]["kind"] == "cache"
        assert len(model.requests) == 5, "the second verify reused the verdict"


def test_an_invalid_answer_is_repaired_once_in_the_same_claude_code_session(
    world: AgentWorld,
) -> None:
    model = script(anthropic_text("Looks correct to me."), anthropic_text('{"verdict": "RED"}'))
    with FakeProvider(responder=model, check_sdk=False) as fake:
        code, run = world.verify(fake, **signed_in(fake))
    assert (code, request_of(run)["status"]) == (1, "RED"), request_of(run)["error"]
    resumed = model.body(1)["messages"]
    assert "Looks correct to me." in json.dumps(resumed), "the repair continued the session"
    assert "did not match the required schema" in json.dumps(resumed[-1])


@pytest.mark.parametrize(
    ("extra", "calls", "budget"),
    [(", max_tool_calls = 1", 2, "maxToolCalls"), (", max_tokens = 50", 1, "maxTokens")],
)
def test_a_budget_stops_claude_code_group_and_all(
    tmp_path: Path, claude: Path, extra: str, calls: int, budget: str
) -> None:
    world = new_world(tmp_path, claude, extra)
    read = TOOL.format(name="read")
    model = script(
        *[anthropic_tool_use(f"tu_{n}", read, {"path": "src/calc.py"}) for n in range(calls)]
    )
    with FakeProvider(responder=model, check_sdk=False) as fake:
        code, run = world.verify(fake, **signed_in(fake))
    request = request_of(run)
    assert (code, request["errorCode"]) == (2, "PROVIDER_BUDGET_EXCEEDED"), request
    assert request["error"] == f"PROVIDER_BUDGET_EXCEEDED: review exceeded its {budget} budget."
    world.nothing_left()


def test_a_cancelled_claude_code_review_leaves_nothing_behind(world: AgentWorld) -> None:
    model = script(hang())
    with FakeProvider(responder=model, check_sdk=False) as fake:
        run = world.interrupted_verify(world.env(fake, **signed_in(fake)), model)
    assert request_of(run)["errorCode"] == "CANCELLED"


INIT = json.dumps(
    {"type": "system", "subtype": "init", "session_id": "s1", "tools": [TOOL.format(name="read")]}
)
UNCONFINED = json.dumps({"type": "system", "subtype": "init", "tools": ["Bash", "Read"]})


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
            f"echo '{UNCONFINED}'\nsleep 60",
            "AGENT_UNAVAILABLE",
            r"offered tools artifactize did not serve \(Bash, Read\)",
        ),
        (None, "AGENT_UNAVAILABLE", "names .*, which is not an executable file"),
    ],
    ids=["crash", "not-its-protocol", "not-confined", "not-installed"],
)
def test_a_broken_claude_code_ends_the_review_error_with_a_code(
    world: AgentWorld, body: str | None, code: str, message: str
) -> None:
    program = world.fake_program(body) if body is not None else world.root / "missing"
    with FakeProvider(check_sdk=False) as fake:
        extra = {**signed_in(fake), "ARTIFACTIZE_CLAUDE_CODE_PATH": str(program)}
        status, run = world.verify(fake, **extra)
        checked = world.run(fake, "config", "check", **extra)
    request = request_of(run)
    assert (status, request["status"], request["errorCode"]) == (2, "ERROR", code), request
    assert re.search(message, request["error"]), request["error"]
    assert checked.returncode == 0, checked.stdout


def test_a_signed_out_claude_code_ends_the_review_error_saying_to_sign_in(
    world: AgentWorld,
) -> None:
    with FakeProvider(check_sdk=False) as fake:
        status, run = world.verify(fake, ANTHROPIC_BASE_URL=fake.base_url)
    request = request_of(run)
    assert (status, request["errorCode"]) == (2, "AGENT_UNAVAILABLE"), request
    assert "run `claude login`" in request["error"]


@pytest.mark.parametrize("signed", [True, False])
def test_doctor_says_where_claude_code_is_its_version_and_whether_it_is_signed_in(
    world: AgentWorld, signed: bool
) -> None:
    report, agent = CLIENT.doctor(world, signed)
    assert agent["program"] == str(world.program)
    assert agent["programSource"] == "ARTIFACTIZE_CLAUDE_CODE_PATH"
    assert agent["version"] == CLAUDE_CODE_VERSION
    assert agent["signedIn"] is signed and agent["ready"] is signed
    if not signed:
        assert any("claude login" in problem for problem in report["problems"])


def test_run_cancel_stops_a_review_another_process_runs_with_its_comment(
    world: AgentWorld,
) -> None:
    model = script(hang())
    with FakeProvider(responder=model, check_sdk=False) as fake:
        env = world.env(fake, **signed_in(fake))
        verify = subprocess.Popen(
            world.command("verify", "--recursive", EVAL, "--comment", "checking the divide fix"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert model.arrived.wait(VERIFY_SECONDS), "Claude Code never asked the model"
            listed = json.loads(world.run(fake, "run", "list", **signed_in(fake)).stdout)
            [running] = [row for row in listed if row["status"] == "RUNNING"]
            shown = json.loads(world.run(fake, "run", "show", running["id"]).stdout)
            assert shown["comment"] == "checking the divide fix"
            cancelled = world.run(fake, "run", "cancel", running["id"])
            assert cancelled.returncode == 0, cancelled.stdout
            run = json.loads(cancelled.stdout)
            assert run["status"] != "RUNNING"
            assert request_of(run)["errorCode"] == "CANCELLED"
            verify.communicate(timeout=VERIFY_SECONDS)
            again = world.run(fake, "run", "cancel", running["id"])
            assert again.returncode == 2
            assert "is not running" in json.loads(again.stdout)["error"]
        finally:
            if verify.poll() is None:
                verify.kill()
                verify.wait()
    unknown = world.run(fake, "run", "cancel", "run-nothere")
    assert (unknown.returncode, json.loads(unknown.stdout)) == (
        2,
        {"error": "Unknown Run: run-nothere"},
    )


def test_a_follow_up_resumes_the_claude_code_session_with_the_same_declared_tools(
    world: AgentWorld,
) -> None:
    read = TOOL.format(name="read")
    model = script(
        anthropic_text('{"verdict": "GREEN"}'),
        anthropic_tool_use("tu_follow", read, {"path": "src/calc.py"}),
        anthropic_text("divide(a, b) returns a / b."),
    )
    with FakeProvider(responder=model, check_sdk=False) as fake:
        code, run = world.verify(fake, **signed_in(fake))
        assert code == 0, request_of(run)
        request_id = request_of(run)["id"]
        sent = world.run(
            fake, "session", "send", request_id, "What does divide return?", **signed_in(fake)
        )
    assert sent.returncode == 0, sent.stdout + sent.stderr
    answer = json.loads(sent.stdout)
    assert answer["answer"] == "divide(a, b) returns a / b.", answer
    # the resumed session was offered the eval's tools, as the review was, and nothing else
    offered = sorted(tool["name"] for tool in model.body(1)["tools"])
    assert offered == sorted(TOOL.format(name=name) for name in DECLARED_TOOLS)
    assert "Looks" not in json.dumps(model.body(1)["messages"])
    assert '{\\"verdict\\": \\"GREEN\\"}' in json.dumps(model.body(1)["messages"]), (
        "the follow-up continued the review's session"
    )
    result = tool_results(model.body(2)["messages"])["tu_follow"]
    assert result.get("is_error") is not True and "def divide" in json.dumps(result["content"])
    assert [call["name"] for call in answer["toolCalls"]] == ["read_calc"], answer


@pytest.mark.parametrize("signed", [True, False])
def test_models_lists_what_claude_code_offers_with_its_version_and_sign_in(
    world: AgentWorld, signed: bool
) -> None:
    with FakeProvider(check_sdk=False) as fake:
        done = world.run(fake, "models", "claude-code", **(signed_in(fake) if signed else {}))
    assert done.returncode == 0, done.stdout + done.stderr
    listed = json.loads(done.stdout)
    assert listed["backend"] == "claude-code" and listed["note"] is None
    assert {"sonnet", "haiku"} <= set(listed["models"]), listed["models"]
    details = {model["id"]: model for model in listed["modelDetails"]}
    assert details["haiku"]["resolvesTo"].startswith("claude-haiku-"), details
    assert (listed["version"], listed["signedIn"]) == (CLAUDE_CODE_VERSION, signed)
    assert listed["program"] == str(world.program)
    assert fake.posts() == [], "listing called no model"


def test_models_of_a_claude_code_that_is_not_installed_says_how_to_install_it(
    world: AgentWorld,
) -> None:
    with FakeProvider(check_sdk=False) as fake:
        missing = {"ARTIFACTIZE_CLAUDE_CODE_PATH": "", "PATH": str(world.root)}
        done = world.run(fake, "models", "claude-code", **missing)
    assert done.returncode == 2, done.stdout
    assert json.loads(done.stdout) == {
        "error": "Claude Code is not installed (claude is not on PATH): install it (npm install "
        "-g @anthropic-ai/claude-code) or name its program in ARTIFACTIZE_CLAUDE_CODE_PATH."
    }
