"""The live parts of the browser reviewer: Tool logs while tools run, and server-sent
events that push a fragment of a page again whenever it changes.

A request's Tool log is the terminal reviewer's (``review_tui.tool_log``: the same header,
stderr marking, end lines, 1 MiB per run and long lines in pieces), fed through the same
``LogFeed`` (thread-safe: a launched program's drain threads report from their own
threads). It lives in the server's memory, one per request, for as long as the server runs,
so a reloaded page or a second window shows the same log.

A live fragment is rendered again every ``LIVE_POLL_SECONDS`` on the server (or twice as
long as the last render took, when that was longer: ``poll_delay``) and sent only when its
HTML changed; a comment line every ``KEEPALIVE_SECONDS`` keeps proxies and the
browser from timing the stream out. Streams end when the server stops.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from time import monotonic

import anyio

from artifactize.domain.reviews.human.errors import HumanReviewError
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.entrypoints.review_tui.log_feed import LogFeed
from artifactize.entrypoints.review_tui.session import ReviewSession
from artifactize.entrypoints.review_tui.tool_list import ToolInfo
from artifactize.entrypoints.review_tui.tool_log import ToolLog, error_end, result_end
from artifactize.ports.state import StateError

LIVE_POLL_SECONDS = 0.1
KEEPALIVE_SECONDS = 15.0
IDLE_PER_RENDER = 2  # wait twice what a render took: a live page renders a third of the time


def poll_delay(render_seconds: float) -> float:
    """Seconds until a live fragment is rendered again: ``LIVE_POLL_SECONDS``, or twice what
    the last render took when that was long (a 10,000-Artifact Run's page while its
    ``verify`` changes it: ~2 s a render on the server's one event loop), so the server
    still answers its other pages."""
    return max(LIVE_POLL_SECONDS, IDLE_PER_RENDER * render_seconds)


@dataclass
class LiveLog:
    log: ToolLog = field(default_factory=ToolLog)
    feed: LogFeed = field(default_factory=LogFeed)
    running: set[str] = field(default_factory=set)  # tools of this request running now
    tokens: set[Cancellation] = field(default_factory=set)  # their cancellations

    def current(self) -> ToolLog:
        """The log with every queued line filed."""
        self.feed.drain()
        return self.log


class ToolRuns:
    """Every request's Tool log, and the tool runs the server started (cancelled on stop)."""

    def __init__(self, session: ReviewSession, clock_text: Callable[[], str]) -> None:
        self.session = session
        self.clock_text = clock_text
        self.logs: dict[str, LiveLog] = {}
        self.tokens: set[Cancellation] = set()

    def live(self, request_id: str) -> LiveLog:
        return self.logs.setdefault(request_id, LiveLog())

    async def run(self, request_id: str, tool: ToolInfo) -> None:
        """One run of ``tool``: an entry of the request's log from header to end line."""
        live = self.live(request_id)
        run = live.log.start(self.clock_text(), tool.operation, tool.artifact)
        token = Cancellation()
        self.tokens.add(token)
        live.tokens.add(token)
        live.running.add(tool.name)
        try:
            result = await self.session.run_tool(
                request_id, tool.name, token, live.feed.sink(live.log, run)
            )
        except (HumanReviewError, StateError) as exc:
            live.feed.drain()
            message = exc.message if isinstance(exc, HumanReviewError) else str(exc)
            live.log.finish(run, *error_end(message))
            return
        finally:
            live.running.discard(tool.name)
            self.tokens.discard(token)
            live.tokens.discard(token)
        live.feed.drain()
        live.log.finish(run, *result_end(result))

    def stop(self, request_id: str) -> int:
        """Cancel the request's running tools (their process groups are killed); how many."""
        live = self.live(request_id)
        for token in list(live.tokens):
            token.cancel()
        return len(live.tokens)

    def cancel_all(self) -> None:
        for token in list(self.tokens):
            token.cancel()


async def fragment_events(render: Callable[[], str], stopping: anyio.Event) -> AsyncIterator[bytes]:
    """Server-sent events: ``render()`` each time it changes, until the server stops."""
    last: str | None = None
    quiet = 0.0
    while not stopping.is_set():
        started = monotonic()
        text = render()
        delay = poll_delay(monotonic() - started)
        if text != last:
            last = text
            quiet = 0.0
            yield ("".join(f"data: {line}\n" for line in text.split("\n")) + "\n").encode()
        elif quiet >= KEEPALIVE_SECONDS:
            quiet = 0.0
            yield b": keepalive\n\n"
        with anyio.move_on_after(delay):
            await stopping.wait()
        quiet += delay
