"""Serving the browser reviewer: bind loopback, print the one URL, open the browser, stop
cleanly.

The socket is bound before the server starts (``--port``, default a free port chosen by
the system), so the printed URL is right and a taken port is a clear error. Every stop
signal (SIGTERM, SIGINT, SIGHUP, SIGQUIT: ``entrypoints/signals.py``) stops the server the
same way: the live streams end, every running Human tool is cancelled (its process group
killed by the lifecycle), the claims stay, and the command exits 2, as every command a
stop signal ends.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import webbrowser
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from artifactize.entrypoints.errors import CommandError
from artifactize.entrypoints.signals import stop_signals
from artifactize.entrypoints.web.security import Guard, new_token

if TYPE_CHECKING:
    from artifactize.entrypoints.bootstrap import Services
    from artifactize.entrypoints.web.app import WebContext

LOOPBACK = "127.0.0.1"
PORT_MAX = 65_535
STOP_GRACE_SECONDS = 2  # open connections get this long once the server stops
CLOCK_FORMAT = "%H:%M:%S"
PORT_RULE = "--port {port}: give 0 (a free port) or 1-65535."
PORT_TAKEN = "--port {port}: cannot listen on {host}: {reason}"


def check_port(port: int) -> int:
    if not 0 <= port <= PORT_MAX:
        raise CommandError(PORT_RULE.format(port=port))
    return port


def bind(port: int) -> socket.socket:
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it every kept-alive response waits for the client's delayed ACK (40 ms).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as exc:
        sock.close()
        raise CommandError(
            PORT_TAKEN.format(port=port, host=LOOPBACK, reason=exc.strerror or exc)
        ) from None
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def web_context(services: Services, reviewer: str | None, all_repos: bool) -> WebContext:
    """The reviewer's session, viewer and monitor over this invocation's state."""
    from artifactize.domain.reviews.human.reviewers import ReviewerError, check_reviewer
    from artifactize.domain.reviews.human.viewing import ScopeViewer
    from artifactize.entrypoints.review_tui.session import ReviewSession
    from artifactize.entrypoints.web.app import WebContext
    from artifactize.entrypoints.web.live import ToolRuns
    from artifactize.entrypoints.web.team import TeamInbox

    try:
        name = check_reviewer(services.reviewer_name(reviewer))
    except ReviewerError as exc:
        raise CommandError(exc.message) from None
    store = services.open_state(create=True)
    assert store is not None  # created when missing
    reviews = services.human_reviews(store)
    remote = services.remote_store()  # an invalid configuration fails before serving
    clock = services.container.clock()
    repo = None if all_repos else services.repo()
    session = ReviewSession(
        store=store, reviews=reviews, reviewer=name, remote=remote, repo=repo, now=clock.now
    )
    ports = reviews.ports
    viewer = ScopeViewer(ports.load, ports.filesystem, ports.tools.regex, ports.threads)
    return WebContext(
        session=session,
        viewer=viewer,
        monitor=services.monitor_source(all_repos=all_repos),
        guard=Guard(new_token()),
        runs=ToolRuns(session, local_clock),
        now=clock.now,
        team=None if remote is None else TeamInbox(remote, repo, clock.monotonic),
    )


def local_clock() -> str:
    return datetime.now().strftime(CLOCK_FORMAT)


def serve(
    context: WebContext,
    sock: socket.socket,
    announce: Callable[[str], None],
    open_browser: bool,
) -> bool:
    """Serve until a stop signal; ``announce`` gets the URL once the server listens. True
    when a stop signal ended it (the command then exits as every command a signal stops)."""
    import anyio
    import uvicorn

    from artifactize.entrypoints.web.app import build_app

    context.guard.port = sock.getsockname()[1]
    app = build_app(context)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=STOP_GRACE_SECONDS,
        server_header=False,
    )
    server = new_server(config)
    context.should_stop = lambda: server.should_exit

    async def run() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_announce, server, context.guard.url(), announce, open_browser)
            try:
                await server.serve(sockets=[sock])
            finally:
                tasks.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await context.session.aclose()

    try:
        anyio.run(run)
    finally:
        sock.close()
    return bool(server.stopped_by_signal)


async def _announce(
    server: Any, url: str, announce: Callable[[str], None], open_browser: bool
) -> None:
    import anyio

    while not server.started:
        if server.should_exit:
            return
        await anyio.sleep(0.02)
    announce(url)
    if open_browser:
        await anyio.to_thread.run_sync(_open, url)


def _open(url: str) -> None:
    with contextlib.suppress(Exception):  # no browser: the printed URL is the way in
        webbrowser.open(url)


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, stopping alike on every stop signal (SIGTERM, SIGINT, SIGHUP,
        SIGQUIT: ``entrypoints/signals.py``), and returning (no signal raised again after a
        clean stop)."""

        stopped_by_signal = False

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return

            def stop(signum: int, frame: Any) -> None:
                self.stopped_by_signal = True
                self.should_exit = True

            saved = {sig: signal.signal(sig, stop) for sig in stop_signals()}
            try:
                yield
            finally:
                for sig, handler in saved.items():
                    signal.signal(sig, handler)

    return Server


def new_server(config: Any) -> Any:
    """uvicorn's server with our signal handling (the class is built on first use)."""
    return _server_class()(config)
