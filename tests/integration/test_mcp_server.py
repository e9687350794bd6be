"""``artifactize mcp`` end to end: the official ``mcp`` SDK client drives the real server
subprocess, over stdio and over streamable HTTP (workspace: ``tests/support/mcp_world.py``).

Every test ends (autouse ``no_leftovers``) with no child process of ours, no process of the
test's tools or harness, and no tool-session directory.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.domain.tools.arguments import ARGUMENTS_MAX_BYTES, NOT_AN_OBJECT
from artifactize.domain.tools.cancellation import CANCELLED_MESSAGE
from artifactize.domain.tools.pinning import PinningError, pin_execution_paths
from artifactize.domain.tools.registry import UNKNOWN_TOOL, AgentToolRegistry
from artifactize.domain.tools.results import AUDIT_SUMMARY_MAX_CHARS
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.domain.use_cases.serving import BUDGET_SPENT, MAX_TOOL_CALLS_MIN
from artifactize.entrypoints.mcp.content import call_tool_result
from artifactize.entrypoints.mcp.stdio import (
    INVALID_REQUEST,
    OVERSIZED_MESSAGE,
    STDIO_MESSAGE_MAX_BYTES,
)
from tests.integration.test_tool_sessions import children, harness_processes, wait_until
from tests.support.cli import CliResult, run_cli
from tests.support.images import PNG1, b64
from tests.support.mcp_world import INSTRUCTION, McpWorld
from tests.support.workspaces import real_tool_ports

pytestmark = [pytest.mark.anyio, pytest.mark.process]  # MCP over stdio: a real server process

EVAL = "doc/review"
BUILTINS = ("read", "list", "glob", "grep", "view_image", "section", "help", "graph")
EXIT_SECONDS = 30.0  # a deadline for polls on a loaded machine, not a pause


@pytest.fixture
def world(tmp_path: Path) -> McpWorld:
    return McpWorld(tmp_path)


def session_directories(state: Path) -> list[Path]:
    parent = state / "tool-sessions"
    return sorted(parent.iterdir()) if parent.exists() else []


@pytest.fixture(autouse=True)
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    before = {p.pid for p in children()}
    yield

    def leftovers() -> list[str]:
        ours = [p for p in children() if p.pid not in before]
        return (
            [f"child {p.pid} {p.cmdline()[:4]}" for p in ours if _alive(p)]
            + [f"tool {p.pid}" for p in harness_processes(tmp_path)]
            + [str(d) for d in session_directories(tmp_path / "state")]
        )

    if wait_until(lambda: not leftovers(), EXIT_SECONDS):
        return
    found = leftovers()
    for process in harness_processes(tmp_path) + [p for p in children() if p.pid not in before]:
        with contextlib.suppress(psutil.Error):
            process.kill()
    pytest.fail(f"left behind: {found}")


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def stdio(world: McpWorld, *args: str, mode: str = "auto") -> Client:
    command = world.cli_args("mcp", *args)
    params = StdioServerParameters(command=command[0], args=command[1:], env=world.env())
    return Client(params, mode=cast(Any, mode))


def server_process(world: McpWorld) -> psutil.Process:
    found: list[psutil.Process] = []

    def look() -> bool:
        found[:] = [
            p
            for p in children()
            if _alive(p) and "mcp" in p.cmdline() and str(world.state) in p.cmdline()
        ]
        return len(found) == 1

    assert wait_until(look, EXIT_SECONDS)
    return found[0]


def cli(world: McpWorld, *args: str) -> CliResult:
    return run_cli(*world.cli_args(*args)[3:], env=world.env())


def audit(world: McpWorld, session_id: str | None = None) -> Any:
    result = cli(world, "--json", "mcp", "log", *([session_id] if session_id else []))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def only_session(world: McpWorld) -> dict[str, Any]:
    sessions = audit(world)
    assert len(sessions) == 1, sessions
    details: dict[str, Any] = audit(world, sessions[0]["id"])
    return details


def block(result: Any, index: int) -> Any:
    """One content block, untyped (the SDK's union of every content kind)."""
    return result.content[index]


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def registry(world: McpWorld) -> AgentToolRegistry:
    workspace = ConfigService(PosixFilesystem()).load(str(world.repo))
    return AgentToolRegistry.for_eval(workspace, EVAL, real_tool_ports(dict(os.environ)))


# --- serving over stdio -----------------------------------------------------------------------


async def test_lists_the_registry_and_calls_every_builtin(world: McpWorld) -> None:
    expected = registry(world).list()
    async with stdio(world, "--eval", EVAL) as client:
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == [d.name for d in expected]
        assert [t.description for t in listed] == [d.description for d in expected]
        assert [t.input_schema for t in listed] == [dict(d.input_schema) for d in expected]
        assert "Show a page of doc." in [t.description for t in listed]
        assert not any(t.name.startswith(("signoff", "check")) for t in listed)

        calls = {
            "read": {"path": "notes.txt"},
            "list": {},
            "glob": {"pattern": "*.txt"},
            "grep": {"pattern": "world"},
            "view_image": {"path": "pic.png"},
            "section": {"heading": "Commands"},
            "help": {},
            "graph": {},
        }
        results = {}
        for builtin in BUILTINS:
            result = await client.call_tool(f"{builtin}_doc", calls[builtin])
            assert not result.is_error, (builtin, text_of(result))
            results[builtin] = result
    read = results["read"].structured_content
    assert [line["text"] for line in read["lines"]] == ["hello\n", "world\n"]
    assert json.loads(text_of(results["read"])) == read
    assert {e["name"] for e in results["list"].structured_content["entries"]} >= {"notes.txt"}
    assert "notes.txt" in text_of(results["glob"])
    assert "world" in text_of(results["grep"])
    image = results["view_image"].content[0]
    assert image.type == "image" and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == PNG1
    assert "Every command." in text_of(results["section"])
    assert "cat" in text_of(results["help"]).lower()
    assert "doc" in text_of(results["graph"])


async def test_same_results_as_the_registry(world: McpWorld) -> None:
    direct = registry(world)
    async with stdio(world, "--eval", EVAL) as client:
        cases: list[tuple[str, dict[str, Any]]] = [
            ("read_doc", {"path": "notes.txt", "limit": 1}),
            ("probe_doc", {"kind": "mixed"}),
            ("show_doc", {"page": "notes.txt"}),
            ("read_doc", {"path": "../etc/passwd"}),
        ]
        for name, args in cases:
            served = await client.call_tool(name, args)
            expected = call_tool_result(await direct.call(name, args), client.protocol_version)
            assert served.content == expected.content, name
            assert served.structured_content == expected.structured_content, name
            assert served.is_error == expected.is_error, name


async def test_json_tool_text_json_image_and_a_plain_tool(world: McpWorld) -> None:
    async with stdio(world, "--eval", EVAL) as client:
        as_json = await client.call_tool("probe_doc", {"kind": "json"})
        as_text = await client.call_tool("probe_doc", {"kind": "text"})
        as_list = await client.call_tool("probe_doc", {"kind": "list"})
        mixed = await client.call_tool("probe_doc", {"kind": "mixed"})
        plain = await client.call_tool("show_doc", {"page": "notes.txt"})
    assert not as_json.is_error
    assert as_json.structured_content == {"answer": 42, "kind": "json"}
    assert [b.type for b in as_json.content] == ["text"]
    assert block(as_json, 0).text == '{"answer":42,"kind":"json"}'
    assert as_text.structured_content is None and text_of(as_text) == "plain words"
    assert as_list.structured_content == [1, 2, 3]  # 2026-07-28 allows any JSON value
    assert [b.type for b in mixed.content] == ["text", "text", "image"]
    assert mixed.structured_content is None  # several blocks: no structured content
    assert block(mixed, 1).text == '{"n":1}'
    assert block(mixed, 2).mime_type == "image/png" and block(mixed, 2).data == b64(PNG1)
    assert not plain.is_error and text_of(plain) == "hello\nworld\n"


async def test_a_handshake_client_gets_structured_content_only_for_objects(
    world: McpWorld,
) -> None:
    async with stdio(world, "--eval", EVAL, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        as_json = await client.call_tool("probe_doc", {"kind": "json"})
        as_list = await client.call_tool("probe_doc", {"kind": "list"})
    assert as_json.structured_content == {"answer": 42, "kind": "json"}
    assert as_list.structured_content is None and text_of(as_list) == "[1,2,3]"


async def test_refused_arguments_unknown_tools_and_authored_errors(world: McpWorld) -> None:
    async with stdio(world, "--eval", EVAL) as client:
        wrong_type = await client.call_tool("read_doc", {"path": 3})
        missing = await client.call_tool("probe_doc", {})
        pattern = await client.call_tool("show_doc", {"page": "../x"})
        too_big = await client.call_tool("read_doc", {"path": "x" * (ARGUMENTS_MAX_BYTES + 1)})
        unknown = await client.call_tool("nope_doc", {})
        human = await client.call_tool("signoff_doc", {})
        authored = await client.call_tool("probe_doc", {"kind": "fail"})
        escape = await client.call_tool("read_doc", {"path": "../broken/index.artf"})
        after = await client.call_tool("read_doc", {"path": "notes.txt"})
    for refused in (wrong_type, missing, pattern):
        assert refused.is_error
        assert text_of(refused).startswith(
            "Tool arguments do not match the registered input schema."
        )
    assert too_big.is_error and "64 KiB" in text_of(too_big)
    assert unknown.is_error and text_of(unknown) == UNKNOWN_TOOL
    assert human.is_error and text_of(human) == UNKNOWN_TOOL
    assert authored.is_error and text_of(authored) == "authored failure"
    assert escape.is_error
    assert not after.is_error  # the server lives on after every bad request


async def test_serves_an_artifact_without_a_prompt(world: McpWorld) -> None:
    async with stdio(world, "--artifact", "doc") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "read_doc" in names and "act_doc" in names
        assert client.server_capabilities.prompts is None


# --- tool sessions ----------------------------------------------------------------------------


async def test_session_bound_tool_is_cleaned_up_on_disconnect(world: McpWorld) -> None:
    async with stdio(world, "--eval", EVAL) as client:
        first = await client.call_tool("act_doc", {})
        second = await client.call_tool("act_doc", {})
        server = server_process(world)
        assert first.structured_content["harness"] == second.structured_content["harness"]
        assert harness_processes(world.records)
        assert session_directories(world.state)
    assert wait_until(lambda: not _alive(server), EXIT_SECONDS)
    assert wait_until(lambda: not harness_processes(world.records), EXIT_SECONDS)
    assert world.events("stop"), "the session's stop command ran"
    assert not session_directories(world.state)
    assert only_session(world)["session"]["endedAt"] is not None


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_stops_sessions_and_ends_the_server(
    world: McpWorld, stop: signal.Signals
) -> None:
    with anyio.fail_after(120):
        async with stdio(world, "--eval", EVAL) as client:
            result = await client.call_tool("act_doc", {})
            assert not result.is_error, text_of(result)
            server = server_process(world)
            server.send_signal(stop)
            assert wait_until(lambda: not _alive(server), EXIT_SECONDS)
    assert not harness_processes(world.records)
    assert world.events("stop")
    assert not session_directories(world.state)
    assert only_session(world)["session"]["endedAt"] is not None


async def test_cancelled_call_kills_its_process_group(world: McpWorld) -> None:
    pid_file = world.records / "sleeper.pid"
    async with stdio(world, "--eval", EVAL) as client:
        with anyio.move_on_after(120) as deadline:
            async with anyio.create_task_group() as group:

                async def slow() -> None:
                    await client.call_tool("probe_doc", {"kind": "sleep"})

                group.start_soon(slow)
                while not pid_file.exists():  # written whole (os.replace) by the probe
                    await anyio.sleep(0.05)
                sleeper = psutil.Process(int(pid_file.read_text()))
                group.cancel_scope.cancel()  # the client sends notifications/cancelled
        assert not deadline.cancelled_caught
        assert wait_until(lambda: not _alive(sleeper), EXIT_SECONDS)
        assert not harness_processes(world.records)
        after = await client.call_tool("read_doc", {"path": "notes.txt"})
        assert not after.is_error
    calls = only_session(world)["calls"]
    assert [c["tool"] for c in calls] == ["probe_doc", "read_doc"]
    assert calls[0]["isError"] is True
    assert CANCELLED_MESSAGE in calls[0]["summary"]


# --- audit and budget -------------------------------------------------------------------------


async def test_budget_refuses_calls_past_n_and_every_call_is_audited(world: McpWorld) -> None:
    async with stdio(world, "--eval", EVAL, "--max-tool-calls", "2") as client:
        first = await client.call_tool("read_doc", {"path": "notes.txt"})
        second = await client.call_tool("nope_doc", {"x": 1})
        third = await client.call_tool("read_doc", {"path": "notes.txt"})
    assert not first.is_error and second.is_error
    assert third.is_error and text_of(third) == BUDGET_SPENT.format(limit=2)
    details = only_session(world)
    session, calls = details["session"], details["calls"]
    assert session["evalId"] == EVAL and session["scope"] == ["doc"]
    assert session["maxToolCalls"] == 2 and session["transport"] == "stdio"
    assert session["repo"] == os.path.realpath(world.repo)
    assert set(session["pins"]["probe_doc"]) == {"doc/tools/probe.py"}
    assert [c["ordinal"] for c in calls] == [1, 2, 3]
    assert [c["tool"] for c in calls] == ["read_doc", "nope_doc", "read_doc"]
    assert [c["isError"] for c in calls] == [False, True, True]
    assert calls[1]["argumentBytes"] == len('{"x":1}')
    assert all(c["completedAt"] and c["durationMs"] >= 0 for c in calls)
    assert json.loads(calls[0]["summary"])["content"][0]["type"] == "json"
    assert BUDGET_SPENT.format(limit=2) in calls[2]["summary"]
    text = cli(world, "mcp", "log", session["id"])
    assert text.returncode == 0
    assert "#3 read_doc" in text.stdout and "Budget: 2" in text.stdout


async def test_budget_of_one_and_long_summaries(world: McpWorld) -> None:
    async with stdio(world, "--eval", EVAL, "--max-tool-calls", str(MAX_TOOL_CALLS_MIN)) as client:
        long = await client.call_tool("read_doc", {"path": "long.txt", "limit": 200})
        refused = await client.call_tool("read_doc", {"path": "notes.txt"})
    assert not long.is_error and refused.is_error
    calls = only_session(world)["calls"]
    assert len(calls[0]["summary"]) == AUDIT_SUMMARY_MAX_CHARS
    assert calls[0]["summary"].endswith("…")


async def test_mcp_log_lists_sessions_newest_first(world: McpWorld) -> None:
    assert audit(world) == []  # no state yet: nothing, and nothing created
    assert not world.state.exists()
    for target in (("--eval", EVAL), ("--artifact", "doc")):
        async with stdio(world, *target) as client:
            await client.call_tool("read_doc", {"path": "notes.txt"})
    listed = audit(world)
    assert [s.get("evalId") for s in listed] == [None, EVAL]
    assert [s["artifactId"] for s in listed] == ["doc", None]
    assert [s["calls"] for s in listed] == [1, 1]
    unknown = cli(world, "mcp", "log", "mcp-000000000000")
    assert unknown.returncode == 2 and "Unknown MCP session" in unknown.stderr
    as_json = cli(world, "--json", "mcp", "log", "nope")
    assert as_json.returncode == 2 and "error" in json.loads(as_json.stdout)


# --- the prompt -------------------------------------------------------------------------------


async def test_the_review_is_served_as_a_prompt(world: McpWorld) -> None:
    async with stdio(world, "--eval", EVAL) as client:
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["review_doc_review"]
        assert prompts[0].title == "The guide explains every command"
        got = await client.get_prompt("review_doc_review")
    text = cast(Any, got.messages[0].content).text
    assert got.messages[0].role == "user"
    assert INSTRUCTION.split("{doc}")[1].strip() in text
    assert '"approved"' in text and '"reason"' in text  # both owner schemas
    assert "read_doc" in text
    runs = cli(world, "--json", "run", "list")
    assert runs.returncode == 0 and json.loads(runs.stdout) in ([], {"runs": []})


# --- refused before serving -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--eval", "doc/nope"), "Unknown eval: doc/nope"),
        (("--artifact", "nope"), "nope"),
        (("--eval", "doc/signoff"), "doc/signoff is a Human eval"),
        (("--eval", "doc/check"), "doc/check is a runtime eval"),
        (("--eval", EVAL, "--max-tool-calls", "0"), "--max-tool-calls must be at least 1, got 0"),
        (("--eval", EVAL, "--max-tool-calls", "-3"), "--max-tool-calls must be at least 1"),
        (("--eval", EVAL, "--http", "0.0.0.0:0"), "loopback only"),
        (("--eval", EVAL, "--http", "example.com:80"), "Invalid listen address"),
        ((), "Give exactly one of --eval"),
        (("--eval", EVAL, "--artifact", "doc"), "Give exactly one of --eval"),
        (("--eval", EVAL, "log"), "`mcp log` takes none of them"),
    ],
)
def test_refusals_exit_2_before_serving(
    world: McpWorld, args: tuple[str, ...], message: str
) -> None:
    result = cli(world, "mcp", *args)
    assert result.returncode == 2, result
    assert message in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    as_json = cli(world, "--json", "mcp", *args)
    assert as_json.returncode == 2 and message in json.loads(as_json.stdout)["error"]
    assert not (world.state / "state.sqlite").exists()


