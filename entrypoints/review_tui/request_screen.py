"""The Request screen: one request's instruction, owner schemas, tools and Tool log.

Opening a request claims nothing. ``j``/``k`` select a tool, ``Enter``/``t`` run it, ``s``
submits a verdict, ``u`` releases your claim, ``x`` cancels the request (offered
by name when it cannot reconnect: its declarations changed or its repository is gone),
``PgUp``/``PgDn`` scroll the output,
``r`` refreshes, ``Esc``/``Backspace`` go back to the list, ``q`` quits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import urwid
from urwid.widget import AbstractFlowWidget

from artifactize.entrypoints.review_tui.acts import Act
from artifactize.entrypoints.review_tui.layout import ScreenBase, flow_walker, titled_frame
from artifactize.entrypoints.review_tui.log_pane import SCROLL_ROWS, LogPane
from artifactize.entrypoints.review_tui.moves import DOWN_KEYS, UP_KEYS, stepped
from artifactize.entrypoints.review_tui.palette import HEADING, MUTED, PROBLEM, SELECTED
from artifactize.entrypoints.review_tui.tool_list import ToolInfo, recorded_tools, resolved_line
from artifactize.entrypoints.review_tui.tool_log import ToolLog
from artifactize.entrypoints.review_tui.waiting import claim_text, read_only_reason

HINTS = (
    "j/k tool · Enter/t run · s submit · u release · x cancel request · PgUp/PgDn scroll"
    " · r refresh · Esc back · q quit"
)
CANNOT_RECONNECT = "This request cannot reconnect: {reason}"
OFFER_CANCEL = "Press x to cancel it (artifactize request cancel {id}); the next verify asks again."
LOG_TITLE = "Tool log"
OUTPUT_TITLE = "Output · {tool}"
TOOL_ERROR_TITLE = "{tool} · tool error"
FAILED_TITLE = "{tool} · failed"
NO_SCHEMA = "none: only the verdict"
NO_TOOLS = "This eval declares no Human tools."
NOT_RESOLVED = "cannot resolve: {reason}"
RUN_KEYS = ("enter", "t")
BACK_KEYS = ("esc", "backspace")
DETAIL_WEIGHT = 3
LOG_WEIGHT = 2


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


class RequestScreen(ScreenBase):
    HINTS = HINTS

    def __init__(self, view: Mapping[str, Any], reviewer: str, log: ToolLog) -> None:
        self.view = view
        self.reviewer = reviewer
        self.tools: list[ToolInfo] = recorded_tools(view)
        self.commands: dict[str, dict[str, Any]] = {}
        self.commands_problem: str | None = None
        self.selected = 0
        self.log = log
        self.pane = LogPane(log)
        self._pane_box = urwid.LineBox(self.pane, title=LOG_TITLE)
        self._pane_style = urwid.AttrMap(self._pane_box, None)
        self._walker = flow_walker()
        self._title = urwid.Text("")
        body = urwid.Pile(
            [
                ("weight", DETAIL_WEIGHT, urwid.ListBox(self._walker)),
                ("weight", LOG_WEIGHT, self._pane_style),
            ]
        )
        self._widget = titled_frame(body, self._title)
        self._build()

    @property
    def request_id(self) -> str:
        return str(self.view["id"])

    @property
    def selected_tool(self) -> ToolInfo | None:
        return self.tools[self.selected] if self.tools else None

    @property
    def read_only(self) -> str | None:
        return read_only_reason(self.view, self.reviewer)

    # --- updates ------------------------------------------------------------------------

    def update(self, view: Mapping[str, Any]) -> None:
        self.view = view
        self._build()

    def set_commands(self, commands: dict[str, dict[str, Any]]) -> None:
        self.commands = commands
        self.commands_problem = None
        self._build()

    def commands_failed(self, problem: str) -> None:
        self.commands_problem = problem
        self._build()

    def output_title(self, tool: str, *, tool_error: bool = False, failed: bool = False) -> None:
        """``Output · tool``; ``tool · tool error`` or ``tool · failed`` in red."""
        if failed:
            title, style = FAILED_TITLE.format(tool=tool), PROBLEM
        elif tool_error:
            title, style = TOOL_ERROR_TITLE.format(tool=tool), PROBLEM
        else:
            title, style = OUTPUT_TITLE.format(tool=tool), None
        self._pane_box.set_title(title)
        self._pane_style.set_attr_map({None: style})

    # --- keys ---------------------------------------------------------------------------

    def keypress(self, key: str) -> Act:
        if key in DOWN_KEYS or key in UP_KEYS:
            if self.tools:
                self.selected = stepped(self.selected, len(self.tools), key)
                self._build()
            return Act.HANDLED
        if key == "page up":
            self.pane.scroll(SCROLL_ROWS)
            return Act.HANDLED
        if key == "page down":
            self.pane.scroll(-SCROLL_ROWS)
            return Act.HANDLED
        acts = {
            "s": Act.SUBMIT,
            "u": Act.RELEASE,
            "x": Act.END_REQUEST,
            "r": Act.REFRESH,
            "q": Act.QUIT,
        }
        if key in RUN_KEYS:
            return Act.RUN_TOOL
        if key in BACK_KEYS:
            return Act.BACK
        return acts.get(key, Act.IGNORED)

    # --- drawing ------------------------------------------------------------------------

    def _build(self) -> None:
        view = self.view
        self._title.set_text(f" {view.get('evalId')} · {view.get('title') or ''} ")
        claim = claim_text(view, self.reviewer)
        lines: list[AbstractFlowWidget] = [
            urwid.Text(
                f"Request {view.get('id')} · Run {view.get('runId')} · {view.get('status')}"
            ),
            urwid.Text(f"Repository {self._repo()}"),
            urwid.Text(f"Claim {claim if claim != '-' else 'none'}"),
        ]
        if self.read_only:
            lines.append(urwid.Text((PROBLEM, self.read_only)))
        payload = view.get("payload") or {}
        definition = (view.get("humanDefinition") or {}).get("eval") or {}
        lines += [
            urwid.Divider(),
            urwid.Text((HEADING, "Instruction")),
            urwid.Padding(urwid.Text(str(payload.get("instruction", ""))), left=2),
            urwid.Divider(),
            urwid.Text((HEADING, "GREEN fields (pass_schema)")),
            urwid.Padding(urwid.Text(self._schema(definition.get("passSchema"))), left=2),
            urwid.Text((HEADING, "RED fields (fail_schema)")),
            urwid.Padding(urwid.Text(self._schema(definition.get("failSchema"))), left=2),
            urwid.Divider(),
            urwid.Text((HEADING, "Tools")),
        ]
        if self.commands_problem:
            problem = CANNOT_RECONNECT.format(reason=self.commands_problem)
            lines.append(urwid.Text((PROBLEM, problem)))
            lines.append(urwid.Text(OFFER_CANCEL.format(id=self.request_id)))
        if not self.tools:
            lines.append(urwid.Text((MUTED, NO_TOOLS)))
        first_tool = len(lines)
        for index, tool in enumerate(self.tools):
            lines.append(self._tool_row(tool, index == self.selected))
        self._walker[:] = lines
        if self.tools:
            self._walker.set_focus(first_tool + self.selected)

    def _repo(self) -> str:
        definition = self.view.get("humanDefinition") or {}
        return str(definition.get("repo", "?"))

    @staticmethod
    def _schema(schema: Any) -> str:
        return NO_SCHEMA if schema is None else _compact(schema)

    def _tool_row(self, tool: ToolInfo, selected: bool) -> AbstractFlowWidget:
        marker = "▸ " if selected else "  "
        head = f"{marker}{tool.name}  [{tool.kind}]  {tool.description}"
        command = self.commands.get(tool.name)
        if tool.builtin:
            line: Any = (MUTED, f"built-in: {tool.declared}")
        elif command is not None and "error" in command:
            line = (PROBLEM, NOT_RESOLVED.format(reason=command["error"]))
        elif command is not None:
            line = f"$ {resolved_line(command)}"
        else:
            line = (MUTED, f"declared: {tool.declared}")
        row = urwid.Pile([urwid.Text(head), urwid.Padding(urwid.Text(line), left=6)])
        return urwid.AttrMap(row, SELECTED if selected else None)
