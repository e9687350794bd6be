"""The coding agent's tool server (``adapters/coding_agents/tool_server.py``) leaves the event
loop as it found it.

CI once hung a repaired Claude Code review for 240 s: the first run's server socket was
closed while the loop still watched it, so the next descriptor given the same number (the
repair run's process pidfd) was never watched by epoll, and the wait for that process's exit
never woke. The server must stop serving before its socket is closed.
"""

from __future__ import annotations

import os
import socket

import anyio
import pytest

from artifactize.adapters.coding_agents.tool_server import served_tools
from artifactize.ports.coding_agents import ToolAnswer

pytestmark = pytest.mark.anyio

WAKE_SECONDS = 5


async def no_call(name: str, arguments: object) -> ToolAnswer:
    raise AssertionError("no tool is called here")


async def unauthorized_post(url: str) -> bytes:
    port = int(url.split(":")[2].split("/")[0])
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
        return await stream.receive()


@pytest.mark.parametrize("requests", [0, 1])
async def test_a_descriptor_reused_after_the_server_is_still_watched(requests: int) -> None:
    async with served_tools((), no_call) as served:
        for _ in range(requests):  # a served request too: its connection is closed as well
            assert (await unauthorized_post(served.url)).startswith(b"HTTP/1.1 401")
        listening = served.url.split(":")[2].split("/")[0]
    with pytest.raises(OSError):  # the port is closed: nothing listens any more
        socket.create_connection(("127.0.0.1", int(listening)), timeout=1).close()
    read, write = os.pipe()
    try:
        os.write(write, b"x")
        with anyio.fail_after(WAKE_SECONDS):
            await anyio.wait_readable(read)
    finally:
        os.close(read)
        os.close(write)
