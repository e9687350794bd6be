"""``artifactize mcp --control`` through the official MCP client (the ``mcp`` SDK's
``Client`` over stdio): the eight tools by name, a durable ``verify_start`` that finishes
after the client disconnected, a bounded ``run_wait``, paging, cancel, the refusals as
``isError`` results, and the audit of every call in ``mcp log``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from artifactize.entrypoints.mcp.control import (
    RUN_VIEW_REQUESTS_MAX,
    RUN_WAIT_MAX_SECONDS,
    TOOLS,
)
from tests.integration.test_tool_sessions import harness_processes, wait_until
from tests.support.cli import run_cli

pytestmark = [pytest.mark.anyio, pytest.mark.process]  # MCP over stdio: a real server process

DECLARATION = """
name = "proj"

[evals.quick]
title = "Quick"
profile = { kind = "runtime", command = "true", args = [] }
payload.instruction = "Quick."

[evals.slow]
title = "Slow"
profile = { kind = "runtime", command = "sleep", args = ["4"] }
payload.instruction = "Slow."
"""
NAMES = [
    "status",
    "verify_start",
    "run_wait",
    "run_show",
    "run_list",
    "run_cancel",
    "request_list",
    "eval_explain",
]


class World:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = root / "repo"
        self.state = root / "state"
        self.repo.mkdir()
        (self.repo / "index.artf").write_text(DECLARATION, encoding="utf-8")

    def env(self) -> dict[str, str]:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
        return {**environment, "PYTHONDONTWRITEBYTECODE": "1"}

    def cli(self, *args: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "artifactize.entrypoints.cli.app",
            "--repo",
            str(self.repo),
            "--state-dir",
            str(self.state),
            *args,
        ]

    def client(self) -> Client:
        command = self.cli("mcp", "--control")
        params = StdioServerParameters(command=command[0], args=command[1:], env=self.env())
        return Client(params, mode=cast(Any, "auto"))

    def run(self, *args: str) -> Any:
        """The CLI's ``--json`` answer. In process, except inside an event loop (the async
        tests): the CLI starts its own loop and installs its stop signals there, which
        needs the main thread and no running loop, so it runs as a real process."""
        argv = self.cli("--json", *args)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return run_cli(*argv[3:], env=self.env()).json()
        done = subprocess.run(argv, env=self.env(), capture_output=True, text=True, check=False)
        return json.loads(done.stdout) if done.stdout else done.stderr


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    assert result.is_error, result.content
    return str(result.content[0].text)


async def test_an_agent_starts_a_durable_run_and_reads_it_through_the_control_tools(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    async with world.client() as client:
        listed = (await client.list_tools()).tools
        assert [tool.name for tool in listed] == NAMES == [tool.name for tool in TOOLS]
        status = data(await client.call_tool("status", {}))
        assert {e["evalId"]: e["action"] for e in status["evals"]} == {
            "proj/quick": "execute",
            "proj/slow": "execute",
        }
        assert "Unknown" in error_text(await client.call_tool("status", {"selector": "nope"}))
        started = data(
            await client.call_tool(
                "verify_start", {"selector": "proj/slow", "comment": "agent checks the sleep"}
            )
        )
        run_id = started["runId"]
        waited = data(await client.call_tool("run_wait", {"runId": run_id, "timeoutSeconds": 1}))
        assert (waited["settled"], waited["status"]) == (False, "RUNNING")
    # the client is gone; the Run goes on and settles on its own
    shown = world.run("run", "show", run_id, "--wait", "--timeout-ms", "60000")
    assert shown["comment"] == "agent checks the sleep"
    # the Run is INCOMPLETE: proj's other eval is not GREEN yet; the one it ran is
    assert [(r["evalId"], r["status"]) for r in shown["requests"]] == [("proj/slow", "GREEN")]

    async with world.client() as client:
        waited = data(await client.call_tool("run_wait", {"runId": run_id}))
        assert waited["settled"] is True and waited["comment"] == "agent checks the sleep"
        assert [(r["evalId"], r["status"]) for r in waited["requests"]] == [("proj/slow", "GREEN")]
        assert data(await client.call_tool("run_show", {"runId": run_id}))["status"] == "INCOMPLETE"
        none_red = data(await client.call_tool("run_show", {"runId": run_id, "status": "RED"}))
        assert (none_red["counts"], none_red["total"], none_red["requests"]) == (
            {"GREEN": 1},
            0,
            [],
        )
        second = data(await client.call_tool("verify_start", {"selector": "proj/quick"}))
        data(await client.call_tool("run_wait", {"runId": second["runId"]}))
        page = data(await client.call_tool("run_list", {"limit": 1}))
        assert [run["id"] for run in page["runs"]] == [second["runId"]]
        page = data(await client.call_tool("run_list", {"limit": 1, "offset": 1}))
        assert [run["id"] for run in page["runs"]] == [run_id]
        requests = data(await client.call_tool("request_list", {"runId": run_id}))["requests"]
        assert [r["evalId"] for r in requests] == ["proj/slow"]
        explained = data(await client.call_tool("eval_explain", {"eval": "proj/slow"}))
        assert explained["wouldExecute"] is False and explained["key"]
        assert explained["action"] == "reuse"
        refused = {
            "run_cancel": ({"runId": run_id}, "is not running"),
            "run_show": ({"runId": "run-nothere"}, "Unknown Run: run-nothere"),
            "eval_explain": ({"eval": "proj/none"}, "proj/none"),
            "run_wait": ({"runId": run_id, "timeoutSeconds": RUN_WAIT_MAX_SECONDS + 1}, "maximum"),
            "verify_start": ({"selector": "nope/none"}, "nope"),
        }
        for name, (arguments, words) in refused.items():
            assert words in error_text(await client.call_tool(name, arguments)), name
        at_limit = {"runId": run_id, "timeoutSeconds": RUN_WAIT_MAX_SECONDS}
        assert data(await client.call_tool("run_wait", at_limit))["settled"] is True
        past = {"runId": run_id, "limit": RUN_VIEW_REQUESTS_MAX + 1}
        assert "maximum" in error_text(await client.call_tool("run_show", past))
        at_most = {"runId": run_id, "limit": RUN_VIEW_REQUESTS_MAX}
        assert data(await client.call_tool("run_show", at_most))["limit"] == RUN_VIEW_REQUESTS_MAX

    sessions = world.run("mcp", "log")
    assert len(sessions) == 2 and all(s["control"] for s in sessions)
    calls = world.run("mcp", "log", sessions[0]["id"])["calls"]
    assert [call["tool"] for call in calls][:2] == ["run_wait", "run_show"]
    assert wait_until(lambda: not harness_processes(world.root), 30), "nothing left running"


async def test_run_cancel_stops_a_run_an_agent_started(tmp_path: Path) -> None:
    world = World(tmp_path)
    async with world.client() as client:
        started = data(await client.call_tool("verify_start", {"selector": "proj/slow"}))
        time.sleep(0.5)
        cancelled = data(await client.call_tool("run_cancel", {"runId": started["runId"]}))
        assert cancelled["settled"] is True
        assert [r["errorCode"] for r in cancelled["requests"]] == ["CANCELLED"]
    assert wait_until(lambda: not harness_processes(world.root), 30), "nothing left running"


def test_control_takes_no_eval_and_refuses_before_serving(tmp_path: Path) -> None:
    world = World(tmp_path)
    done = run_cli(
        *world.cli("--json", "mcp", "--control", "--eval", "proj/quick")[3:], env=world.env()
    )
    assert done.returncode == 2
    assert "--control serves the control surface" in json.loads(done.stdout)["error"]
