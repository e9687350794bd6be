"""The MCP wire on private descriptors (``entrypoints.mcp.stdio``): lines from a real pipe,
a read that a cancellation ends at once, and descriptors put back as they were."""

from __future__ import annotations

import os
import time

import anyio
import anyio.to_thread
import pytest

from entrypoints.mcp.stdio import READ_CHUNK_BYTES, FdLines, FdWriter

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_lines_split_across_reads_and_a_last_line_without_newline() -> None:
    read_end, write_end = os.pipe()
    try:
        lines = FdLines(read_end)
        long = "x" * (READ_CHUNK_BYTES + 10)
        os.write(write_end, b'{"a": 1}\n{"b"')
        assert await lines.__anext__() == '{"a": 1}\n'
        rest = b": 2}\n\xff" + long.encode() + b"\ntail"

        def write_rest() -> None:  # more than a pipe holds: written while it is read
            os.write(write_end, rest)
            os.close(write_end)

        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, write_rest)
            got = [line async for line in lines]
        write_end = -1
        assert got == ['{"b": 2}\n', "\ufffd" + long + "\n", "tail"]
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


async def test_a_waiting_read_is_cancelled_at_once() -> None:
    read_end, write_end = os.pipe()
    try:
        lines = FdLines(read_end)
        started = time.monotonic()
        with anyio.move_on_after(0.2) as scope:
            await lines.__anext__()
        assert scope.cancelled_caught
        assert time.monotonic() - started < 5  # not stuck until the writer speaks
    finally:
        os.close(read_end)
        os.close(write_end)


async def test_writes_wait_while_the_pipe_is_full() -> None:
    read_end, write_end = os.pipe()
    try:
        writer = FdWriter(write_end)
        text = "y" * (1024 * 1024)  # larger than any pipe buffer
        received = bytearray()

        async def drain() -> None:
            while len(received) < len(text):
                await anyio.wait_readable(read_end)
                received.extend(os.read(read_end, 65536))

        async with anyio.create_task_group() as group:
            group.start_soon(drain)
            assert await writer.write(text) == len(text)
            await writer.flush()
        assert received.decode() == text
    finally:
        os.close(read_end)
        os.close(write_end)
