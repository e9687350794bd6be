"""The Form screen: fill in the owner fields of a flat schema, ``Enter`` submits.

Required fields are marked ``*``; the focused field shows its type, constraints and
description. Errors (a number that does not parse, or the validator's answer to a submit)
stay on the form with the values entered, and the request keeps waiting.
"""

from __future__ import annotations

import urwid
from urwid.widget import AbstractFlowWidget

from artifactize.entrypoints.review_tui.acts import Act
from artifactize.entrypoints.review_tui.form_keys import apply_key
from artifactize.entrypoints.review_tui.form_model import TEXT_KINDS, VerdictForm
from artifactize.entrypoints.review_tui.layout import ScreenBase, flow_walker, titled_frame
from artifactize.entrypoints.review_tui.palette import FIELD_FOCUS, HEADING, MUTED, PROBLEM

HINTS = (
    "Tab/↓ next · Shift-Tab/↑ previous · Space/←/→ change · t/f true/false · "
    "Enter submit · Ctrl-E edit as JSON · Esc back"
)
NO_FIELDS = "This verdict has no fields to fill in: Enter submits it."
CURSOR = "▏"
REQUIRED_MARK = "*"


class FormScreen(ScreenBase):
    HINTS = HINTS

    def __init__(self, form: VerdictForm, eval_id: str, request_id: str) -> None:
        self.form = form
        self.eval_id = eval_id
        self.request_id = request_id
        self._walker = flow_walker()
        title = f" {form.verdict} verdict for {eval_id} ({request_id}) "
        self._widget = titled_frame(urwid.ListBox(self._walker), title)
        self._build()

    def show_error(self, message: str | None) -> None:
        self.form.error = message
        self._build()

    def keypress(self, key: str) -> Act:
        if key == "enter":
            return Act.SEND
        if key == "esc":
            return Act.CANCEL
        if key == "ctrl e":
            return Act.EDITOR
        if apply_key(self.form, key):
            self._build()
            return Act.HANDLED
        return Act.IGNORED

    def _build(self) -> None:
        form = self.form
        items: list[AbstractFlowWidget] = []
        if not form.fields:
            items.append(urwid.Text((MUTED, NO_FIELDS)))
        width = max((len(item.name) for item in form.fields), default=0) + 2
        for index, item in enumerate(form.fields):
            focused = index == form.focus
            mark = REQUIRED_MARK if item.required else " "
            value = item.shown()
            if focused and item.kind in TEXT_KINDS:
                value += CURSOR
            label = f"{mark} {item.name}".ljust(width + 1)
            row = urwid.Text([(HEADING, label), " ", value])
            focus_map = {None: FIELD_FOCUS, HEADING: FIELD_FOCUS}  # the whole row, label too
            items.append(urwid.AttrMap(row, focus_map if focused else None))
            if focused:
                items.append(urwid.Padding(urwid.Text((MUTED, item.hint)), left=width + 2))
        if form.error:
            items += [urwid.Divider(), urwid.Text((PROBLEM, form.error))]
        self._walker[:] = items
        if form.fields:
            self._walker.set_focus(form.focus)  # rows before the focused field: one each
