"""``artifactize mcp`` driven by clients that are not ours (``tests/support/npm_clients.py``,
pinned, installed into ``build/npm`` on first use), configured exactly as ``docs/mcp.md``
tells a user:

- the MCP Inspector CLI, with the docs' Cursor ``mcp.json`` (``--config``) and the docs'
  Inspector lines, over stdio and over streamable HTTP with the bearer header: it lists,
  calls (a result, a refused call) and disconnects; every call is then in ``mcp log``;
- Claude Code, with the docs' ``claude mcp add`` lines (stdio and HTTP): ``claude mcp
  list`` starts or reaches each server and reports it connected (no login needed).

Each test ends with no process whose command line names its repository, whoever started
it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_tool_sessions import harness_processes, wait_until
from tests.support.mcp_world import McpWorld
from tests.support.npm_clients import (
    INSPECTOR_PACKAGE,
    INSPECTOR_VERSION,
    claude_code,
    inspector_cli,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
SERVER_NAME = "artifactize-calc"  # the name the docs' examples use
DOCS_EVAL = "calc/review"
EVAL = "doc/review"
DOCS_REPO = "/abs/path/to/repo"
DOCS_URL = "http://127.0.0.1:40213/mcp"
CLIENT_SECONDS = 120.0
EXIT_SECONDS = 30.0
EXIT_TOOL_IS_ERROR = 5  # the Inspector CLI's exit code for an isError result


@pytest.fixture(scope="module")
def inspector() -> Path:
    return inspector_cli()


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_code()


def docs_config() -> dict[str, Any]:
    """The Cursor ``.cursor/mcp.json`` of docs/mcp.md (stdio)."""
    text = DOCS.read_text(encoding="utf-8")
    cursor = text[text.index("**Cursor**") : text.index("**VS Code**")]
    match = re.search(r"```json\n(.*?)```", cursor, re.DOTALL)
    assert match is not None, "docs/mcp.md has no Cursor configuration"
    config: dict[str, Any] = json.loads(match.group(1))
    assert list(config["mcpServers"]) == [SERVER_NAME]
    return config


def docs_inspector_lines() -> list[list[str]]:
    """The Inspector commands of docs/mcp.md, without their ``npx -y PACKAGE@VERSION``
    (the tests run the same pinned package from build/npm)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("**MCP Inspector**") :]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "docs/mcp.md has no MCP Inspector commands"
    lines = [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]
    prefix = ["npx", "-y", f"{INSPECTOR_PACKAGE}@{INSPECTOR_VERSION}", "--cli"]
    assert all(line[:4] == prefix for line in lines), "the docs pin the tested version"
    return [line[4:] for line in lines]


def as_in_docs(line: list[str], world: McpWorld, **values: str) -> list[str]:
    """A docs command on this test's repository, eval, URL and token."""
    replaced = {DOCS_REPO: str(world.repo), DOCS_EVAL: EVAL, **values}
    out = []
    for arg in line:
        for old, new in replaced.items():
            arg = arg.replace(old, new)
        out.append(arg.replace("_calc", "_doc"))
    return out


def client_env(world: McpWorld) -> dict[str, str]:
    """The user's environment: ``artifactize`` on the PATH, a home of the test's own (the
    Inspector's files, and the state home of the servers it starts: MCP clients start a
    server with a few variables only, HOME and PATH among them)."""
    home = world.root / "home"
    home.mkdir(exist_ok=True)
    environment = dict(os.environ)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    environment["HOME"] = str(home)
    environment["MCP_INSPECTOR_SECRET_STORE"] = "memory"
    for name in ("ARTIFACTIZE_STATE_HOME", "XDG_STATE_HOME"):
        environment.pop(name, None)
    return environment


def run_inspector(inspector: Path, world: McpWorld, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(inspector), "--cli", *args],
        capture_output=True,
        text=True,
        env=client_env(world),
        timeout=CLIENT_SECONDS,
    )


