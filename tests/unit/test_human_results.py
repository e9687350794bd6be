"""Human tool results and live lines, without any process: the result type, how an ``output``
run's outcome becomes blocks (64 KiB blocks from a 128 KiB capture, the stderr label, the
exit status), and how chunks become Tool log lines."""

from __future__ import annotations

import pytest

from artifactize.domain.tools.commands.text_output import TRUNCATION_MARKER
from artifactize.domain.tools.human.lines import (
    LINE_PIECE_MAX_BYTES,
    LineSplitter,
    OutputLine,
    ProgramEnded,
    ToolLogEvent,
)
from artifactize.domain.tools.human.results import (
    HUMAN_CAPTURE_MAX_BYTES,
    HUMAN_TEXT_BLOCK_MAX_BYTES,
    STDERR_LABEL,
    HumanToolResult,
    output_result,
)
from artifactize.domain.tools.results import ToolResult
from artifactize.ports.process import ProcessOutcome

KIB = 1024
LAUNCHED = {"content": [{"type": "launch", "launched": True}], "isError": False}


def texts(result: HumanToolResult) -> list[str]:
    assert all(block["type"] == "text" for block in result.content)
    return [str(block["text"]) for block in result.content]


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


# --- the result type ---------------------------------------------------------------------------


def test_limits_are_the_specified_numbers() -> None:
    assert HUMAN_CAPTURE_MAX_BYTES == 128 * KIB
    assert HUMAN_TEXT_BLOCK_MAX_BYTES == 64 * KIB
    assert LINE_PIECE_MAX_BYTES == 4096


def test_a_launch_result_is_exactly_the_launch_block() -> None:
    assert HumanToolResult.launched().to_json() == LAUNCHED
    assert HumanToolResult.launched().is_launch


def test_is_error_is_always_serialized() -> None:
    assert HumanToolResult.text("hi").to_json() == {
        "content": [{"type": "text", "text": "hi"}],
        "isError": False,
    }
    assert HumanToolResult.error("bad").to_json() == {
        "content": [{"type": "text", "text": "bad"}],
        "isError": True,
    }
    assert HumanToolResult.error("  ").error_text == "Human tool failed."


@pytest.mark.parametrize(
    ("content", "is_error"),
    [
        (({"type": "launch", "launched": True}, {"type": "text", "text": "x"}), False),
        (({"type": "launch", "launched": True},), True),
        (({"type": "json", "data": {}},), False),
        (({"type": "image", "data": "", "mimeType": "image/png"},), False),
        ((), False),
        (tuple({"type": "text", "text": "x"} for _ in range(33)), False),
    ],
)
def test_a_human_result_holds_only_text_or_one_launch_block(
    content: tuple[dict[str, object], ...], is_error: bool
) -> None:
    with pytest.raises(ValueError):
        HumanToolResult(content, is_error)


def test_thirty_two_text_blocks_are_allowed() -> None:
    assert len(HumanToolResult(tuple({"type": "text", "text": "x"} for _ in range(32))).content)


def test_an_agent_result_never_holds_a_launch_block() -> None:
    with pytest.raises(ValueError, match="launch"):
        ToolResult(({"type": "launch", "launched": True},))
    with pytest.raises(ValueError, match="launch"):
        ToolResult(({"type": "text", "text": "x"}, {"type": "launch", "launched": True}))
    assert ToolResult.text("fine").to_json() == {"content": [{"type": "text", "text": "fine"}]}


# --- output runs -------------------------------------------------------------------------------


def test_hum_03_stdout_then_labelled_stderr() -> None:
    result = output_result(ProcessOutcome(exit_code=0, stdout=b"out", stderr=b"err"))
    assert result.to_json() == {
        "content": [{"type": "text", "text": "out"}, {"type": "text", "text": "stderr:\nerr"}],
        "isError": False,
    }


