"""The terminal reviewer: urwid on anyio, screens, the busy spinner and notices.

urwid runs on the running asyncio loop (``AsyncioEventLoop`` wrapped in
``GuardedEventLoop``, ``MainLoop.start()``), so lifecycle calls are ordinary anyio tasks
started from key handlers. One action runs at a time (``Busy``): meanwhile a spinner line
says what runs, ``Esc`` (or ``Ctrl-C``) cancels it (a tool's process group is killed by the
lifecycle), ``PgUp``/``PgDn`` still scroll, and other keys are refused.

Every key goes to the app, which asks the current screen what the key means (an ``Act``)
and carries it out; the tool and verdict steps live in ``ToolFlow`` and ``VerdictFlow``.

Quitting (``q``, ``Ctrl-C``) with claims this session took and did not settle offers Leave:
keep them, or release them all. SIGTERM, SIGHUP and SIGQUIT end the review without asking (a
running tool is cancelled and cleaned up; claims are kept).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import anyio
import urwid
from anyio.abc import TaskGroup

from artifactize.domain.reviews.human.errors import HumanReviewError
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.entrypoints.review_tui.acts import Act, Screen
from artifactize.entrypoints.review_tui.busy import TICK_SECONDS, Busy, BusyWork
from artifactize.entrypoints.review_tui.dialogs import (
    ConfirmScreen,
    EndRequestScreen,
    LeaveScreen,
    VerdictScreen,
)
from artifactize.entrypoints.review_tui.editor import EDITOR_DEFAULT
from artifactize.entrypoints.review_tui.form_screen import FormScreen
from artifactize.entrypoints.review_tui.layout import KeyRouter, ScreenFrame
from artifactize.entrypoints.review_tui.list_screen import ListScreen
from artifactize.entrypoints.review_tui.log_feed import LogFeed
from artifactize.entrypoints.review_tui.palette import BUSY, NOTICE, PALETTE, PROBLEM
from artifactize.entrypoints.review_tui.request_screen import RequestScreen
from artifactize.entrypoints.review_tui.session import ReviewActions
from artifactize.entrypoints.review_tui.tool_flow import ToolFlow
from artifactize.entrypoints.review_tui.tool_log import ToolLog
from artifactize.entrypoints.review_tui.verdict_flow import VerdictFlow
from artifactize.entrypoints.signals import stop_signals
from artifactize.ports.state import StateError

REFRESH_SECONDS = 1.0  # the List reloads itself this often
READ_FAILED = "read failed at {time}: {reason}"
NOT_CLAIMED = "The request is not claimed."
RELEASING = "Releasing…"
RELEASED = "Released your claim on {request}."
CANCELLING = "Cancelling…"
CANCELLED = "Cancelled {request}."
CLOCK_FORMAT = "%H:%M:%S"
# The stop signals of every command (SIGHUP and SIGQUIT exist on POSIX only); on Windows the
# event loop watches no signals at all (Ctrl-C reaches the screen as a key there).
SIGNALS = stop_signals()


def local_clock() -> str:
    return datetime.now().strftime(CLOCK_FORMAT)


def _message(exc: Exception) -> str:
    return exc.message if isinstance(exc, HumanReviewError) else str(exc)


class ReviewApp:
    def __init__(
        self,
        session: ReviewActions,
        first_request: str | None = None,
        clock_text: Callable[[], str] = local_clock,
        environment: Mapping[str, str] = os.environ,
        fallback_editor: str = EDITOR_DEFAULT,
        *,
        windows: bool = False,
    ) -> None:
        self._session = session
        self.first_request = first_request
        self._clock_text = clock_text
        self.logs: dict[str, ToolLog] = {}  # one Tool log per request, in memory only
        self.busy: Busy | None = None
        self.final_message: str | None = None
        self.list_screen = ListScreen([])
        self.request: RequestScreen | None = None
        self.screen: Screen = self.list_screen
        self._before_leave: Screen = self.list_screen
        self.feed = LogFeed()
        self.tools = ToolFlow(self, self.feed)
        self.verdicts = VerdictFlow(self, environment, fallback_editor, windows=windows)
        self._notice = urwid.Text("")
        self._view = ScreenFrame(self.screen.widget, self._notice)
        self._notice_text: tuple[str, str] = (NOTICE, "")
        self._loop: urwid.MainLoop | None = None
        self._tasks: TaskGroup | None = None
        self._done: anyio.Event | None = None
        self.stopped_by_signal = False  # a stop signal ended it: the command exits 2
        self._running = False
        self._ticking = False
        self._error: BaseException | None = None

    # --- Shell ------------------------------------------------------------------------------

    @property
    def session(self) -> ReviewActions:
        return self._session

    def clock_text(self) -> str:
        return self._clock_text()

    def show(self, screen: Screen) -> None:
        self.screen = screen
        self._view.frame.body = screen.widget
        self._render_footer()

    def say(self, text: str, *, problem: bool = False) -> None:
        self._notice_text = (PROBLEM if problem else NOTICE, text)
        self._render_footer()

    def start_busy(
        self, label: str, work: BusyWork, cancellation: Cancellation | None = None
    ) -> None:
        self.busy = Busy(label, time.monotonic(), cancellation)

        async def busy_work() -> None:
            try:
                await work()
            finally:
                self.busy = None

        self._spawn(busy_work)
        if not self._ticking:
            self._tick()

    def reload_request(self, screen: RequestScreen) -> None:
        try:
            screen.update(self.session.view(screen.request_id))
        except (HumanReviewError, StateError) as exc:
            self.say(READ_FAILED.format(time=self.clock_text(), reason=_message(exc)), problem=True)

    @property
    def ending(self) -> bool:
        """The app decided to end; the event loop may still turn a few times before it stops."""
        return self._done is not None and self._done.is_set()

    def submitted(self, message: str, *, problem: bool = False) -> None:
        notes = [message, *self.session.warnings]
        self.session.warnings.clear()
        self.final_message = "\n".join(notes)
        self.request = None
        self._reload_list()
        if not self.list_screen.rows:
            self._exit()
            return
        self.show(self.list_screen)
        self.say(" ".join(notes), problem=problem)

    @contextmanager
    def paused(self) -> Iterator[None]:
        assert self._loop is not None
        with self._loop.paused():
            yield
        self._own_ctrl_c(self._loop.screen)  # the restarted terminal has its old settings

    # --- running ----------------------------------------------------------------------------

    async def run(self, screen: urwid.display.BaseScreen | None = None) -> str | None:
        """Run until the reviewer quits; what is worth printing afterwards (a submission)."""
        display = screen if screen is not None else urwid.display.raw.Screen()
        self._done = anyio.Event()
        guarded = urwid.GuardedEventLoop(
            urwid.AsyncioEventLoop(loop=asyncio.get_running_loop()), self._on_error
        )
        root = KeyRouter(self._view.frame, self._on_key)
        self._loop = urwid.MainLoop(
            root, PALETTE, screen=display, event_loop=guarded, handle_mouse=False
        )
        loop = self._loop
        self.feed.wake = lambda: loop.call_from_thread(self._drain)
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            tasks.start_soon(self._watch_signals)
            with self._loop.start():
                self._running = True
                self._own_ctrl_c(display)
                self._reload_list()
                if self.first_request is not None:
                    self._open(self.first_request)
                self._loop.set_alarm_in(REFRESH_SECONDS, self._refresh_tick)
                await self._done.wait()
                self._running = False
                tasks.cancel_scope.cancel()
        if self._error is not None:
            raise self._error
        return self.final_message

    @staticmethod
    def _own_ctrl_c(display: urwid.display.BaseScreen) -> None:
        """Ctrl-C reaches the app as a key (cancel, or quit) instead of killing it."""
        if isinstance(display, urwid.display.raw.Screen):
            display.tty_signal_keys(intr="undefined")

    def _on_error(self, exc: Exception) -> None:
        if not isinstance(exc, urwid.ExitMainLoop):
            self._error = exc
        self._exit()

    def _exit(self) -> None:
        if self._done is not None:
            self._done.set()

    async def _watch_signals(self) -> None:
        if sys.platform == "win32":
            return  # no add_signal_handler there
        with anyio.open_signal_receiver(*SIGNALS) as signals:
            async for _ in signals:
                self.stopped_by_signal = True
                self._exit()
                return

    def _spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` as a task; refused actions become notices, bugs end the app."""
        assert self._tasks is not None

        async def guarded() -> None:
            try:
                await work()
            except (HumanReviewError, StateError) as exc:
                self.say(_message(exc), problem=True)
            except Exception as exc:  # a bug: stop, and let run() raise it
                self._error = exc
                self._exit()
            self._redraw()

        self._tasks.start_soon(guarded)

    def _redraw(self) -> None:
        self._render_footer()
        if self._running and self._loop is not None:
            self._loop.draw_screen()

    def _render_footer(self) -> None:
        if self.busy is not None:
            self._notice.set_text((BUSY, self.busy.line(time.monotonic())))
            self._view.hints.set_text(self.busy.hints)
            return
        self._notice.set_text(self._notice_text)
        self._view.hints.set_text(self.screen.hints)

    def _tick(self, _loop: Any = None, _data: Any = None) -> None:
        self._ticking = self.busy is not None and self._loop is not None
        if self._ticking and self._loop is not None:
            self._render_footer()
            self._loop.set_alarm_in(TICK_SECONDS, self._tick)

    def _refresh_tick(self, _loop: Any = None, _data: Any = None) -> None:
        if self.busy is None and self.screen is self.list_screen:
            self._reload_list()
        if self._loop is not None:
            self._loop.set_alarm_in(REFRESH_SECONDS, self._refresh_tick)

    def _drain(self) -> None:
        changed = self.feed.drain()
        if self.request is not None and id(self.request.log) in changed:
            self.request.pane.refresh()

    # --- keys -------------------------------------------------------------------------------

    def _on_key(self, key: str) -> None:
        if self.ending:  # a key typed while the app winds down must not start anything
            return
        if self.busy is not None:
            self._busy_key(key)
            return
        self.say("")  # a notice stays until the next key
        if key == "ctrl c":  # quit; on Leave it keeps the claims and quits
            if isinstance(self.screen, LeaveScreen):
                self._exit()
            else:
                self._quit()
            return
        screen = self.screen
        act = screen.keypress(key)
        if act in (Act.IGNORED, Act.HANDLED):
            return
        request = self.request
        if isinstance(screen, ListScreen):
            self._list_act(screen, act)
        elif isinstance(screen, RequestScreen):
            self._request_act(screen, act)
        elif isinstance(screen, LeaveScreen):
            self._leave_act(act)
        elif isinstance(screen, EndRequestScreen):
            self._end_act(screen, act)
        elif request is None:
            return
        elif isinstance(screen, ConfirmScreen):
            self.tools.confirm_act(request, screen, act)
        elif isinstance(screen, VerdictScreen):
            self.verdicts.verdict_act(request, act)
        elif isinstance(screen, FormScreen):
            self.verdicts.form_act(request, screen, act)

    def _busy_key(self, key: str) -> None:
        busy = self.busy
        assert busy is not None
        if key in ("esc", "ctrl c"):
            busy.cancel()
        elif key in ("page up", "page down") and isinstance(self.screen, RequestScreen):
            self.screen.keypress(key)
        else:
            busy.refuse()
        self._render_footer()

    def _list_act(self, screen: ListScreen, act: Act) -> None:
        if act is Act.OPEN and screen.selected is not None:
            self._open(screen.selected.request_id)
        elif act is Act.REFRESH:
            self._reload_list()
        elif act is Act.QUIT:
            self._quit()

    def _request_act(self, screen: RequestScreen, act: Act) -> None:
        if act is Act.RUN_TOOL:
            self.tools.run_selected(screen)
        elif act is Act.SUBMIT:
            self.verdicts.choose(screen)
        elif act is Act.RELEASE:
            self._release(screen)
        elif act is Act.END_REQUEST:
            reason = screen.commands_problem
            self.show(EndRequestScreen(screen.widget, screen.request_id, reason))
        elif act is Act.REFRESH:
            self.reload_request(screen)
            self._spawn(lambda: self._load_commands(screen))
        elif act is Act.BACK:
            self.request = None
            self._reload_list()
            self.show(self.list_screen)
        elif act is Act.QUIT:
            self._quit()

    def _leave_act(self, act: Act) -> None:
        if act is Act.KEEP:
            self._exit()
        elif act is Act.RELEASE_ALL:
            self.start_busy(RELEASING, self._release_all)
        elif act is Act.CANCEL:
            self.show(self._before_leave)

    def _end_act(self, screen: EndRequestScreen, act: Act) -> None:
        request = self.request
        if request is None:
            return
        if act is Act.CANCEL:
            self.show(request)
            return
        if act is not Act.CONFIRM:
            return

        async def cancel() -> None:
            await self.session.cancel(screen.request_id, screen.reason)
            self.request = None
            self._reload_list()
            self.show(self.list_screen)
            self.say(CANCELLED.format(request=screen.request_id))

        self.show(request)
        self.start_busy(CANCELLING, cancel)

    # --- list, request, release, leave ------------------------------------------------------

    def _reload_list(self) -> None:
        try:
            self.list_screen.update(self.session.waiting())
        except (HumanReviewError, StateError) as exc:
            reason = _message(exc)
            self.list_screen.failed(READ_FAILED.format(time=self.clock_text(), reason=reason))

    def _open(self, request_id: str) -> None:
        """Show a request (opening claims nothing) and resolve its command lines."""
        try:
            view = self.session.view(request_id)
        except (HumanReviewError, StateError) as exc:
            self.say(_message(exc), problem=True)
            return
        log = self.logs.setdefault(str(view["id"]), ToolLog())
        screen = RequestScreen(view, self.session.reviewer, log)
        self.request = screen
        self.show(screen)
        self._spawn(lambda: self._load_commands(screen))

    async def _load_commands(self, screen: RequestScreen) -> None:
        try:
            screen.set_commands(await self.session.commands(screen.request_id))
        except HumanReviewError as exc:
            screen.commands_failed(exc.message)

    def _release(self, screen: RequestScreen) -> None:
        claimant = (screen.view.get("claim") or {}).get("reviewer")
        if claimant is None:
            self.say(NOT_CLAIMED, problem=True)
            return
        if claimant != self.session.reviewer:
            self.say(screen.read_only or NOT_CLAIMED, problem=True)
            return

        async def release() -> None:
            claim = await self.session.release(screen.request_id)
            self.reload_request(screen)
            self.say(RELEASED.format(request=claim.request_id))

        self.start_busy(RELEASING, release)

    def _quit(self) -> None:
        held = self.session.held()
        if not held:
            self._exit()
            return
        self._before_leave = self.screen
        self.show(LeaveScreen(self.screen.widget, held))

    async def _release_all(self) -> None:
        failures = await self.session.release_all()
        if not failures:
            self._exit()
            return
        self.show(LeaveScreen(self._before_leave.widget, self.session.held(), failures))
