"""The ``section`` built-in's Markdown rules (tools.md §12, FIX-03, CLI-01)."""

from __future__ import annotations

import pytest

from artifactize.domain.tools.builtins.section import (
    SECTION_OUTPUT_MAX_BYTES,
    SECTION_SOURCE_MAX_BYTES,
    SOURCE_TOO_LARGE,
    SectionError,
    extract_section,
    heading_text,
    parse_headings,
)
from artifactize.domain.tools.commands.text_output import TRUNCATION_MARKER

FENCE = "```"
FIX03 = (
    "# Top\nintro\n## Exact\nbody\n### Child\nchild\n"
    + "```md\n## Fake\n```\n"
    + "## Next\nnext\n\nSetext\n======\nlast\n"
)
CLI01 = "# First\nalpha\n## Child\nchild\n# Next\nomega\n"


def headings(text: str) -> list[tuple[int, str]]:
    return [(found.level, found.text) for found in parse_headings(text)]


def texts(text: str) -> list[str]:
    return [found.text for found in parse_headings(text)]


def missing(text: str, heading: str) -> str:
    with pytest.raises(SectionError) as caught:
        extract_section(text, heading)
    return caught.value.message


def test_limits() -> None:
    assert SECTION_SOURCE_MAX_BYTES == 8 * 1024 * 1024
    assert SECTION_OUTPUT_MAX_BYTES == 64 * 1024


# --- the reference cases ---------------------------------------------------------------


def test_fix03_section_runs_to_the_next_heading_of_the_same_level() -> None:
    assert extract_section(FIX03, "Exact") == (
        "## Exact\nbody\n### Child\nchild\n" + "```md\n## Fake\n```\n"
    )


def test_fix03_setext_heading() -> None:
    assert extract_section(FIX03, "Setext") == "Setext\n======\nlast\n"


def test_fix03_heading_inside_a_fence_does_not_count() -> None:
    message = missing(FIX03, "Fake")
    assert "Top\nExact\nChild\nNext\nSetext" in message
    assert "Fake" not in message.split("\n", 1)[1]


def test_fix03_no_match_message_is_exact() -> None:
    assert missing(FIX03, "Fake") == (
        "No matching heading: Fake. Available headings:\nTop\nExact\nChild\nNext\nSetext"
    )


def test_cli01_section_includes_nested_subsections() -> None:
    assert extract_section(CLI01, "First") == "# First\nalpha\n## Child\nchild\n"


def test_cli01_absent_heading_lists_every_heading() -> None:
    assert "First\nChild\nNext" in missing(CLI01, "Absent")


# --- selection and extent --------------------------------------------------------------


def test_last_section_runs_to_the_end_of_the_document() -> None:
    assert extract_section(CLI01, "Next") == "# Next\nomega\n"
    assert extract_section("# Only\nno newline", "Only") == "# Only\nno newline"


def test_deeper_section_stops_at_a_higher_level_heading() -> None:
    assert extract_section(CLI01, "Child") == "## Child\nchild\n"


def test_first_exact_match_wins_at_any_level() -> None:
    text = "### Same\nfirst\n# Same\nsecond\n"
    assert extract_section(text, "Same") == "### Same\nfirst\n"


def test_match_is_exact_case_and_spaces_included() -> None:
    assert "Available headings" in missing(CLI01, "first")
    assert "Available headings" in missing(CLI01, " First")
    assert "Available headings" in missing(CLI01, "First ")


def test_setext_levels_compare_with_atx_levels() -> None:
    text = "Title\n=====\nbody\n## Sub\nsub\n\nOther\n-----\nx\n# Next\nn\n"
    assert extract_section(text, "Title") == "Title\n=====\nbody\n## Sub\nsub\n\nOther\n-----\nx\n"
    assert extract_section(text, "Sub") == "## Sub\nsub\n\n"
    assert extract_section(text, "Other") == "Other\n-----\nx\n"


def test_section_of_a_setext_heading_starts_at_its_first_line() -> None:
    text = "intro\n\nTwo\nlines\n---\nbody\n"
    assert headings(text) == [(2, "Two lines")]
    assert extract_section(text, "Two lines") == "Two\nlines\n---\nbody\n"


def test_section_keeps_crlf_line_endings() -> None:
    text = "# A\r\na\r\n## B\r\nb\r\n# C\r\n"
    assert extract_section(text, "A") == "# A\r\na\r\n## B\r\nb\r\n"


def test_byte_order_mark_does_not_hide_the_first_heading() -> None:
    assert extract_section("\ufeff# Title\nbody\n", "Title") == "# Title\nbody\n"


def test_heading_inside_a_block_quote() -> None:
    text = "> # Quoted\n> text\n\n# Next\n"
    assert headings(text) == [(1, "Quoted"), (1, "Next")]
    assert extract_section(text, "Quoted") == "# Quoted\n> text\n\n"


# --- ATX headings ----------------------------------------------------------------------


def test_atx_levels_one_to_six() -> None:
    text = "\n".join("#" * level + f" h{level}" for level in range(1, 8))
    assert headings(text) == [(level, f"h{level}") for level in range(1, 7)]