def test_empty_stderr_gets_no_block_and_empty_stdout_keeps_its_block() -> None:
    assert texts(output_result(ProcessOutcome(exit_code=0, stdout=b"only"))) == ["only"]
    assert texts(output_result(ProcessOutcome(exit_code=0))) == [""]
    assert texts(output_result(ProcessOutcome(exit_code=0, stderr=b"e"))) == ["", "stderr:\ne"]


def test_hum_04_nonzero_exit_is_an_error_with_the_status_and_the_text() -> None:
    result = output_result(ProcessOutcome(exit_code=3, stdout=b"x"))
    assert result.is_error
    assert texts(result) == ["Human tool exited unsuccessfully (exit status: 3).\nx"]
    with_stderr = output_result(ProcessOutcome(exit_code=1, stdout=b"", stderr=b"why"))
    assert texts(with_stderr) == [
        "Human tool exited unsuccessfully (exit status: 1).",
        "stderr:\nwhy",
    ]
    assert with_stderr.to_json()["isError"] is True


def test_a_signal_exit_is_an_error_naming_the_signal() -> None:
    result = output_result(ProcessOutcome(signal=9, stdout=b"partial"))
    assert result.is_error
    assert texts(result) == ["Human tool exited unsuccessfully (signal: 9).\npartial"]


def test_timeout_and_spawn_failure_are_plain_errors() -> None:
    timed_out = output_result(ProcessOutcome(exit_code=0, timed_out=True, stdout=b"late"))
    assert timed_out.to_json() == {
        "content": [{"type": "text", "text": "Human tool timed out."}],
        "isError": True,
    }
    failed = output_result(ProcessOutcome(spawn_error="Permission denied: /x"))
    assert failed.error_text == "Human tool execution failed: Permission denied: /x"


def test_output_is_cleaned_like_runtime_output() -> None:
    result = output_result(
        ProcessOutcome(exit_code=0, stdout=b"\x1b[31mred\x1b[0m\x00\t\xff\n", stderr=b"\x07bell")
    )
    assert texts(result) == ["red\t\ufffd\n", "stderr:\nbell"]


def test_stdout_at_64_kib_is_whole_and_one_byte_more_is_cut_with_the_marker() -> None:
    at_limit = output_result(ProcessOutcome(exit_code=0, stdout=b"a" * HUMAN_TEXT_BLOCK_MAX_BYTES))
    assert texts(at_limit) == ["a" * HUMAN_TEXT_BLOCK_MAX_BYTES]
    one_past = output_result(
        ProcessOutcome(exit_code=0, stdout=b"a" * (HUMAN_TEXT_BLOCK_MAX_BYTES + 1))
    )
    (text,) = texts(one_past)
    assert text.endswith(TRUNCATION_MARKER)
    assert utf8_size(text) == HUMAN_TEXT_BLOCK_MAX_BYTES
    assert not one_past.is_error


def test_stderr_block_counts_its_label_against_the_cap() -> None:
    room = HUMAN_TEXT_BLOCK_MAX_BYTES - len(STDERR_LABEL)
    at_limit = output_result(ProcessOutcome(exit_code=0, stderr=b"e" * room))
    assert texts(at_limit)[1] == STDERR_LABEL + "e" * room
    one_past = output_result(ProcessOutcome(exit_code=0, stderr=b"e" * (room + 1)))
    text = texts(one_past)[1]
    assert text.startswith(STDERR_LABEL) and text.endswith(TRUNCATION_MARKER)
    assert utf8_size(text) == HUMAN_TEXT_BLOCK_MAX_BYTES


