"""Screens of the reviewer rendered headless (urwid.testing): what they show, what keys ask."""

from __future__ import annotations

from typing import Any

import urwid
import urwid.testing

from artifactize.entrypoints.review_tui.acts import Act
from artifactize.entrypoints.review_tui.dialogs import ConfirmScreen, LeaveScreen, VerdictScreen
from artifactize.entrypoints.review_tui.form_model import VerdictForm, flat_form
from artifactize.entrypoints.review_tui.form_screen import FormScreen
from artifactize.entrypoints.review_tui.list_screen import ListScreen
from artifactize.entrypoints.review_tui.log_pane import EMPTY_HINT, LogPane
from artifactize.entrypoints.review_tui.palette import FIELD_FOCUS, SELECTED
from artifactize.entrypoints.review_tui.request_screen import RequestScreen
from artifactize.entrypoints.review_tui.tool_log import ToolLog
from artifactize.entrypoints.review_tui.waiting import NO_WAITING, WaitingRow

SIZE = (100, 30)


def screen_text(widget: urwid.Widget, size: tuple[int, int] = SIZE) -> str:
    return "\n".join(urwid.testing.render_text(widget, size, focus=True, strip=True))


def view(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "run-a-1",
        "runId": "run-a",
        "evalId": "doc/signoff",
        "title": "Signed off",
        "status": "WAITING_HUMAN",
        "payload": {"instruction": "Read the notes, then sign off."},
        "claim": None,
        "humanDefinition": {
            "repo": "/repo",
            "eval": {
                "passSchema": {"type": "object", "properties": {"approved": {"const": True}}},
                "failSchema": None,
            },
            "artifacts": {
                "doc": {
                    "declaration": {
                        "humanTools": [
                            {
                                "name": "show",
                                "description": "Show the notes.",
                                "kind": "output",
                                "command": "cat",
                                "args": ["{artifactPath}/notes.txt"],
                            },
                            {
                                "name": "open",
                                "description": "",
                                "kind": "launch",
                                "builtin": "open",
                                "args": ["notes.txt"],
                            },
                        ]
                    }
                }
            },
        },
    }
    return {**base, **changes}


# --- List -------------------------------------------------------------------------------------


def rows() -> list[WaitingRow]:
    return [
        WaitingRow("run-a-1", "doc/signoff", "-", "5s", "/repo"),
        WaitingRow("run-a-2", "app/ux", "bob", "2m", "/repo"),
    ]


def selected_lines(widget: urwid.Widget) -> list[str]:
    runs = urwid.testing.render_runs(widget, SIZE, focus=True)
    return [
        "".join(t for _, t in row).strip() for row in runs if any(a == SELECTED for a, _ in row)
    ]


def test_the_list_shows_columns_and_moves_the_selection() -> None:
    screen = ListScreen(rows())
    text = screen_text(screen.widget)
    assert "EVAL         REQUEST  CLAIM  WAITING  REPO" in text
    assert "doc/signoff  run-a-1  -      5s       /repo" in text
    assert selected_lines(screen.widget)[0].startswith("doc/signoff")
    assert screen.keypress("j") is Act.HANDLED
    assert selected_lines(screen.widget)[0].startswith("app/ux")
    assert screen.keypress("down") is Act.HANDLED and screen.selected == rows()[1]  # stays
    assert screen.keypress("k") is Act.HANDLED and screen.focus == 0
    assert screen.keypress("enter") is Act.OPEN
    assert screen.keypress("r") is Act.REFRESH
    assert screen.keypress("q") is Act.QUIT and screen.keypress("esc") is Act.QUIT
    assert screen.keypress("x") is Act.IGNORED


def test_the_list_keeps_its_selection_on_refresh_and_shows_failures() -> None:
    screen = ListScreen(rows())
    screen.keypress("j")
    screen.update([WaitingRow("run-b-1", "new/one", "-", "1s", "/repo"), *rows()])
    assert screen.selected is not None and screen.selected.request_id == "run-a-2"
    screen.failed("read failed at 10:00:00: locked")
    assert "read failed at 10:00:00: locked" in screen_text(screen.widget)
    screen.update([])
    assert NO_WAITING in screen_text(screen.widget)
    assert screen.keypress("enter") is Act.HANDLED  # nothing to open


# --- Request -----------------------------------------------------------------------------------