def inspect(
    inspector: Path, world: McpWorld, config: dict[str, Any], *request: str
) -> subprocess.CompletedProcess[str]:
    """The Inspector on an ``mcp.json`` (``--config``), as a Cursor user has it."""
    path = world.root / "mcp.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return run_inspector(inspector, world, "--config", str(path), "--server", SERVER_NAME, *request)


def answer(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.stdout, done.stderr
    return json.loads(done.stdout)


def default_state(world: McpWorld) -> Path:
    """The state home of a server the Inspector started: the default one, under HOME."""
    return world.root / "home" / ".local" / "state" / "artifactize"


def audited_calls(world: McpWorld, state: Path) -> list[tuple[str, bool]]:
    """Every audited call of every MCP session in ``state``: (tool, isError)."""
    calls = []
    listed = mcp_log(world, state, "--limit", "100")
    for session in reversed(json.loads(listed.stdout)):
        shown = json.loads(mcp_log(world, state, session["id"]).stdout)
        assert shown["session"]["endedAt"], "every server run ended"
        calls += [(call["tool"], call["isError"]) for call in shown["calls"]]
    return calls


def mcp_log(world: McpWorld, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "artifactize.entrypoints.cli.app", "--state-dir", str(state)]
    done = subprocess.run(
        [*command, "--json", "mcp", "log", *args],
        capture_output=True,
        text=True,
        env=world.env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def nothing_left(world: McpWorld) -> None:
    """No process of any parent names the repository: the servers the Inspector started
    are gone with it."""
    assert wait_until(lambda: not harness_processes(world.repo), EXIT_SECONDS), [
        process.cmdline() for process in harness_processes(world.repo)
    ]


def test_the_inspector_lists_and_calls_over_stdio_as_the_docs_configure_it(
    inspector: Path, tmp_path: Path
) -> None:
    world = McpWorld(tmp_path)
    config = docs_config()
    server = config["mcpServers"][SERVER_NAME]
    assert server["command"] == "artifactize"
    server["args"] = [
        str(world.repo) if arg == DOCS_REPO else EVAL if arg == DOCS_EVAL else arg
        for arg in server["args"]
    ]
    assert server["args"] == ["--repo", str(world.repo), "mcp", "--eval", EVAL]

    listed = inspect(inspector, world, config, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    names = [tool["name"] for tool in answer(listed)["tools"]]
    assert set(names) >= {"read_doc", "grep_doc", "probe_doc", "act_doc"}
    listing, calling, _ = docs_inspector_lines()
    assert as_in_docs(listing, world)[-2:] == ["--method", "tools/list"]
    read = run_inspector(
        inspector,
        world,
        *as_in_docs(calling, world, **{"src/calc.py": "notes.txt", "limit=5": "limit=1"}),
    )
    assert read.returncode == 0, read.stderr
    result = answer(read)
    assert [line["text"] for line in result["structuredContent"]["lines"]] == ["hello\n"]
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    refused = run_inspector(
        inspector, world, *as_in_docs(calling, world, **{"path=src/calc.py": "path=../x"})
    )
    assert refused.returncode == EXIT_TOOL_IS_ERROR, refused.stderr
    assert answer(refused)["isError"] is True
    assert "safe relative logical path" in answer(refused)["content"][0]["text"]

    nothing_left(world)
    assert audited_calls(world, default_state(world)) == [
        ("read_doc", False),
        ("read_doc", True),
    ]


def test_the_inspector_over_http_needs_the_bearer_header_of_the_docs(
    inspector: Path, tmp_path: Path
) -> None:
    world = McpWorld(tmp_path)
    server = subprocess.Popen(
        world.cli_args("--json", "mcp", "--eval", EVAL, "--http", "127.0.0.1:0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=world.env(),
        text=True,
    )
    assert server.stdout is not None
    try:
        announced = json.loads(server.stdout.readline())
        *_, over_http = docs_inspector_lines()
        with_token = as_in_docs(
            over_http, world, **{DOCS_URL: announced["url"], "TOKEN": announced["token"]}
        )
        assert with_token[-2:] == ["--method", "tools/list"]
        call = ["--method", "tools/call", "--tool-name", "read_doc", "--tool-arg", "path=notes.txt"]
        called = run_inspector(inspector, world, *with_token[:-2], *call)  # the docs' line
        assert called.returncode == 0, called.stderr
        assert answer(called)["structuredContent"]["path"] == "notes.txt"

        header = with_token.index("--header")
        without_token = with_token[:header] + with_token[header + 2 :]
        refused = run_inspector(inspector, world, *without_token)
        assert refused.returncode != 0
        assert announced["token"] not in refused.stdout + refused.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=EXIT_SECONDS) == 0
        server.stdout.close()
    nothing_left(world)
    assert audited_calls(world, world.state) == [("read_doc", False)]


def test_without_npm_the_inspector_tests_skip_and_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm there
    with pytest.raises(pytest.skip.Exception, match="npm is not on the PATH"):
        inspector_cli(tmp_path / "npm")
    assert not (tmp_path / "npm").exists()


# --- Claude Code ------------------------------------------------------------------------------


def docs_claude_lines() -> list[list[str]]:
    """The two ``claude mcp add`` commands of docs/mcp.md (stdio, then HTTP)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("**Claude Code**") : text.index("**Cursor**")]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    lines = [shlex.split(block.replace("\\\n", " ")) for block in blocks]
    assert [line[:3] for line in lines] == [["claude", "mcp", "add"]] * 2
    return [line[1:] for line in lines]


def run_claude(claude: Path, world: McpWorld, *args: str) -> subprocess.CompletedProcess[str]:
    project = world.root / "project"  # Claude Code keeps a local config per project folder
    project.mkdir(exist_ok=True)
    environment = client_env(world)
    environment.update(
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    return subprocess.run(
        [str(claude), *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=project,
        timeout=CLIENT_SECONDS,
    )


def listed_status(claude: Path, world: McpWorld) -> str:
    """The line ``claude mcp list`` prints for the server (after its health check)."""
    listed = run_claude(claude, world, "mcp", "list")
    assert listed.returncode == 0, listed.stderr
    lines = [line for line in listed.stdout.splitlines() if line.startswith(SERVER_NAME)]
    assert len(lines) == 1, listed.stdout
    return lines[0]


def test_claude_code_connects_over_stdio_and_http_as_the_docs_add_it(
    claude: Path, tmp_path: Path
) -> None:
    world = McpWorld(tmp_path)
    over_stdio, over_http = docs_claude_lines()
    added = run_claude(claude, world, *as_in_docs(over_stdio, world))
    assert added.returncode == 0, added.stderr
    status = listed_status(claude, world)
    assert status.endswith("Connected") and f"--repo {world.repo} mcp --eval {EVAL}" in status
    nothing_left(world)
    sessions = json.loads(mcp_log(world, default_state(world)).stdout)
    assert len(sessions) == 1 and sessions[0]["endedAt"]  # a real server run, ended

    assert run_claude(claude, world, "mcp", "remove", SERVER_NAME).returncode == 0
    server = subprocess.Popen(
        world.cli_args("--json", "mcp", "--eval", EVAL, "--http", "127.0.0.1:0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=world.env(),
        text=True,
    )
    assert server.stdout is not None
    try:
        announced = json.loads(server.stdout.readline())
        values = {DOCS_URL: announced["url"], "TOKEN": announced["token"]}
        added = run_claude(claude, world, *as_in_docs(over_http, world, **values))
        assert added.returncode == 0, added.stderr
        assert listed_status(claude, world).endswith("Connected")
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=EXIT_SECONDS) == 0
        server.stdout.close()
    nothing_left(world)
