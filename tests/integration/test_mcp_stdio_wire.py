"""The MCP wire on private descriptors (``entrypoints.mcp.stdio``): lines from a real pipe,
the size limit of one line, a read that a cancellation ends at once, and descriptors put
back as they were."""

from __future__ import annotations

import json
import os
import time

import anyio
import anyio.to_thread
import pytest

from artifactize.entrypoints.mcp.stdio import (
    INVALID_REQUEST,
    OVERSIZED_MESSAGE,
    READ_CHUNK_BYTES,
    STDIO_MESSAGE_MAX_BYTES,
    FdLines,
    FdWriter,
    oversized_answer,
)

pytestmark = [pytest.mark.anyio, pytest.mark.process]  # MCP over stdio: a real server process


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


async def test_a_line_at_the_limit_is_read_and_one_past_it_is_skipped_and_reported() -> None:
    limit = READ_CHUNK_BYTES + 100  # more than one read, so the limit is checked across reads

    def padded(start: bytes, size: int) -> bytes:
        return start + b"a" * (size - len(start) - 2) + b'"}'

    at_limit = padded(b'{"id": 1, "pad": "', limit)
    past_limit = padded(b'{"id": "two", "pad": "', limit + 1)
    assert len(at_limit) == limit and len(past_limit) == limit + 1
    reported: list[bytes] = []

    async def oversized(head: bytes) -> None:
        reported.append(head)

    read_end, write_end = os.pipe()
    try:
        lines = FdLines(read_end, oversized, limit=limit)
        data = at_limit + b"\n" + past_limit + b"\n" + b'{"id": 3}\n'

        def write_all() -> None:
            os.write(write_end, data)
            os.close(write_end)

        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, write_all)
            got = [line async for line in lines]
        write_end = -1
        assert got == [at_limit.decode() + "\n", '{"id": 3}\n']
        assert len(reported) == 1 and reported[0].startswith(b'{"id": "two"')
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def test_the_answer_to_an_oversized_request_names_the_limit_and_its_id() -> None:
    for head, request_id in [
        (b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"a": "', 12),
        (b'{"id":"a\\"b","method"', 'a"b'),
        (b'{"method": "tools/call", "params": {"path": "', None),
    ]:
        answer = json.loads(oversized_answer(head))
        assert answer["id"] == request_id
        assert answer["error"] == {
            "code": INVALID_REQUEST,
            "message": OVERSIZED_MESSAGE.format(limit=STDIO_MESSAGE_MAX_BYTES),
        }


async def test_a_device_that_cannot_be_polled_is_read_as_it_is() -> None:
    """Stdin from the null device (``artifactize mcp < /dev/null``): epoll refuses it (EPERM),
    and a read of it never blocks, so it is read directly: the wire ends at once, with no
    error (a traceback before)."""
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        lines = FdLines(null)
        with anyio.fail_after(5):
            assert [line async for line in lines] == []
    finally:
        os.close(null)
