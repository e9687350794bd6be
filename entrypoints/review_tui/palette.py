"""Display attributes of the terminal reviewer, named once (``(name, foreground, background)``)."""

from __future__ import annotations

from artifactize.entrypoints.review_tui.tool_log import RowKind

TITLE = "title"
HEADING = "heading"
SELECTED = "selected"
NOTICE = "notice"
PROBLEM = "problem"
HINTS = "hints"
BUSY = "busy"
FIELD_FOCUS = "field-focus"
MUTED = "muted"
LOG_HEADER = "log-header"
LOG_STDERR = "log-stderr"
LOG_END = "log-end"
LOG_END_ERROR = "log-end-error"
LOG_NOTE = "log-note"

PALETTE: list[tuple[str, str, str]] = [
    (TITLE, "white,bold", "dark blue"),
    (HEADING, "bold", "default"),
    (SELECTED, "black", "light gray"),
    (NOTICE, "light cyan", "default"),
    (PROBLEM, "light red", "default"),
    (HINTS, "dark gray", "default"),
    (BUSY, "yellow", "default"),
    (FIELD_FOCUS, "black", "light gray"),
    (MUTED, "dark gray", "default"),
    (LOG_HEADER, "light blue,bold", "default"),
    (LOG_STDERR, "light red", "default"),
    (LOG_END, "dark green", "default"),
    (LOG_END_ERROR, "light red", "default"),
    (LOG_NOTE, "yellow", "default"),
]

LOG_STYLES: dict[RowKind, str | None] = {
    RowKind.HEADER: LOG_HEADER,
    RowKind.STDOUT: None,
    RowKind.STDERR: LOG_STDERR,
    RowKind.NOTE: LOG_NOTE,
    RowKind.END: LOG_END,
    RowKind.END_ERROR: LOG_END_ERROR,
}
