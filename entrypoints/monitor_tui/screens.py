"""The monitor's two screens: the Run list and one Run (header, tree, detail).

Screens hold their own state (the rows shown, the selection, the scroll) and turn keys
into ``MonitorAct``s; reading the state, refreshing and handing over to ``review`` are the
app's. Keys follow the terminal reviewer's: ``j``/``k``/arrows move, ``Enter`` opens,
``r`` refreshes, ``Esc``/``Backspace`` go back, ``q`` quits.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import urwid
from urwid.widget import AbstractFlowWidget

from artifactize.entrypoints.monitor_tui.source import RunDocument
from artifactize.entrypoints.monitor_tui.views import (
    NO_RUNS,
    NodeKind,
    RunRow,
    TreeNode,
    artifact_detail,
    build_tree,
    eval_detail,
    run_header,
    run_table,
    visible,
)
from artifactize.entrypoints.review_tui.layout import (
    RowListScreen,
    ScreenBase,
    flow_walker,
    titled_frame,
)
from artifactize.entrypoints.review_tui.moves import DOWN_KEYS, UP_KEYS
from artifactize.entrypoints.review_tui.palette import HEADING, MUTED, PROBLEM, SELECTED
from artifactize.kernel.document_codec import request_json
from artifactize.ports.documents import Request
from artifactize.ports.statuses import RequestStatus

LIST_TITLE = " artifactize monitor · Runs "
RUN_TITLE = " artifactize monitor · {run} "
LIST_HINTS = "j/k ↑/↓ move · Enter open · r refresh · q quit"
RUN_HINTS = (
    "j/k ↑/↓ move · l/→/Enter expand · h/← collapse · PgUp/PgDn detail · o review · "
    "r refresh · Esc back · q quit"
)
EXPAND_KEYS = ("l", "right", "enter")
COLLAPSE_KEYS = ("h", "left")
BACK_KEYS = ("esc", "backspace")
QUIT_KEYS = ("q",)
SELECTED_MARK = "▶ "
UNSELECTED_MARK = "  "
DETAIL_SCROLL_ROWS = 10
TREE_WEIGHT = 2
DETAIL_WEIGHT = 3
NOT_WAITING = "o hands a WAITING_HUMAN eval to review; this one is {status}."
GONE = "This Run is no longer in the state."


class MonitorAct(enum.Enum):
    IGNORED = "ignored"
    HANDLED = "handled"
    QUIT = "quit"
    BACK = "back"
    OPEN = "open"
    MORE = "more"  # moved past the last Run: page in older ones
    REFRESH = "refresh"
    REVIEW = "review"  # hand the selected waiting Human request to `artifactize review`


def _marked(line: str, selected: bool) -> AbstractFlowWidget:
    """A row with a selection mark, so the selection reads without colour too."""
    text = urwid.Text((SELECTED_MARK if selected else UNSELECTED_MARK) + line, wrap="clip")
    row: AbstractFlowWidget = urwid.AttrMap(text, SELECTED if selected else None)
    return row


class RunListScreen(RowListScreen[RunRow, MonitorAct]):
    HINTS = LIST_HINTS
    PAST_END = MonitorAct.MORE.name  # page in older Runs

    def __init__(self) -> None:
        super().__init__([], LIST_TITLE, MonitorAct)
        self.now: datetime | None = None
        self._build()

    def update(self, rows: list[RunRow], now: datetime) -> None:
        """New rows; the selection stays on the same Run while it is listed."""
        self._replace(rows, lambda row: row.run_id)
        self.now = now
        self._build()

    def show_problem(self, problem: str | None) -> None:
        self._problem.set_text((PROBLEM, problem) if problem else "")

    def _build(self) -> None:
        if not self.rows or self.now is None:
            self._walker[:] = [urwid.Text((MUTED, NO_RUNS))]
            return
        header, *lines = run_table(self.rows, self.now)
        items: list[AbstractFlowWidget] = [urwid.Text((HEADING, UNSELECTED_MARK + header))]
        items.extend(_marked(line, index == self.focus) for index, line in enumerate(lines))
        self._walker[:] = items
        self._walker.set_focus(self.focus + 1)


class TreeRows(urwid.ListWalker):  # type: ignore[type-arg]  # urwid's generics are loose
    """The tree's rows, each row's widget built only when the list box shows it: a Run of
    10,000 Artifacts has at least as many rows, and a widget for each on every key and
    refresh cost more than the key itself."""

    EMPTY = "No saved definitions."

    def __init__(self) -> None:
        self._rows: Sequence[TreeNode] = ()
        self._selected = 0
        self.focus = 0

    def show(self, rows: Sequence[TreeNode], selected: int) -> None:
        self._rows, self._selected = rows, selected
        self.focus = selected if rows else 0
        self._modified()

    def __len__(self) -> int:
        return max(1, len(self._rows))

    def __getitem__(self, position: int) -> AbstractFlowWidget:
        if not self._rows and position == 0:
            empty: AbstractFlowWidget = urwid.Text((MUTED, self.EMPTY))
            return empty
        if not 0 <= position < len(self._rows):
            raise IndexError(position)
        return _marked(self._rows[position].text(), position == self._selected)

    def next_position(self, position: int) -> int:
        if position + 1 >= len(self):
            raise IndexError(position)
        return position + 1

    def prev_position(self, position: int) -> int:
        if position <= 0:
            raise IndexError(position)
        return position - 1

    def set_focus(self, position: int) -> None:
        self.focus = position
        self._modified()

    def positions(self, reverse: bool = False) -> Iterable[int]:
        order = range(len(self))
        return reversed(order) if reverse else order


class RunScreen(ScreenBase):
    """One Run: the header, the Artifact/eval tree (left) and the selected node's detail."""

    HINTS = RUN_HINTS

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.document: RunDocument | None = None  # what is shown, as the source read it
        self.run: Mapping[str, Any] = {}
        self.requests: list[Request] = []
        self.claims: dict[str, str | None] = {}
        self._by_id: dict[str, Request] = {}
        self.forest: list[TreeNode] = []
        self.focus = 0
        self.detail_top = 0
        self._header = urwid.Text("")
        self._problem = urwid.Text("")
        self._tree = TreeRows()
        self._detail = flow_walker()
        columns = urwid.Columns(
            [
                (
                    "weight",
                    TREE_WEIGHT,
                    urwid.LineBox(urwid.ListBox(self._tree), title="Artifacts"),
                ),
                (
                    "weight",
                    DETAIL_WEIGHT,
                    urwid.LineBox(urwid.ListBox(self._detail), title="Detail"),
                ),
            ]
        )
        self._widget = titled_frame(
            columns, RUN_TITLE.format(run=run_id), self._header, self._problem
        )

    @property
    def rows(self) -> list[TreeNode]:
        return visible(self.forest)

    @property
    def selected(self) -> TreeNode | None:
        rows = self.rows
        return rows[self.focus] if rows else None

    def selected_request(self) -> Mapping[str, Any] | None:
        node = self.selected
        if node is None or node.kind != NodeKind.EVAL:
            return None
        found = self._by_id.get(node.key)
        return None if found is None else request_json(found)  # only the one shown

    def update(self, document: RunDocument, now: datetime) -> None:
        """New data; what was expanded stays expanded and the selection stays put. The very
        document shown already (nothing changed) moves only the header's clock: the tree of
        a 10,000-Artifact Run is not built again for it."""
        run, requests = document.run, document.requests
        if document is self.document:
            self._header.set_text("\n".join(run_header(run, requests, now)))
            return
        expanded = {_path(node) for node in _all(self.forest) if node.expanded}
        chosen = self.selected
        self.document = document
        self.run, self.requests, self.claims = run, list(requests), dict(document.claims)
        self._by_id = {}
        for request in requests:  # the first of an ID, as a scan from the start finds it
            self._by_id.setdefault(str(request.id), request)
        self.forest = build_tree(run, requests)
        for node in _all(self.forest):
            node.expanded = node.expandable and _path(node) in expanded
        if not expanded and self.forest:
            self.forest[0].expanded = self.forest[0].expandable  # open the first family
        rows = self.rows
        if chosen is not None:
            keys = [(node.kind, node.key, node.depth) for node in rows]
            wanted = (chosen.kind, chosen.key, chosen.depth)
            if wanted in keys:
                self.focus = keys.index(wanted)
        self.focus = min(self.focus, max(0, len(rows) - 1))
        self._header.set_text("\n".join(run_header(run, requests, now)))
        self._build()

    def show_problem(self, problem: str | None) -> None:
        self._problem.set_text((PROBLEM, problem) if problem else "")

    def keypress(self, key: str) -> MonitorAct:
        rows = self.rows
        node = self.selected
        if key in DOWN_KEYS or key in UP_KEYS:
            step = 1 if key in DOWN_KEYS else -1
            self.focus = min(max(0, len(rows) - 1), max(0, self.focus + step))
            self.detail_top = 0
        elif key in EXPAND_KEYS:
            if node is None or not node.expandable:
                return MonitorAct.HANDLED
            node.expanded = True
        elif key in COLLAPSE_KEYS:
            if node is not None and node.expanded:
                node.expanded = False
            elif node is not None:
                self.focus = _parent_index(rows, self.focus)
        elif key == "page down":
            self.detail_top = min(
                max(0, len(self._detail) - 1), self.detail_top + DETAIL_SCROLL_ROWS
            )
        elif key == "page up":
            self.detail_top = max(0, self.detail_top - DETAIL_SCROLL_ROWS)
        elif key == "o":
            return MonitorAct.REVIEW
        elif key == "r":
            return MonitorAct.REFRESH
        elif key in BACK_KEYS:
            return MonitorAct.BACK
        elif key in QUIT_KEYS:
            return MonitorAct.QUIT
        else:
            return MonitorAct.IGNORED
        self._build()
        return MonitorAct.HANDLED

    def waiting_request(self) -> tuple[str | None, str | None]:
        """(request ID, None) for a selected WAITING_HUMAN eval, else (None, why not)."""
        request = self.selected_request()
        if request is None:
            return None, NOT_WAITING.format(status="not an eval")
        if request.get("status") != RequestStatus.WAITING_HUMAN:
            return None, NOT_WAITING.format(status=request.get("status"))
        return str(request.get("id")), None

    def detail_lines(self) -> list[str]:
        node = self.selected
        if node is None:
            return [GONE] if not self.run else []
        if node.kind == NodeKind.EVAL:
            request = self.selected_request()
            if request is None:
                return [node.label.strip(), "Not requested in this Run."]
            return eval_detail(request, self.claims.get(str(request.get("id"))))
        return artifact_detail(self.run, node.key)

    def _build(self) -> None:
        self._tree.show(self.rows, self.focus)
        lines = self.detail_lines()
        self.detail_top = min(self.detail_top, max(0, len(lines) - 1))
        self._detail[:] = [urwid.Text(line) for line in lines[self.detail_top :]] or [
            urwid.Text("")
        ]
        self._detail.set_focus(0)


def _all(forest: Sequence[TreeNode]) -> list[TreeNode]:
    found: list[TreeNode] = []
    for node in forest:
        found.append(node)
        found.extend(_all(node.children))
    return found


def _path(node: TreeNode) -> tuple[str, int, str]:
    return (node.kind, node.depth, node.key)


def _parent_index(rows: Sequence[TreeNode], index: int) -> int:
    """The row of the nearest node above ``index`` one level up (itself at the top)."""
    depth = rows[index].depth
    for above in range(index - 1, -1, -1):
        if rows[above].depth < depth:
            return above
    return index
