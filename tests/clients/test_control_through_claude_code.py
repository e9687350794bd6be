"""The control surface driven by Claude Code itself (the real CLI, pinned): its model, the
fake provider's script, calls ``verify_start`` and then ``run_wait`` on ``artifactize mcp
--control``, configured as a stdio MCP server in ``--mcp-config`` the way
``artifactize agent-setup claude`` configures it; the Run it started is in the state, with
its comment, settled.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_mcp_control import World
from tests.integration.test_tool_sessions import harness_processes, wait_until
from tests.support.fake_provider import (
    FAKE_ANTHROPIC_KEY,
    FakeProvider,
    ReceivedRequest,
    Reply,
    anthropic_text,
    anthropic_tool_use,
)
from tests.support.npm_clients import claude_code

TITLE_REQUEST = "Generate a concise, sentence-case title"
COMMENT = "asked by Claude Code"


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_code()


def last_tool_result(request: ReceivedRequest) -> Any:
    message = request.body["messages"][-1]
    blocks = [b for b in message["content"] if b.get("type") == "tool_result"]
    content = blocks[-1]["content"]  # Claude Code may merge the results into one message
    text = content if isinstance(content, str) else content[0]["text"]
    try:
        return json.loads(text)
    except ValueError:
        raise AssertionError(f"not a JSON tool result: {text}") from None


def test_claude_code_starts_a_verify_and_waits_for_it_through_the_control_surface(
    tmp_path: Path, claude: Path
) -> None:
    world = World(tmp_path)
    seen: list[ReceivedRequest] = []

    def model(request: ReceivedRequest) -> Reply:
        if TITLE_REQUEST in json.dumps(request.body.get("system")):
            return anthropic_text("Verify")
        seen.append(request)
        if len(seen) == 1:
            start = {"selector": "proj/quick", "comment": COMMENT}
            return anthropic_tool_use("tu_start", "mcp__artifactize__verify_start", start)
        if len(seen) == 2:
            run_id = last_tool_result(request)["runId"]
            wait: dict[str, Any] = {"runId": run_id, "timeoutSeconds": 30}
            return anthropic_tool_use("tu_wait", "mcp__artifactize__run_wait", wait)
        waited = last_tool_result(request)
        return anthropic_text(f"{waited['runId']} settled: {waited['requests'][0]['status']}")

    server = {
        "command": sys.executable,
        "args": [*world.cli("mcp", "--control")[1:]],
        "env": world.env(),
    }
    config = json.dumps({"mcpServers": {"artifactize": server}})
    home = tmp_path / "home"
    home.mkdir()
    with FakeProvider(responder=model, check_sdk=False) as fake:
        env = {
            **world.env(),
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY,
            "MCP_CONNECTION_NONBLOCKING": "false",  # tools listed before the first turn
            "MCP_CONNECT_TIMEOUT_MS": "60000",  # (it waits 5 s by default, then goes on)
        }
        done = subprocess.run(
            [
                str(claude),
                "-p",
                "--output-format",
                "json",
                "--model",
                "claude-fake",
                "--tools",
                "",
                "--strict-mcp-config",
                "--mcp-config",
                config,
                "--allowedTools",
                "mcp__artifactize__verify_start,mcp__artifactize__run_wait",
            ],
            input="Verify proj/quick and tell me how it went.",
            capture_output=True,
            text=True,
            env=env,
            cwd=world.repo,
            timeout=240,
        )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    runs = world.run("run", "list")
    [run] = runs
    assert answer["result"] == f"{run['id']} settled: GREEN"
    shown = world.run("run", "show", run["id"])
    assert shown["comment"] == COMMENT and shown["status"] != "RUNNING"
    assert wait_until(lambda: not harness_processes(world.root), 30), "nothing left running"
