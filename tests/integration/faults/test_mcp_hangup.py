"""SIGHUP and SIGQUIT to ``artifactize mcp`` (its client's terminal closed) end it exactly
as SIGTERM does: its tool sessions are stopped (their stop command runs, their harness
processes and folders are gone) and its audit session is ended by the server itself."""

from __future__ import annotations

import signal

import anyio
import pytest

from tests.integration.test_mcp_server import (
    EVAL,
    EXIT_SECONDS,
    _alive,
    no_leftovers,
    only_session,
    server_process,
    session_directories,
    stdio,
    text_of,
    world,
)
from tests.integration.test_tool_sessions import harness_processes, wait_until
from tests.support.mcp_world import McpWorld

__all__ = ["no_leftovers", "world"]  # fixtures: the mcp suite's workspace and leftover check
pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("stop", [signal.SIGHUP, signal.SIGQUIT], ids=lambda s: s.name)
async def test_a_hang_up_stops_sessions_and_ends_the_server(
    world: McpWorld, stop: signal.Signals
) -> None:
    with anyio.fail_after(120):
        async with stdio(world, "--eval", EVAL) as client:
            result = await client.call_tool("act_doc", {})
            assert not result.is_error, text_of(result)
            server = server_process(world)
            assert harness_processes(world.records)
            server.send_signal(stop)
            assert wait_until(lambda: not _alive(server), EXIT_SECONDS)
    assert not harness_processes(world.records)
    assert world.events("stop")
    assert not session_directories(world.state)
    assert only_session(world)["session"]["endedAt"] is not None