@pytest.mark.parametrize("line", ["#5 bolt", "#hashtag", "####### seven", "\\# escaped"])
def test_not_atx_headings(line: str) -> None:
    assert headings(line) == []


@pytest.mark.parametrize(
    ("line", "text"),
    [
        ("# foo ##", "foo"),
        ("## foo ######   ", "foo"),
        ("# foo#", "foo#"),
        ("### foo \\###", "foo ###"),
        ("# foo # bar", "foo # bar"),
        ("#", ""),
        ("# #", ""),
        ("#\tTabbed", "Tabbed"),
        ("#    spaced    ", "spaced"),
        ("   # three spaces", "three spaces"),
    ],
)
def test_atx_heading_text(line: str, text: str) -> None:
    assert texts(line) == [text]


def test_four_spaces_make_indented_code_not_a_heading() -> None:
    assert headings("    # code\n\t# tab code\n") == []


def test_atx_heading_interrupts_a_paragraph() -> None:
    assert headings("text\n# Heading\n") == [(1, "Heading")]


# --- setext headings -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Title\n===", [(1, "Title")]),
        ("Title\n---", [(2, "Title")]),
        ("Title\n=", [(1, "Title")]),
        ("Title\n-", [(2, "Title")]),
        ("Title\n   ===   ", [(1, "Title")]),
        ("  Title  \n===", [(1, "Title")]),
        ("Multi\nline  \nheading\\\nhere\n===", [(1, "Multi line heading here")]),
    ],
)
def test_setext_headings(text: str, expected: list[tuple[int, str]]) -> None:
    assert headings(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "---\ntext",  # a thematic break, nothing above it
        "Title\n\n===",  # a blank line ends the paragraph
        "Title\n= =",  # underlines have no inner spaces
        "Title\n    ===",  # four spaces: paragraph continuation
        "Title\n- - -",  # thematic break
        "- item\n---",  # list item, then a thematic break
        "> quoted\n---",  # setext underlines cannot be lazy
        "> quoted\n===",
        "    code\n===",
        "```\ncode\n```\n===",
    ],
)
def test_not_setext_headings(text: str) -> None:
    assert headings(text) == []


# --- fenced and indented code ----------------------------------------------------------


def test_backtick_and_tilde_fences_hide_headings() -> None:
    text = f"{FENCE}\n# a\n{FENCE}\n~~~\n# b\n~~~\n# c\n"
    assert texts(text) == ["c"]


def test_fence_closes_only_with_the_same_character_at_least_as_long() -> None:
    text = "````\n# a\n```\n~~~~\n# b\n`````\n# c\n"
    assert texts(text) == ["c"]
    assert texts("~~~\n# a\n```\n# b\n~~~\n# c\n") == ["c"]


def test_closing_fence_may_not_carry_text() -> None:
    assert texts(f"{FENCE}\n# a\n{FENCE} x\n# b\n{FENCE}\n# c\n") == ["c"]


def test_unclosed_fence_runs_to_the_end() -> None:
    assert texts(f"# a\n{FENCE}\n# b\n") == ["a"]


def test_indented_fence_and_indented_closing_fence() -> None:
    assert texts(f"   {FENCE}\n# a\n  {FENCE}\n# b\n") == ["b"]


def test_backtick_fence_info_cannot_contain_backticks() -> None:
    assert texts(f"{FENCE} a`b\n# inline code, not a fence\n") == ["inline code, not a fence"]


def test_fence_interrupts_a_paragraph() -> None:
    assert texts(f"text\n{FENCE}\n# hidden\n{FENCE}\n") == []


def test_fence_inside_a_list_item() -> None:
    text = f"- step\n  {FENCE}sh\n  # comment\n  {FENCE}\n# After\n"
    assert texts(text) == ["After"]
    assert texts(f"- {FENCE}\n  # comment\n  {FENCE}\n") == []


def test_paragraph_continuation_is_not_indented_code() -> None:
    assert headings("text\n    # continued\n") == []


# --- HTML blocks and containers --------------------------------------------------------


def test_html_comment_hides_headings() -> None:
    assert texts("<!--\n# hidden\n-->\n# shown\n") == ["shown"]


def test_html_block_ends_at_a_blank_line() -> None:
    assert texts("<div>\n# inside\n\n# outside\n") == ["outside"]


def test_headings_in_list_items_count() -> None:
    assert headings("- # In a list\n1. ## Numbered\n") == [(1, "In a list"), (2, "Numbered")]


def test_lazy_continuation_keeps_a_paragraph_out_of_setext() -> None:
    assert headings("> a\nb\n===\n") == []