def test_a_taken_port_exits_2_before_serving(world: McpWorld) -> None:
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli(world, "mcp", "--eval", EVAL, "--http", f"127.0.0.1:{port}")
    finally:
        taken.close()
    assert result.returncode == 2 and result.stdout == ""
    assert f"Cannot listen on 127.0.0.1:{port}" in result.stderr
    assert audit(world) == []  # no MCP session was recorded


def test_unpinnable_path_fails_the_start_as_preparation_failed(world: McpWorld) -> None:
    workspace = ConfigService(PosixFilesystem()).load(str(world.repo))
    with pytest.raises(PinningError) as failure:
        pin_execution_paths(workspace, PosixFilesystem(), ("broken",))
    result = cli(world, "--json", "mcp", "--eval", "broken/review")
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"] == str(failure.value)


def test_bad_lines_on_stdio_get_errors_and_the_server_lives_on(world: McpWorld) -> None:
    server = subprocess.Popen(
        world.cli_args("mcp", "--eval", EVAL),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=world.env(),
    )
    assert server.stdin is not None and server.stdout is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "read_doc", "arguments": {"path": "notes.txt"}},
    }
    try:
        for message in (b"this is not json\n", b'{"jsonrpc": "2.0", "id": 7}\n', hello, call):
            if isinstance(message, dict):
                if message is call:
                    send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
                send(server, message)
            else:
                server.stdin.write(message)
                server.stdin.flush()
            if message is hello:
                assert answer(server, 1)["result"]["serverInfo"]["name"] == "artifactize"
        result = answer(server, 2)["result"]
        assert not result.get("isError")
        assert result["structuredContent"]["path"] == "notes.txt"
    finally:
        server.stdin.close()
        assert server.wait(timeout=EXIT_SECONDS) == 0
        server.stdout.close()


