"""The browser reviewer's server pieces without a server: the port rule, the bound socket,
the session's secrets and the event stream's framing."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import pytest

from artifactize.entrypoints.errors import CommandError
from artifactize.entrypoints.web import live
from artifactize.entrypoints.web.live import (
    IDLE_PER_RENDER,
    LIVE_POLL_SECONDS,
    fragment_events,
    poll_delay,
)
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


def test_a_slow_render_waits_longer_before_the_next() -> None:
    """A live page's fragment is rendered on the server's one event loop: one that took long
    (a 10,000-Artifact Run changing under its ``verify``) is rendered again after twice as
    long, so the other pages are still answered."""
    assert poll_delay(0.0) == LIVE_POLL_SECONDS
    assert poll_delay(LIVE_POLL_SECONDS / IDLE_PER_RENDER) == LIVE_POLL_SECONDS
    assert poll_delay(1.5) == 1.5 * IDLE_PER_RENDER


def test_the_stream_waits_by_how_long_the_render_took(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait after each render is ``poll_delay`` of its time, as the clock says."""
    waits: list[float] = []
    ticks = iter([0.0, 3.0, 10.0, 10.0])  # a 3 s render, then an instant one
    monkeypatch.setattr(live, "monotonic", lambda: next(ticks))
    real = anyio.move_on_after

    def recorded(delay: float) -> Any:
        waits.append(delay)
        return real(0)

    monkeypatch.setattr(anyio, "move_on_after", recorded)

    async def collect() -> None:
        stopping = anyio.Event()
        renders = iter(["a", "b"])

        def render() -> str:
            text = next(renders)
            if text == "b":
                stopping.set()
            return text

        async for _event in fragment_events(render, stopping):
            pass

    anyio.run(collect)
    assert waits == [3.0 * IDLE_PER_RENDER, LIVE_POLL_SECONDS]