def test_the_request_screen_shows_instruction_schemas_and_tools() -> None:
    screen = RequestScreen(view(), "alice", ToolLog())
    text = screen_text(screen.widget)
    for part in (
        "Request run-a-1 · Run run-a · WAITING_HUMAN",
        "Repository /repo",
        "Claim none",
        "Read the notes, then sign off.",
        '{"type": "object", "properties": {"approved": {"const": true}}}',
        "none: only the verdict",
        "open_doc  [launch]  Built-in open notes.txt",
        "built-in: open notes.txt",
        "show_doc  [output]  Show the notes.",
        "declared: cat {artifactPath}/notes.txt",
        EMPTY_HINT,
        "Tool log",
    ):
        assert part in text, part
    screen.set_commands(
        {
            "show_doc": {
                "repository": "/repo",
                "program": "/bin/cat",
                "argv": ["/repo/doc/notes.txt"],
                "cwd": "/repo/doc",
            }
        }
    )
    assert "$ /bin/cat /repo/doc/notes.txt" in screen_text(screen.widget)
    screen.set_commands({"show_doc": {"error": "Human tool preparation failed: gone"}})
    assert "cannot resolve: Human tool preparation failed: gone" in screen_text(screen.widget)


def test_request_keys() -> None:
    screen = RequestScreen(view(), "alice", ToolLog())
    assert screen.selected_tool is not None and screen.selected_tool.name == "open_doc"
    assert screen.keypress("j") is Act.HANDLED
    assert screen.selected_tool is not None and screen.selected_tool.name == "show_doc"
    assert "▸ show_doc" in screen_text(screen.widget)
    expected = {
        "enter": Act.RUN_TOOL,
        "t": Act.RUN_TOOL,
        "s": Act.SUBMIT,
        "u": Act.RELEASE,
        "r": Act.REFRESH,
        "esc": Act.BACK,
        "backspace": Act.BACK,
        "q": Act.QUIT,
        "page up": Act.HANDLED,
        "z": Act.IGNORED,
    }
    for key, act in expected.items():
        assert screen.keypress(key) is act, key


def test_a_request_claimed_by_someone_else_is_read_only() -> None:
    screen = RequestScreen(view(claim={"reviewer": "bob"}), "alice", ToolLog())
    assert screen.read_only == "Claimed by bob; read-only for alice."
    assert "Claimed by bob; read-only for alice." in screen_text(screen.widget)
    mine = RequestScreen(view(claim={"reviewer": "alice"}), "alice", ToolLog())
    assert mine.read_only is None and "Claim alice (you)" in screen_text(mine.widget)


def test_the_output_title_says_how_the_last_run_went() -> None:
    screen = RequestScreen(view(), "alice", ToolLog())
    screen.output_title("show_doc")
    assert "Output · show_doc" in screen_text(screen.widget)
    screen.output_title("show_doc", tool_error=True)
    assert "show_doc · tool error" in screen_text(screen.widget)
    screen.output_title("show_doc", failed=True)
    assert "show_doc · failed" in screen_text(screen.widget)


# --- the output pane ---------------------------------------------------------------------------


def filled_log(lines: int) -> ToolLog:
    log = ToolLog()
    run = log.start("10:00:00", "show", "doc")
    for index in range(lines):
        log.line(run, "stdout", f"line {index}")
    log.program_ended(run, 0, None)
    return log


def test_the_pane_follows_the_end_and_scrolls_back() -> None:
    pane = LogPane(filled_log(30))
    shown = urwid.testing.render_text(pane, (40, 5), strip=True)
    assert shown == ["line 26", "line 27", "line 28", "line 29", "■ exit 0"]
    pane.scroll(10)
    assert urwid.testing.render_text(pane, (40, 5), strip=True)[-1] == "line 20"  # 10 rows up
    pane.scroll(-100)
    assert urwid.testing.render_text(pane, (40, 5), strip=True)[-1] == "■ exit 0"
    pane.scroll(10_000)  # no further back than the first row
    assert urwid.testing.render_text(pane, (40, 5), strip=True)[0] == "▶ 10:00:00 · show · doc"


def test_the_pane_wraps_long_rows_and_keeps_the_newest() -> None:
    log = ToolLog()
    run = log.start("t", "x", "y")
    log.line(run, "stdout", "a" * 25)
    shown = urwid.testing.render_text(LogPane(log), (10, 2), strip=True)
    assert shown == ["aaaaaaaaaa", "aaaaa"]


