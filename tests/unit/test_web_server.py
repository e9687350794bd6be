"""The browser reviewer's server pieces without a server: the port rule, the bound socket,
the session's secrets and the event stream's framing."""

from __future__ import annotations

import socket

import anyio
import pytest

from artifactize.entrypoints.errors import CommandError
from artifactize.entrypoints.web.live import fragment_events
from artifactize.entrypoints.web.security import Guard, new_token
from artifactize.entrypoints.web.server import PORT_MAX, bind, check_port


def test_a_port_is_0_or_1_to_65535() -> None:
    assert check_port(0) == 0 and check_port(PORT_MAX) == PORT_MAX
    for bad in (-1, PORT_MAX + 1):
        with pytest.raises(CommandError) as refused:
            check_port(bad)
        assert refused.value.args[0] == f"--port {bad}: give 0 (a free port) or 1-65535."


def test_the_socket_is_loopback_tcp_so_responses_are_not_delayed() -> None:
    sock = bind(0)
    try:
        host, port = sock.getsockname()
        assert host == "127.0.0.1" and port > 0
        assert sock.proto == socket.IPPROTO_TCP  # asyncio sets TCP_NODELAY only then
        with pytest.raises(CommandError) as taken:
            bind(port)
        assert f"--port {port}: cannot listen on 127.0.0.1" in taken.value.args[0]
    finally:
        sock.close()


def test_the_csrf_token_is_per_session() -> None:
    one, other = Guard(new_token(), 8000), Guard(new_token(), 8000)
    assert one.csrf != other.csrf and one.csrf == Guard(one.token, 9000).csrf
    assert one.csrf_matches(one.csrf) and not one.csrf_matches(other.csrf)
    assert not one.csrf_matches(None) and not one.matches("") and one.matches(one.token)
    assert one.url() == f"http://127.0.0.1:8000/?token={one.token}"
    assert one.cookie_name == "artifactize_web_8000"


def test_an_event_carries_every_line_of_its_fragment_and_is_sent_once_per_change() -> None:
    texts = iter(["a\nb", "a\nb", "c"])
    seen: list[bytes] = []

    async def collect() -> None:
        stopping = anyio.Event()

        def render() -> str:
            try:
                return next(texts)
            except StopIteration:
                stopping.set()
                return "c"

        async for event in fragment_events(render, stopping):
            seen.append(event)

    anyio.run(collect)
    assert seen == [b"data: a\ndata: b\n\n", b"data: c\n\n"]
