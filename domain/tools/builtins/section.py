"""The ``section`` built-in: one Markdown section, selected by the exact text of its heading.

Headings are found by markdown-it-py's CommonMark parser, so that a ``# comment`` inside a
fenced code block, a ``---`` thematic break or an HTML comment never counts as a heading,
and headings inside block quotes and list items do. The document is parsed once for its
block structure only; each heading's content is then parsed inline and reduced to what a
renderer shows as text: backslash escapes and entity references decoded, code spans
without their backticks, emphasis delimiters that pair up dropped, links and images
(alt text) keeping their text, raw inline HTML dropped, line breaks (in a setext heading)
one space. Link reference definitions anywhere in the document count, as CommonMark says.
Containers nested more than 20 deep are not looked into (markdown-it's CommonMark preset
bound, which keeps its recursion bounded). A leading byte order mark is skipped.

A section runs from its heading's first character to the start of the line of the next
heading of the same or a higher level (fewer or as many ``#``), else to the end of the
document, so nested subsections come along.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from artifactize.domain.tools.commands.text_output import TEXT_BLOCK_MAX_BYTES, truncate_utf8

SECTION_SOURCE_MAX_BYTES = 8 * 1024 * 1024
SECTION_OUTPUT_MAX_BYTES = TEXT_BLOCK_MAX_BYTES
SOURCE_TOO_LARGE = "Markdown document exceeds 8 MiB."
NO_MATCH_PREFIX = "No matching heading: "

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_BYTE_ORDER_MARK = "\ufeff"
_LINE_END = re.compile(r"\r\n|\r|\n")
_TEXT_TOKENS = ("text", "text_special", "code_inline")
_BREAK_TOKENS = ("softbreak", "hardbreak")


class SectionError(ValueError):
    """A section that cannot be returned; the message is what the reviewer reads."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Heading:
    """A heading: its level (1-6), its text, and where it starts in the document.

    ``start`` is the index of its first character (after any block quote or list marker);
    ``line_start`` is the index of the line holding that character, where a preceding
    section ends.
    """

    level: int
    text: str
    start: int
    line_start: int


def extract_section(text: str, heading: str) -> str:
    """The section under the first heading whose text equals ``heading`` exactly.

    Raises ``SectionError`` for a document over 8 MiB, or when no heading matches; that
    message lists every heading so the caller can pick one. Both texts are capped at 64 KiB.
    """
    if len(text.encode("utf-8")) > SECTION_SOURCE_MAX_BYTES:
        raise SectionError(SOURCE_TOO_LARGE)
    headings = parse_headings(text)
    for index, candidate in enumerate(headings):
        if candidate.text == heading:
            end = _section_end(text, headings[index + 1 :], candidate.level)
            return truncate_utf8(text[candidate.start : end], SECTION_OUTPUT_MAX_BYTES)
    raise SectionError(no_match_message(heading, headings))


def no_match_message(heading: str, headings: list[Heading]) -> str:
    listing = "\n".join(candidate.text for candidate in headings)
    message = f"{NO_MATCH_PREFIX}{heading}. Available headings:\n{listing}"
    return truncate_utf8(message, SECTION_OUTPUT_MAX_BYTES)


def _section_end(text: str, following: list[Heading], level: int) -> int:
    for candidate in following:
        if candidate.level <= level:
            return candidate.line_start
    return len(text)


def _parsers() -> tuple[MarkdownIt, MarkdownIt]:
    """A block-only parser (no inline pass over the whole document: only headings need
    one) and a full one for the headings' contents. Built per call (under a millisecond),
    so calls on several threads share nothing; imported here, on the first ``section``
    call, because markdown-it-py takes longer to import than the CLI needs to start."""
    from markdown_it import MarkdownIt

    blocks = MarkdownIt("commonmark").disable(["inline", "text_join"])
    return blocks, MarkdownIt("commonmark")


def parse_headings(text: str) -> list[Heading]:
    """Every heading of the document, in document order."""
    offset = 1 if text.startswith(_BYTE_ORDER_MARK) else 0
    source = text[offset:]
    blocks, inline = _parsers()
    env: dict[str, Any] = {}
    tokens = blocks.parse(source, env)
    lines = _line_starts(source)
    headings: list[Heading] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        content = tokens[index + 1].content
        line = token.map[0]
        line_text = source[lines[line] : lines[line + 1]].rstrip("\r\n")
        column = _heading_column(line_text, token.markup, content)
        headings.append(
            Heading(
                level=int(token.tag[1]),
                text=_inline_text(inline.parseInline(content, env)),
                start=offset + lines[line] + column,
                line_start=offset + lines[line],
            )
        )
    return headings


def heading_text(content: str) -> str:
    """The text a renderer shows for a heading's raw ``content``."""
    return _inline_text(_parsers()[1].parseInline(content))


def _line_starts(source: str) -> list[int]:
    """Where each line starts (LF, CRLF or CR end a line, as markdown-it counts them), and
    the end of the text last."""
    starts = [0]
    starts.extend(match.end() for match in _LINE_END.finditer(source))
    starts.append(len(source))
    return starts


def _heading_column(line: str, markup: str, content: str) -> int:
    """Where in its line a heading starts, after any block quote or list marker: an ATX
    heading at its first ``#`` (no container marker holds one); a setext heading at its
    content's first line, which ends the line but for trailing blanks."""
    if markup.startswith("#"):
        return line.index("#")
    first = content.split("\n", 1)[0].rstrip(" \t")
    stripped = line.replace("\0", "\ufffd").rstrip(" \t")  # as markdown-it normalizes it
    if first and stripped.endswith(first):
        return len(stripped) - len(first)
    return len(line) - len(line.lstrip(" \t>"))  # not reached for text markdown-it kept


def _inline_text(tokens: list[Token]) -> str:
    parts: list[str] = []
    stack = [iter(tokens[0].children or [])] if tokens else []
    while stack:
        token = next(stack[-1], None)
        if token is None:
            stack.pop()
        elif token.type in _TEXT_TOKENS:
            parts.append(token.content)
        elif token.type in _BREAK_TOKENS:
            parts.append(" ")
        elif token.type == "image":  # its alt text, as the renderer writes it
            stack.append(iter(token.children or []))
    return "".join(parts)
