"""The Tool log model: run headers, stderr marking, end lines, pieces and the 1 MiB bound."""

from __future__ import annotations

import pytest

from artifactize.domain.reviews.human.errors import CANCELLED as ACTION_CANCELLED
from artifactize.domain.tools.human.lines import LINE_PIECE_MAX_BYTES
from artifactize.domain.tools.human.results import CANCELLED, TIMED_OUT, HumanToolResult
from artifactize.entrypoints.review_tui.tool_log import (
    REST_NOT_SHOWN,
    RUN_SHOWN_MAX_BYTES,
    RowKind,
    ToolLog,
    error_end,
    result_end,
    split_pieces,
)


def texts(log: ToolLog) -> list[str]:
    return [row.text for row in log.rows()]


def test_a_run_shows_header_lines_and_exit() -> None:
    log = ToolLog()
    run = log.start("09:05:07", "show", "doc")
    log.line(run, "stdout", "hello")
    log.line(run, "stderr", "careful")
    log.program_ended(run, 0, None)
    assert texts(log) == ["▶ 09:05:07 · show · doc", "hello", "careful", "■ exit 0"]
    kinds = [row.kind for row in log.rows()]
    assert kinds == [RowKind.HEADER, RowKind.STDOUT, RowKind.STDERR, RowKind.END]


def test_nonzero_exit_and_signal_are_failures() -> None:
    log = ToolLog()
    first = log.start("t", "a", "x")
    log.program_ended(first, 3, None)
    second = log.start("t", "b", "x")
    log.program_ended(second, None, 9)
    assert texts(log)[1] == "■ exit 3" and texts(log)[3] == "■ error: ended by signal 9"
    assert {row.kind for row in log.rows() if row.text.startswith("■")} == {RowKind.END_ERROR}


def test_a_launch_ends_launched_then_its_exit_replaces_it() -> None:
    log = ToolLog()
    run = log.start("t", "open", "doc")
    log.finish(run, *result_end(HumanToolResult.launched()))
    assert texts(log)[-1] == "■ launched"
    later = log.start("t", "show", "doc")  # another run meanwhile
    log.line(run, "stdout", "viewer says hi")  # the launched program keeps logging in its run
    log.program_ended(run, 0, None)
    log.finish(later, "done", False)
    assert texts(log) == [
        "▶ t · open · doc",
        "viewer says hi",
        "■ exit 0",
        "▶ t · show · doc",
        "■ done",
    ]


def test_the_programs_exit_is_not_overwritten_by_the_result() -> None:
    log = ToolLog()
    run = log.start("t", "fail", "doc")
    log.program_ended(run, 1, None)
    log.finish(run, *result_end(HumanToolResult.error("Human tool exited unsuccessfully")))
    assert texts(log)[-1] == "■ exit 1"


@pytest.mark.parametrize(
    ("result", "end"),
    [
        (HumanToolResult.text("read text"), ("done", False)),
        (HumanToolResult.launched(), ("launched", False)),
        (HumanToolResult.error(TIMED_OUT), ("timed out", True)),
        (HumanToolResult.error(CANCELLED), ("cancelled", True)),
        (HumanToolResult.error("Human tool preparation failed: gone\nmore"), None),
    ],
)
def test_result_end_lines(result: HumanToolResult, end: tuple[str, bool] | None) -> None:
    expected = end or ("error: Human tool preparation failed: gone", True)
    assert result_end(result) == expected


def test_a_refused_action_ends_with_its_error_or_cancelled() -> None:
    assert error_end("Only the Human claimant may perform this action.") == (
        "error: Only the Human claimant may perform this action.",
        True,
    )
    assert error_end(ACTION_CANCELLED) == ("cancelled", True)


def test_long_lines_show_in_pieces_cut_on_characters() -> None:
    text = "é" * LINE_PIECE_MAX_BYTES  # two bytes each: twice the limit
    pieces = split_pieces(text)
    assert "".join(pieces) == text
    assert all(len(piece.encode()) <= LINE_PIECE_MAX_BYTES for piece in pieces)
    assert len(pieces) == 2
    log = ToolLog()
    run = log.start("t", "show", "doc")
    log.line(run, "stdout", "x" * (LINE_PIECE_MAX_BYTES * 2 + 1))
    assert [len(t) for t in texts(log)[1:]] == [LINE_PIECE_MAX_BYTES, LINE_PIECE_MAX_BYTES, 1]


def test_a_limit_below_one_character_still_makes_progress() -> None:
    assert split_pieces("€€", 2) == ["€", "€"]


def test_one_run_shows_at_most_one_mebibyte_then_says_so() -> None:
    log = ToolLog()
    run = log.start("t", "flood", "doc")
    line = "y" * 1023  # 1 KiB with its newline
    for _ in range(RUN_SHOWN_MAX_BYTES // 1024 + 50):
        log.line(run, "stdout", line)
    log.program_ended(run, 0, None)
    rows = log.rows()
    shown = [row for row in rows if row.kind is RowKind.STDOUT]
    assert len(shown) == RUN_SHOWN_MAX_BYTES // 1024
    assert sum(len(row.text) + 1 for row in shown) <= RUN_SHOWN_MAX_BYTES
    assert [row.text for row in rows if row.kind is RowKind.NOTE] == [REST_NOT_SHOWN]
    assert rows[-1].text == "■ exit 0"
    other = log.start("t", "again", "doc")  # the bound is per run
    log.line(other, "stdout", "fresh")
    assert log.rows()[-1].text == "fresh"


def test_rows_are_cached_until_something_changes() -> None:
    log = ToolLog()
    run = log.start("t", "a", "b")
    first = log.rows()
    assert log.rows() is first
    version = log.version
    log.line(run, "stdout", "x")
    assert log.version > version and log.rows() is not first
