"""Running the selected tool: resolve, Confirm a new command line, run, log, say how it went.

The command line is resolved again just before the run (``tool_commands``); a resolved
line not yet confirmed in this session is shown in a Confirm first, and once confirmed it
runs without asking again. The run itself claims the request on the first action. Every
run is one entry of the request's Tool log, ending with the program's exit or the call's
outcome; a refused action (not the claimant, changed declarations, a recheck) ends
``error: …`` and runs nothing. A tool error is never a verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.domain.reviews.human.errors import HumanReviewError
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.tools.human.results import HumanToolResult
from artifactize.entrypoints.review_tui.acts import Act
from artifactize.entrypoints.review_tui.dialogs import ConfirmScreen
from artifactize.entrypoints.review_tui.log_feed import LogFeed
from artifactize.entrypoints.review_tui.request_screen import RequestScreen
from artifactize.entrypoints.review_tui.shell import Shell
from artifactize.entrypoints.review_tui.tool_list import ToolInfo, command_key, is_resolved
from artifactize.entrypoints.review_tui.tool_log import LogRun, error_end, result_end
from artifactize.ports.state import StateError

RUNNING = "Running {tool}…"
RESOLVING = "Resolving {tool}…"
NO_TOOLS = "This request has no Human tools."
LAUNCHED = "{tool} launched."
FINISHED = "{tool} finished."
TOOL_FAILED = "{tool} failed; a tool error is not a verdict."
DID_NOT_RUN = "{tool} did not run."


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


class ToolFlow:
    def __init__(self, shell: Shell, feed: LogFeed) -> None:
        self.shell = shell
        self.feed = feed
        self.confirmed: set[str] = set()  # command lines confirmed in this session

    def run_selected(self, screen: RequestScreen) -> None:
        tool = screen.selected_tool
        if tool is None:
            self.shell.say(NO_TOOLS, problem=True)
            return
        reason = screen.read_only
        if reason:
            self.shell.say(reason, problem=True)
            return
        token = Cancellation()
        label = RESOLVING.format(tool=tool.name)
        self.shell.start_busy(label, lambda: self._prepare(screen, tool, token), token)

    def confirm_act(self, screen: RequestScreen, confirm: ConfirmScreen, act: Act) -> None:
        self.shell.show(screen)
        tool = next((t for t in screen.tools if t.name == confirm.tool), None)
        if act is not Act.CONFIRM or tool is None:
            self.shell.say(DID_NOT_RUN.format(tool=confirm.tool))
            return
        self.confirmed.add(command_key(confirm.command))
        token = Cancellation()
        label = RUNNING.format(tool=tool.name)
        self.shell.start_busy(label, lambda: self._run(screen, tool, token), token)

    async def _prepare(self, screen: RequestScreen, tool: ToolInfo, token: Cancellation) -> None:
        if not tool.builtin:
            try:
                commands = await self.shell.session.commands(screen.request_id)
            except HumanReviewError as exc:
                screen.commands_failed(exc.message)
                run = screen.log.start(self.shell.clock_text(), tool.operation, tool.artifact)
                self._refused(screen, tool, run, exc.message)
                return
            screen.set_commands(commands)
            command = commands.get(tool.name)
            if command is not None and self._needs_confirm(command):
                self.shell.show(ConfirmScreen(screen.widget, tool.name, command))
                return
        busy = self.shell.busy
        if busy is not None:
            busy.label = RUNNING.format(tool=tool.name)
        await self._run(screen, tool, token)

    def _needs_confirm(self, command: Mapping[str, Any]) -> bool:
        """A resolved command line not run yet in this session is shown first."""
        return is_resolved(command) and command_key(command) not in self.confirmed

    async def _run(self, screen: RequestScreen, tool: ToolInfo, token: Cancellation) -> None:
        log = screen.log
        run = log.start(self.shell.clock_text(), tool.operation, tool.artifact)
        screen.pane.refresh()
        try:
            result = await self.shell.session.run_tool(
                screen.request_id, tool.name, token, self.feed.sink(log, run)
            )
        except (HumanReviewError, StateError) as exc:
            self.feed.drain()
            self._refused(
                screen, tool, run, exc.message if isinstance(exc, HumanReviewError) else str(exc)
            )
            return
        self.feed.drain()
        log.finish(run, *result_end(result))
        screen.pane.refresh()
        self.shell.reload_request(screen)  # the claim taken on the first action shows now
        self._notice(screen, tool, result)

    def _refused(self, screen: RequestScreen, tool: ToolInfo, run: LogRun, message: str) -> None:
        screen.log.finish(run, *error_end(message))
        screen.pane.refresh()
        screen.output_title(tool.name, failed=True)
        self.shell.reload_request(screen)  # a recheck may have settled it ERROR
        notice = f"{DID_NOT_RUN.format(tool=tool.name)} {_first_line(message)}"
        self.shell.say(notice, problem=True)

    def _notice(self, screen: RequestScreen, tool: ToolInfo, result: HumanToolResult) -> None:
        screen.output_title(tool.name, tool_error=result.is_error)
        if result.is_launch:
            self.shell.say(LAUNCHED.format(tool=tool.name))
        elif result.is_error:
            self.shell.say(TOOL_FAILED.format(tool=tool.name), problem=True)
        else:
            self.shell.say(FINISHED.format(tool=tool.name))
