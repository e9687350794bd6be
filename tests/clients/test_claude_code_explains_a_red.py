"""The issue's "done when": Claude Code (the real CLI, pinned) with the project set up by
``artifactize agent-setup claude`` loads the repository as its plugin (``--plugin-dir``:
the manifest, ``.mcp.json`` and the skill), runs ``status``, starts a verify, waits for it
and explains a RED from its results.

The world is a copy of the bundled example. Its reviews run on the fake provider: the
``calc/review`` Agent (Anthropic) answers GREEN, so ``docs/accuracy`` (OpenAI) runs and
answers RED with a problem. Claude Code's own model is the scripted one below; each turn
reads the tool result it was sent, so the final answer is built from what ``run_show``
answered: if a tool result did not reach the model, the answer is wrong and the test fails.

The test writes what Claude Code did, from its own stream-json events, to
``docs/agents/claude-code-explains-a-red.txt`` and into the README's agent section (as
the browser tests write the screenshots of docs/web.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_tool_sessions import harness_processes, wait_until
from tests.support.fake_provider import (
    ANTHROPIC_MESSAGES,
    FAKE_ANTHROPIC_KEY,
    OPENAI_RESPONSES,
    FakeProvider,
    ReceivedRequest,
    Reply,
    anthropic_text,
    anthropic_tool_use,
    error,
    openai_text,
)
from tests.support.npm_clients import claude_code

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "handbook"
TRANSCRIPT = REPO / "docs" / "agents" / "claude-code-explains-a-red.txt"
README = REPO / "README.md"
README_BEGIN = "<!-- transcript: docs/agents/claude-code-explains-a-red.txt -->\n"
README_END = "<!-- /transcript -->\n"
TITLE_REQUEST = "Generate a concise, sentence-case title"
AGENT_MODEL = "claude-fake"
SELECTOR = "docs/accuracy"
PROMPT = "Verify docs/accuracy and explain any RED."
PROBLEM = "guide.md does not say that divide returns a float: divide(6, 3) is 2.0, not 2"
COMMENT = "asked by Claude Code"
WAIT_SECONDS = 20
CLAUDE_SECONDS = 300
MCP_CONNECT_MS = 60_000


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_code()


def tool_result(request: ReceivedRequest) -> Any:
    """The JSON of the last tool result Claude Code sent its model."""
    message = request.body["messages"][-1]
    blocks = [b for b in message["content"] if b.get("type") == "tool_result"]
    assert blocks, f"no tool result reached the model: {message}"
    content = blocks[-1]["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    assert blocks[-1].get("is_error") is not True, text
    return json.loads(text)


class Agent:
    """Claude Code's scripted model: status, verify_start, run_wait until settled,
    run_show, then an answer naming each RED eval and its problems from run_show's result."""

    def __init__(self) -> None:
        self.asked: list[str] = []  # the control tool asked for at each turn
        self.tools: list[str] = []

    def ask(self, suffix: str, arguments: dict[str, Any]) -> Reply:
        [name] = [tool for tool in self.tools if tool.endswith(f"__{suffix}")]
        self.asked.append(suffix)
        return anthropic_tool_use(f"tu_{len(self.asked)}", name, arguments)

    def __call__(self, request: ReceivedRequest) -> Reply:
        self.tools = [tool["name"] for tool in request.body.get("tools", [])]
        if not self.asked:
            return self.ask("status", {"selector": SELECTOR})
        last = tool_result(request)
        previous = self.asked[-1]
        if previous == "status":
            assert any(e["evalId"] == SELECTOR for e in last["evals"]), last
            start = {"selector": SELECTOR, "recursive": True, "comment": COMMENT}
            return self.ask("verify_start", start)
        if previous == "verify_start" or (previous == "run_wait" and not last["settled"]):
            return self.ask("run_wait", {"runId": last["runId"], "timeoutSeconds": WAIT_SECONDS})
        if previous == "run_wait":
            return self.ask("run_show", {"runId": last["runId"]})
        self.asked.append("answer")
        return anthropic_text(explain(last))


def explain(run: dict[str, Any]) -> str:
    """The final answer, from run_show's result only."""
    red = [request for request in run["requests"] if request["status"] == "RED"]
    if not red:
        return f"{run['runId']} is {run['status']}: nothing is RED."
    lines = [f"{run['runId']} is {run['status']}."]
    for request in red:
        problems = "; ".join(request["result"].get("problems") or ["(no problem listed)"])
        lines.append(f"{request['evalId']} is RED: {problems}.")
    return " ".join(lines)


def reviewers(request: ReceivedRequest) -> Reply | None:
    """The example's own reviews: calc/review (Anthropic) GREEN, docs/accuracy (OpenAI) RED."""
    if request.path == OPENAI_RESPONSES:
        return openai_text(json.dumps({"verdict": "RED", "problems": [PROBLEM]}))
    if request.path == ANTHROPIC_MESSAGES and request.body.get("model") != AGENT_MODEL:
        return anthropic_text('{"verdict": "GREEN"}')
    return None


