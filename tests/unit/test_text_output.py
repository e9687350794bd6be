"""Cleaning, lossy decoding and truncation of program output (tools.md §8.3, §8.4, §12)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artifactize.domain.tools.commands.text_output import (
    TEXT_BLOCK_MAX_BYTES,
    TRUNCATION_MARKER,
    clean_output,
    decode_lossy,
    truncate_utf8,
    utf8_prefix,
)

MARKER_BYTES = len(TRUNCATION_MARKER.encode("utf-8"))


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def test_constants() -> None:
    assert TEXT_BLOCK_MAX_BYTES == 65536
    assert TRUNCATION_MARKER == "\n[output truncated]"
    assert MARKER_BYTES == 19


# --- cleaning --------------------------------------------------------------------------


def test_reference_example() -> None:  # §8.4 and PLAIN-07
    assert clean_output(decode_lossy(b"\x1b[31mhello\x1b[0m\x00\t\n")) == "hello\t\n"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\x1b[1;31mred\x1b[m", "red"),  # several parameters; no parameter at all
        ("\x1b[?25lhidden\x1b[?25h", "hidden"),  # private parameter bytes
        ("\x1b[2 qcursor", "cursor"),  # an intermediate byte before the final byte
        ("a\x1b[2Kb", "ab"),
        ("\x1b[38;5;196mx", "x"),
        ("\x1b[@x", "x"),  # the lowest final byte
        ("\x1b[~x", "x"),  # the highest final byte
    ],
)
def test_csi_sequences_are_removed(raw: str, clean: str) -> None:
    assert clean_output(raw) == clean


def test_unterminated_csi_loses_only_its_escape() -> None:
    assert clean_output("\x1b[31") == "[31"
    assert clean_output("a\x1b[31\x7fb") == "a[31\x7fb"  # DEL is not a final byte
    assert clean_output("\x1b[31é") == "[31é"


def test_parameter_after_intermediate_ends_the_sequence_as_unterminated() -> None:
    # ESC [ SP 1 m: '1' is not a final byte, so this is no CSI: only the ESC goes.
    assert clean_output("\x1b[ 1m") == "[ 1m"


def test_csi_right_after_an_unterminated_one_is_still_removed() -> None:
    assert clean_output("\x1b[31\x1b[0mtext") == "[31text"


def test_non_csi_escapes_lose_escape_and_bell_but_keep_their_text() -> None:
    assert clean_output("\x1b]0;title\x07rest") == "]0;titlerest"
    assert clean_output("\x1b(Bx") == "(Bx"
    assert clean_output("\x1bcreset") == "creset"


def test_c0_controls_are_removed_except_tab_lf_cr() -> None:
    controls = "".join(chr(code) for code in range(0x20))
    assert clean_output(controls) == "\t\n\r"


def test_del_and_non_ascii_are_kept() -> None:
    text = "\x7f é 界 \u0085 \u009b[31m 😀"  # C1 controls are non-ASCII, hence kept
    assert clean_output(text) == text


def test_clean_text_is_unchanged() -> None:
    text = "line one\r\n\tline two\n"
    assert clean_output(text) == text


# --- lossy decoding --------------------------------------------------------------------


def test_valid_utf8_decodes_unchanged() -> None:
    assert decode_lossy("héllo 界 😀".encode()) == "héllo 界 😀"


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"abc\xffdef", "abc\ufffddef"),
        (b"\xff\xfe", "\ufffd\ufffd"),
        (b"x\xf0\x90\x80", "x\ufffd"),  # a cut four-byte sequence is one replacement
        (b"\xe2\x82", "\ufffd"),
        (b"\xc0\xaf", "\ufffd\ufffd"),  # overlong encodings are invalid bytes
    ],
)
def test_invalid_utf8_becomes_replacement_characters(raw: bytes, text: str) -> None:
    assert decode_lossy(raw) == text


def test_nul_survives_decoding_and_is_removed_by_cleaning() -> None:
    assert clean_output(decode_lossy(b"a\x00b")) == "ab"


# --- truncation ------------------------------------------------------------------------


def test_text_that_fits_is_unchanged() -> None:
    assert truncate_utf8("short") == "short"
    assert truncate_utf8("") == ""


def test_exactly_the_limit_is_unchanged() -> None:
    text = "a" * TEXT_BLOCK_MAX_BYTES
    assert truncate_utf8(text) == text


def test_one_byte_past_the_limit_is_truncated() -> None:
    result = truncate_utf8("a" * (TEXT_BLOCK_MAX_BYTES + 1))
    assert result == "a" * (TEXT_BLOCK_MAX_BYTES - MARKER_BYTES) + TRUNCATION_MARKER
    assert size(result) == TEXT_BLOCK_MAX_BYTES


def test_wide_characters_are_never_split() -> None:  # PLAIN-10
    result = truncate_utf8("界" * 100000)
    assert result.endswith(TRUNCATION_MARKER)
    assert size(result) <= TEXT_BLOCK_MAX_BYTES
    assert set(result[: -len(TRUNCATION_MARKER)]) == {"界"}
    assert "\ufffd" not in result


def test_character_across_the_cut_is_dropped_whole() -> None:  # FIX-02 (1)
    text = "a" * 65535 + "é" + "tail"
    result = truncate_utf8(text)
    assert result == "a" * (TEXT_BLOCK_MAX_BYTES - MARKER_BYTES) + TRUNCATION_MARKER
    cut = "a" * (TEXT_BLOCK_MAX_BYTES - MARKER_BYTES - 1) + "é" + "x" * 100
    assert truncate_utf8(cut) == "a" * (TEXT_BLOCK_MAX_BYTES - MARKER_BYTES - 1) + TRUNCATION_MARKER


def test_force_marks_text_that_already_fits() -> None:
    assert truncate_utf8("partial", force=True) == "partial" + TRUNCATION_MARKER
    long = "a" * TEXT_BLOCK_MAX_BYTES
    forced = truncate_utf8(long, force=True)
    assert size(forced) == TEXT_BLOCK_MAX_BYTES
    assert forced.endswith(TRUNCATION_MARKER)


def test_custom_limit_and_marker() -> None:
    assert truncate_utf8("abcdef", limit=5, marker="…") == "ab…"  # '…' is 3 bytes
    assert truncate_utf8("abcdef", limit=3, marker="…") == "…"


def test_marker_longer_than_the_limit_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="marker"):
        truncate_utf8("abcdef", limit=2, marker="...")


def test_utf8_prefix_drops_a_cut_character() -> None:
    assert utf8_prefix("aé".encode(), 2) == "a"
    assert utf8_prefix("aé".encode(), 3) == "aé"
    assert utf8_prefix(b"", 5) == ""


@given(
    text=st.text(),
    limit=st.integers(min_value=MARKER_BYTES, max_value=120),
    force=st.booleans(),
)
def test_truncation_never_exceeds_the_limit_nor_splits_a_character(
    text: str, limit: int, force: bool
) -> None:
    result = truncate_utf8(text, limit, force=force)
    if result == text:
        assert size(text) <= limit and not force
        return
    assert size(result) <= limit
    assert result.endswith(TRUNCATION_MARKER)
    kept = result[: -len(TRUNCATION_MARKER)]
    assert text.startswith(kept)  # whole characters of the original, in order
    following = text[len(kept) : len(kept) + 1]
    assert not following or size(kept + following) > limit - MARKER_BYTES  # cut as late as possible