def test_a_capture_that_overflowed_is_marked_even_when_cleaning_shrank_it() -> None:
    colour = b"\x1b[31m" * (HUMAN_CAPTURE_MAX_BYTES // 5) + b"tail"
    result = output_result(ProcessOutcome(exit_code=0, stdout=colour, stdout_truncated=True))
    assert texts(result) == ["tail" + TRUNCATION_MARKER]
    other_stream = output_result(
        ProcessOutcome(exit_code=0, stdout=b"short", stderr=b"e", stderr_truncated=True)
    )
    assert texts(other_stream) == ["short", "stderr:\ne" + TRUNCATION_MARKER]


def test_the_cut_never_splits_a_character() -> None:
    data = ("a" * (HUMAN_TEXT_BLOCK_MAX_BYTES - 20) + "é" * 20).encode("utf-8")
    (text,) = texts(output_result(ProcessOutcome(exit_code=0, stdout=data)))
    assert "\ufffd" not in text and text.endswith(TRUNCATION_MARKER)
    assert utf8_size(text) <= HUMAN_TEXT_BLOCK_MAX_BYTES


def test_the_exit_status_header_counts_against_the_cap() -> None:
    result = output_result(ProcessOutcome(exit_code=2, stdout=b"a" * HUMAN_TEXT_BLOCK_MAX_BYTES))
    (text,) = texts(result)
    assert text.startswith("Human tool exited unsuccessfully (exit status: 2).\naaa")
    assert text.endswith(TRUNCATION_MARKER) and utf8_size(text) <= HUMAN_TEXT_BLOCK_MAX_BYTES


# --- live lines --------------------------------------------------------------------------------


def collect() -> tuple[LineSplitter, list[ToolLogEvent]]:
    events: list[ToolLogEvent] = []
    return LineSplitter(events.append), events


def test_chunks_become_cleaned_lines_per_stream() -> None:
    splitter, events = collect()
    splitter.output("stdout", b"one\ntw")
    splitter.output("stderr", b"\x1b[31mbad\x1b[0m\r\n")
    splitter.output("stdout", b"o\nlast")
    splitter.exited(0, None)
    assert events == [
        OutputLine("stdout", "one"),
        OutputLine("stderr", "bad"),
        OutputLine("stdout", "two"),
        OutputLine("stdout", "last"),
        ProgramEnded(0, None),
    ]


def test_a_line_at_the_piece_limit_is_one_line_and_one_byte_more_is_two_pieces() -> None:
    splitter, events = collect()
    splitter.output("stdout", b"a" * LINE_PIECE_MAX_BYTES + b"\n")
    assert events == [OutputLine("stdout", "a" * LINE_PIECE_MAX_BYTES)]
    splitter, events = collect()
    splitter.output("stdout", b"b" * (LINE_PIECE_MAX_BYTES + 1) + b"\n")
    assert events == [
        OutputLine("stdout", "b" * LINE_PIECE_MAX_BYTES),
        OutputLine("stdout", "b"),
    ]


def test_an_endless_line_is_passed_on_in_pieces_without_waiting_for_its_end() -> None:
    splitter, events = collect()
    for _ in range(3):
        splitter.output("stdout", b"z" * LINE_PIECE_MAX_BYTES)
    assert [len(e.text) for e in events if isinstance(e, OutputLine)] == [LINE_PIECE_MAX_BYTES] * 2


def test_pieces_are_cut_between_characters() -> None:
    splitter, events = collect()
    splitter.output("stdout", ("a" * (LINE_PIECE_MAX_BYTES - 1) + "€" + "tail\n").encode("utf-8"))
    assert events == [
        OutputLine("stdout", "a" * (LINE_PIECE_MAX_BYTES - 1)),
        OutputLine("stdout", "€tail"),
    ]


def test_built_in_text_is_shown_as_its_lines() -> None:
    splitter, events = collect()
    splitter.emit_text("# Title\nbody")
    assert events == [OutputLine("stdout", "# Title"), OutputLine("stdout", "body")]


def test_a_failing_sink_is_dropped_not_the_run() -> None:
    calls: list[ToolLogEvent] = []

    def sink(event: ToolLogEvent) -> None:
        calls.append(event)
        raise RuntimeError("screen closed")

    splitter = LineSplitter(sink)
    splitter.output("stdout", b"a\nb\n")
    splitter.exited(1, None)
    assert calls == [OutputLine("stdout", "a")]
    assert isinstance(splitter.sink_error, RuntimeError)