def render(events: list[dict[str, Any]]) -> str:
    """Claude Code's stream-json events as a person reads them in its terminal."""
    lines = ["$ artifactize agent-setup claude", f'$ claude --plugin-dir . -p "{PROMPT}"']
    for event in events:
        message = event.get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                name = block["name"].rsplit("__", 1)[-1]
                lines.append(f"⏺ artifactize - {name} (MCP) {json.dumps(block['input'])}")
            elif block.get("type") == "tool_result":
                body = block["content"]
                text = body if isinstance(body, str) else body[0]["text"]
                said = summary(json.loads(text))
                lines.append(f"  ⎿  {said[0]}")
                lines.extend(f"     {line}" for line in said[1:])
            elif block.get("type") == "text" and event.get("type") == "assistant":
                lines.append(f"⏺ {block['text']}")
    return "\n".join(lines) + "\n"


def summary(data: dict[str, Any]) -> list[str]:
    """What a tool answered, in a few lines (the fields an agent reads)."""
    if "evals" in data:
        return [f"{e['evalId']}: {e['state']} -> {e['action']}" for e in data["evals"]]
    if "settled" in data:
        head = f"{data['runId']} {data['status']} (settled: {str(data['settled']).lower()})"
        return [head] + [
            f"{r['evalId']}: {r['status']}"
            + (f" {json.dumps(r['result'])}" if r["status"] == "RED" else "")
            for r in data["requests"]
        ]
    return [json.dumps({key: data[key] for key in ("runId",) if key in data})]


def publish(transcript: str) -> None:
    """The captured transcript into docs/ and the README's agent section."""
    TRANSCRIPT.parent.mkdir(parents=True, exist_ok=True)
    TRANSCRIPT.write_text(transcript, encoding="utf-8")
    text = README.read_text(encoding="utf-8")
    begin, end = text.index(README_BEGIN), text.index(README_END)
    block = f"{README_BEGIN}```text\n{transcript}```\n"
    README.write_text(text[:begin] + block + text[end:], encoding="utf-8")


def test_claude_code_with_the_plugin_runs_status_verifies_and_explains_a_red(
    tmp_path: Path, claude: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ARTIFACTIZE_", "ANTHROPIC_", "OPENAI_", "CODEX_"))
    }
    # `artifactize` on PATH, as .mcp.json names it
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    environment.update(HOME=str(home), ARTIFACTIZE_STATE_HOME=str(state))
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    setup = subprocess.run(
        ["artifactize", "agent-setup", "claude"],
        cwd=repo,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert setup.returncode == 0, setup.stderr
    agent = Agent()

    def model(request: ReceivedRequest) -> Reply:
        if TITLE_REQUEST in json.dumps(request.body.get("system")):
            return anthropic_text("Verify the docs")
        answer = reviewers(request)
        if answer is not None:
            return answer
        if request.body.get("model") != AGENT_MODEL:
            return error(500, f"unexpected request: {request.path}")
        return agent(request)

    with FakeProvider(responder=model, check_sdk=False) as fake:
        env = {
            **environment,
            **fake.env(),  # the example's own reviews (artifactize's endpoint variables)
            "ANTHROPIC_BASE_URL": fake.base_url,  # Claude Code's model
            "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY,
            # the tools listed before the first turn, however slowly the server starts
            "MCP_CONNECTION_NONBLOCKING": "false",
            "MCP_CONNECT_TIMEOUT_MS": str(MCP_CONNECT_MS),
        }
        done = subprocess.run(
            [
                str(claude),
                "--plugin-dir",
                str(repo),
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--model",
                AGENT_MODEL,
                "--tools",
                "",
                "--allowedTools",
                "mcp__artifactize",  # every tool of the plugin's server, pre-approved
            ],
            input=PROMPT,
            capture_output=True,
            text=True,
            env=env,
            cwd=repo,
            timeout=CLAUDE_SECONDS,
        )
    assert done.returncode == 0, done.stderr + done.stdout[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    [result] = [event for event in events if event.get("type") == "result"]
    assert result["subtype"] == "success", result

    asked = [
        block["name"].rsplit("__", 1)[-1]
        for event in events
        if event.get("type") == "assistant"
        for block in event["message"]["content"]
        if block.get("type") == "tool_use"
    ]
    assert asked[:2] == ["status", "verify_start"] and asked[-1] == "run_show", asked
    assert set(asked[2:-1]) == {"run_wait"}, asked
    # the answer names the failing eval and the reason the reviewer gave, through run_show
    runs = json.loads(
        subprocess.run(
            ["artifactize", "--json", "run", "list"],
            cwd=repo,
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    )
    [run] = runs
    assert result["result"] == (f"{run['id']} is RED. {SELECTOR} is RED: {PROBLEM}."), result[
        "result"
    ]
    transcript = render(events)
    assert PROBLEM in transcript.splitlines()[-1], "the answer is the transcript's last line"
    publish(transcript)
    assert wait_until(lambda: not harness_processes(tmp_path), 30), "nothing left running"