def test_the_pane_is_a_well_behaved_box() -> None:
    urwid.testing.check_box_sizing(LogPane(filled_log(3)), cols=20, rows=4)
    urwid.testing.check_box_sizing(LogPane(ToolLog()), cols=20, rows=4)
    text = urwid.testing.render_text(LogPane(ToolLog()), (80, 3), strip=True)
    assert text[0] == EMPTY_HINT


def test_stderr_rows_are_styled() -> None:
    log = ToolLog()
    run = log.start("t", "x", "y")
    log.line(run, "stderr", "oops")
    runs = urwid.testing.render_runs(LogPane(log), (10, 2))
    assert runs[1][0][0] == "log-stderr"


# --- Confirm, Verdict, Leave -------------------------------------------------------------------


def test_confirm_shows_the_command_and_maps_keys() -> None:
    command = {"repository": "/repo", "program": "/bin/cat", "argv": ["a b"], "cwd": "/repo/doc"}
    screen = ConfirmScreen(urwid.SolidFill("."), "show_doc", command)
    text = screen_text(screen.widget)
    for part in (
        "Run show_doc?",
        "program     /bin/cat",
        "arguments   'a b'",
        "directory   /repo/doc",
        "repository  /repo",
    ):
        assert part in text, part
    assert [screen.keypress(k) for k in ("y", "enter", "n", "q", "esc", "x")] == [
        Act.CONFIRM,
        Act.CONFIRM,
        Act.CANCEL,
        Act.CANCEL,
        Act.CANCEL,
        Act.IGNORED,
    ]


def test_verdict_and_leave_keys() -> None:
    verdict = VerdictScreen(urwid.SolidFill("."), "doc/signoff")
    assert "Which verdict for doc/signoff?" in screen_text(verdict.widget)
    assert [verdict.keypress(k) for k in ("g", "r", "esc", "q", "s")] == [
        Act.GREEN,
        Act.RED,
        Act.CANCEL,
        Act.CANCEL,
        Act.IGNORED,
    ]
    leave = LeaveScreen(urwid.SolidFill("."), ["run-a-1"], [("run-a-2", "Request is not waiting")])
    text = screen_text(leave.widget)
    assert "run-a-1" in text and "run-a-2: Request is not waiting" in text
    keys = ("k", "n", "q", "u", "r", "y", "esc", "x")
    assert [leave.keypress(k) for k in keys] == [
        Act.KEEP,
        Act.KEEP,
        Act.KEEP,
        Act.RELEASE_ALL,
        Act.RELEASE_ALL,
        Act.RELEASE_ALL,
        Act.CANCEL,
        Act.IGNORED,
    ]


# --- Form ----------------------------------------------------------------------------------------


def form() -> VerdictForm:
    schema = {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "const": "RED"},
            "reason": {"type": "string", "description": "Why not."},
            "blocking": {"type": "boolean"},
        },
        "required": ["reason", "verdict"],
        "additionalProperties": False,
    }
    made = flat_form("RED", schema)
    assert made is not None
    return made


def test_the_form_shows_fields_hints_and_errors() -> None:
    screen = FormScreen(form(), "doc/signoff", "run-a-1")
    text = screen_text(screen.widget)
    assert "RED verdict for doc/signoff (run-a-1)" in text
    assert "* reason    ▏" in text and "text · Why not." in text
    assert "  blocking  (unset)" in text
    assert [screen.keypress(k) for k in "ok"] == [Act.HANDLED, Act.HANDLED]
    assert screen.keypress("tab") is Act.HANDLED and screen.keypress(" ") is Act.HANDLED
    text = screen_text(screen.widget)
    assert "* reason    ok" in text and "  blocking  true" in text
    focused = urwid.testing.render_runs(screen.widget, SIZE, focus=True)
    assert any("blocking" in t for row in focused for a, t in row if a == FIELD_FOCUS)
    assert screen.keypress("enter") is Act.SEND
    assert screen.keypress("esc") is Act.CANCEL
    assert screen.keypress("ctrl e") is Act.EDITOR
    screen.show_error('schema_mismatch: result must match\n- field "x" is not declared.')
    assert '- field "x" is not declared.' in screen_text(screen.widget)
    assert screen.form.result() == {"verdict": "RED", "reason": "ok", "blocking": True}