def test_a_stdio_request_at_the_size_limit_is_served_and_one_past_it_answered(
    world: McpWorld,
) -> None:
    """A message of STDIO_MESSAGE_MAX_BYTES is read (its 4 MiB argument is then refused by
    the registry's admission); one byte more is never read and gets a JSON-RPC error under
    its id; the server goes on."""
    server = subprocess.Popen(
        world.cli_args("mcp", "--eval", EVAL),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=world.env(),
    )
    assert server.stdin is not None and server.stdout is not None

    def call_of_size(request_id: int, size: int) -> bytes:
        def encoded(path: str) -> bytes:
            arguments = {"name": "read_doc", "arguments": {"path": path}}
            message = {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": arguments,
            }
            return json.dumps(message, separators=(",", ":")).encode()

        line = encoded("x" * (size - len(encoded(""))))
        assert len(line) == size
        return line + b"\n"

    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    try:
        send(server, hello)
        assert answer(server, 1)["result"]["serverInfo"]["name"] == "artifactize"
        send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        for line in (
            call_of_size(2, STDIO_MESSAGE_MAX_BYTES),
            call_of_size(3, STDIO_MESSAGE_MAX_BYTES + 1),
        ):
            server.stdin.write(line)
            server.stdin.flush()
        at_limit = answer(server, 2)["result"]
        assert at_limit["isError"] is True
        assert at_limit["content"][0]["text"] == NOT_AN_OBJECT  # the registry's own limit
        past_limit = answer(server, 3)
        assert past_limit["error"] == {
            "code": INVALID_REQUEST,
            "message": OVERSIZED_MESSAGE.format(limit=STDIO_MESSAGE_MAX_BYTES),
        }
        send(
            server,
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "read_doc", "arguments": {"path": "notes.txt"}},
            },
        )
        assert answer(server, 4)["result"]["structuredContent"]["path"] == "notes.txt"
    finally:
        server.stdin.close()
        assert server.wait(timeout=EXIT_SECONDS) == 0
        server.stdout.close()
    calls = only_session(world)["calls"]
    assert [(c["ordinal"], c["isError"]) for c in calls] == [(1, True), (2, False)]