# --- heading text ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("Use `read` first", "Use read first"),
        ("`` a ` b ``", "a ` b"),
        ("` spaced `", "spaced"),
        ("*emphasis* and **strong** and ***both***", "emphasis and strong and both"),
        ("_under_ and __double__", "under and double"),
        ("snake_case_name", "snake_case_name"),
        ("2 * 3 * 4", "2 * 3 * 4"),
        ("**unbalanced*", "*unbalanced"),
        ("*a `*` b*", "a * b"),
        ("[link text](https://example.com 'title')", "link text"),
        ("![alt text](image.png)", "alt text"),
        ("[not a link]", "[not a link]"),
        ("<https://example.com>", "https://example.com"),
        ("<b>bold</b> text", "bold text"),
        ("Fish &amp; chips &copy; &#35;1", "Fish & chips © #1"),
        ("&bogus; stays", "&bogus; stays"),
        ("\\*literal\\* \\_x\\_", "*literal* _x_"),
        ("back\\slash", "back\\slash"),
    ],
)
def test_heading_text_is_what_a_renderer_shows(content: str, text: str) -> None:
    assert heading_text(content) == text
    assert texts(f"# {content}") == [text]


def test_code_span_keeps_markdown_characters() -> None:
    assert texts("## The `*args` and `# x` forms") == ["The *args and # x forms"]


def test_line_breaks_in_setext_text_become_one_space() -> None:
    assert texts("one  \ntwo\\\nthree\n  four\n===") == ["one two three four"]


def test_code_span_across_lines_joins_with_a_space() -> None:
    assert texts("a `b\nc` d\n---") == ["a b c d"]


# --- limits and errors -----------------------------------------------------------------


def test_document_of_exactly_8_mib_is_read() -> None:
    text = "# A\n" + "x" * (SECTION_SOURCE_MAX_BYTES - 4)
    assert len(text.encode("utf-8")) == SECTION_SOURCE_MAX_BYTES
    with pytest.raises(SectionError) as caught:
        extract_section(text, "B")
    assert caught.value.message.endswith("Available headings:\nA")


def test_document_one_byte_past_8_mib_is_refused() -> None:
    text = "# A\n" + "x" * (SECTION_SOURCE_MAX_BYTES - 3)
    assert missing(text, "A") == SOURCE_TOO_LARGE == "Markdown document exceeds 8 MiB."


def test_document_size_counts_utf8_bytes() -> None:
    text = "# A\n" + "é" * (SECTION_SOURCE_MAX_BYTES // 2)
    assert len(text) < SECTION_SOURCE_MAX_BYTES
    assert missing(text, "A") == SOURCE_TOO_LARGE


def test_section_of_exactly_64_kib_is_whole() -> None:
    body = "# A\n" + "x" * (SECTION_OUTPUT_MAX_BYTES - 5) + "\n"
    assert len(body.encode("utf-8")) == SECTION_OUTPUT_MAX_BYTES
    assert extract_section(body + "# B\n", "A") == body


def test_section_one_byte_past_64_kib_is_truncated() -> None:
    body = "# A\n" + "x" * (SECTION_OUTPUT_MAX_BYTES - 4) + "\n"
    section = extract_section(body + "# B\n", "A")
    assert section == body[: SECTION_OUTPUT_MAX_BYTES - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER


def test_setext_paragraph_runs_over_several_lines() -> None:
    assert texts("sub\nOther\n-----") == ["sub Other"]


def test_longer_section_is_truncated_with_the_marker() -> None:
    body = "# A\n" + "界" * SECTION_OUTPUT_MAX_BYTES
    section = extract_section(body + "\n# B\n", "A")
    assert section.endswith(TRUNCATION_MARKER)
    assert len(section.encode("utf-8")) <= SECTION_OUTPUT_MAX_BYTES
    assert body.startswith(section[: -len(TRUNCATION_MARKER)])


def test_no_match_without_headings() -> None:
    assert missing("just text\n", "A") == "No matching heading: A. Available headings:\n"


def test_no_match_message_is_bounded_to_64_kib() -> None:
    text = "".join(f"# Heading number {index}\n" for index in range(10000))
    message = missing(text, "Absent")
    assert message.startswith(
        "No matching heading: Absent. Available headings:\nHeading number 0\n"
    )
    assert message.endswith(TRUNCATION_MARKER)
    assert len(message.encode("utf-8")) <= SECTION_OUTPUT_MAX_BYTES


def test_heading_offsets() -> None:
    found = parse_headings("text\n\n> ## Quoted\n")
    assert [(heading.start, heading.line_start) for heading in found] == [(8, 6)]


# --- what markdown-it-py reads as CommonMark does ---------------------------------------


def test_link_reference_definitions_count() -> None:
    assert texts("[ref]: /url\n\n# [Title][ref] and [ref]\n") == ["Title and ref"]
    assert headings("[ref]: /url\n===\n") == []  # a definition, not a setext heading


def test_a_closing_tag_line_does_not_hide_what_follows() -> None:
    assert texts("text\n</pre>\n# After\n") == ["After"]


def test_an_indented_atx_section_starts_at_its_hashes() -> None:
    assert extract_section("  # A\nbody\n", "A") == "# A\nbody\n"


def test_nul_reads_as_the_replacement_character() -> None:
    assert texts("# a\0b\n") == ["a\ufffdb"]