def send(server: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert server.stdin is not None
    server.stdin.write(json.dumps(message).encode() + b"\n")
    server.stdin.flush()


def answer(server: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
    """The response to ``request_id``; other lines (errors for the bad lines) are skipped."""
    assert server.stdout is not None
    deadline = time.monotonic() + EXIT_SECONDS
    while time.monotonic() < deadline:
        ready, _, _ = select.select([server.stdout], [], [], 0.1)
        if ready:
            message: dict[str, Any] = json.loads(server.stdout.readline())
            if message.get("id") == request_id:
                return message
    raise AssertionError(f"no answer to request {request_id}")


# --- streamable HTTP --------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def http_server(world: McpWorld, *args: str) -> AsyncIterator[tuple[dict[str, Any], Any]]:
    process = subprocess.Popen(
        world.cli_args("--json", "mcp", "--eval", EVAL, "--http", "127.0.0.1:0", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=world.env(),
    )
    assert process.stdout is not None
    try:
        line = await anyio.to_thread.run_sync(process.stdout.readline)
        yield json.loads(line), process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=EXIT_SECONDS) == 0
        process.stdout.close()


def bearer(token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)


async def test_http_serves_the_same_behind_a_bearer_token(world: McpWorld) -> None:
    async with http_server(world) as (info, _):
        url, token = info["url"], info["token"]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        assert len(token) >= 40 and info["sessionId"].startswith("mcp-")
        async with httpx2.AsyncClient(timeout=30) as raw:
            missing = await raw.post(url, json={})
            wrong = await raw.post(url, json={}, headers={"Authorization": "Bearer nope"})
            other = await raw.post(url, json={}, headers={"Authorization": token})
            big = await raw.post(
                url,
                content=b"x" * (5 * 1024 * 1024),
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
            )
            allowed = {
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            }
            hello = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
            rebound = await raw.post(url, json=hello, headers={**allowed, "Host": "evil.example"})
            foreign = await raw.post(
                url, json=hello, headers={**allowed, "Origin": "http://evil.example"}
            )
            elsewhere = await raw.get(url.removesuffix("/mcp") + "/other", headers=allowed)
        assert [r.status_code for r in (missing, wrong, other)] == [401, 401, 401]
        assert (rebound.status_code, foreign.status_code, elsewhere.status_code) == (421, 403, 404)
        assert "bearer token" in missing.json()["error"]
        assert big.status_code == 413
        async with (
            bearer(token) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == [d.name for d in registry(world).list()]
            read = await client.call_tool("read_doc", {"path": "notes.txt"})
            image = await client.call_tool("view_image_doc", {"path": "pic.png"})
            refused = await client.call_tool("read_doc", {})
            prompt = await client.get_prompt("review_doc_review")
        assert read.structured_content["lines"][0]["text"] == "hello\n"
        assert block(image, 0).data == b64(PNG1)
        assert refused.is_error
        assert "read_doc" in cast(Any, prompt.messages[0].content).text
    details = only_session(world)
    assert details["session"]["transport"] == "http"
    assert [c["tool"] for c in details["calls"]] == ["read_doc", "view_image_doc", "read_doc"]
    assert token not in json.dumps(details)  # the token is never stored


async def test_http_session_ends_when_the_client_disconnects(world: McpWorld) -> None:
    async with http_server(world) as (info, process), bearer(info["token"]) as http:
        transport = streamable_http_client(info["url"], http_client=http)
        async with Client(transport, mode="legacy") as client:
            first = await client.call_tool("act_doc", {})
            assert not first.is_error, text_of(first)
            assert harness_processes(world.records)
        # DELETE ended the MCP session: its tool session stops, the server goes on
        assert wait_until(lambda: not harness_processes(world.records), EXIT_SECONDS)
        assert wait_until(lambda: not session_directories(world.state), EXIT_SECONDS)
        assert world.events("stop")
        assert process.poll() is None
        transport = streamable_http_client(info["url"], http_client=http)
        async with Client(transport, mode="legacy") as client:
            again = await client.call_tool("act_doc", {})
            assert again.structured_content["harness"] != first.structured_content["harness"]
            server = psutil.Process(process.pid)
            server.send_signal(signal.SIGTERM)
            assert wait_until(lambda: not _alive(server), EXIT_SECONDS)
    assert not harness_processes(world.records)
    assert len(world.events("stop")) == 2


async def test_after_kill_9_the_next_session_start_sweeps(world: McpWorld) -> None:
    async with stdio(world, "--eval", EVAL) as client:
        first = await client.call_tool("act_doc", {})
        harness = psutil.Process(first.structured_content["harness"])
        server = server_process(world)
        server.kill()  # no cleanup can run: the harness and its directory are left
        assert wait_until(lambda: not _alive(server), EXIT_SECONDS)
        with contextlib.suppress(Exception):
            await client.call_tool("read_doc", {"path": "notes.txt"})
    assert _alive(harness) and session_directories(world.state)
    killed = only_session(world)
    assert killed["session"]["endedAt"] is None  # the server never ended it
    async with stdio(world, "--eval", EVAL) as client:
        again = await client.call_tool("act_doc", {})
        assert not again.is_error, text_of(again)
        assert wait_until(lambda: not _alive(harness), EXIT_SECONDS)  # swept on start
        assert len(session_directories(world.state)) == 1
    assert wait_until(lambda: not session_directories(world.state), EXIT_SECONDS)
    text = cli(world, "mcp", "log")
    assert text.returncode == 0 and "(running or killed)" in text.stdout
