"""The ``section`` built-in: one Markdown section, selected by the exact text of its heading.

Headings are found the way a CommonMark parser finds them, so that a ``# comment`` inside a
fenced code block, a ``---`` thematic break or an HTML comment never counts as a heading:

- block structure: block quotes and list items (with lazy paragraph continuation), fenced
  code (```` ``` ```` or ``~~~``, closed only by the same character at least as long),
  indented code, HTML blocks, thematic breaks, paragraphs;
- ATX headings (``#`` to ``######``, up to three spaces of indentation, optional closing
  ``#`` sequence) and setext headings (a paragraph underlined by ``=`` for level 1 or
  ``-`` for level 2);
- heading text is what a renderer would show as text: backslash escapes and entity
  references are decoded, code spans keep their contents without the backticks, emphasis
  delimiters that pair up are dropped, links and images keep their text, raw inline HTML
  is dropped, and line breaks inside a setext heading become one space.

Not modelled (rare in headings, documented rather than half-done): link reference
definitions (so ``[text][ref]`` and ``[text]`` stay literal) and extensions such as tables.
A leading byte order mark is skipped.

A section runs from its heading's first character to the start of the line of the next
heading of the same or a higher level (fewer or as many ``#``), else to the end of the
document, so nested subsections come along.
"""

from __future__ import annotations

import html
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from artifactize.domain.tools.commands.text_output import TEXT_BLOCK_MAX_BYTES, truncate_utf8

SECTION_SOURCE_MAX_BYTES = 8 * 1024 * 1024
SECTION_OUTPUT_MAX_BYTES = TEXT_BLOCK_MAX_BYTES
SOURCE_TOO_LARGE = "Markdown document exceeds 8 MiB."
NO_MATCH_PREFIX = "No matching heading: "

_BYTE_ORDER_MARK = "\ufeff"
_CODE_INDENT = 4
_TAB_STOP = 4


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


def parse_headings(text: str) -> list[Heading]:
    """Every heading of the document, in document order."""
    parser = _BlockParser()
    for line in _lines(text):
        parser.feed(line)
    parser.finish()
    return parser.headings


# --- lines and columns ---------------------------------------------------------------

_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n)?")


def _lines(text: str) -> Iterator[_Line]:
    """Lines without their terminators (LF, CRLF or CR), each with its start index."""
    position = 1 if text.startswith(_BYTE_ORDER_MARK) else 0
    if "\r" not in text:  # the common case, several times faster than the pattern
        for piece in text[position:].split("\n"):
            if position < len(text):
                yield _Line(piece, position)
            position += len(piece) + 1
        return
    while position < len(text):
        match = _LINE.match(text, position)
        assert match is not None  # the pattern matches the empty string
        yield _Line(match.group(1), position)
        position = match.end()


@dataclass(slots=True)
class _Line:
    """One source line and a cursor over it, measured in columns (tabs stop every 4).

    ``virtual`` holds columns left over from a tab that a container only partly consumed,
    as CommonMark requires: they still count as indentation for what follows.
    """

    text: str
    offset: int
    index: int = 0
    column: int = 0
    virtual: int = 0

    def indent(self) -> tuple[int, int]:
        """Columns of whitespace at the cursor, and the index of the next non-blank."""
        if not self.virtual and not self.text.startswith((" ", "\t"), self.index):
            return 0, self.index  # the common case, kept cheap
        width, column, index = self.virtual, self.column, self.index
        while index < len(self.text) and self.text[index] in " \t":
            step = 1 if self.text[index] == " " else _TAB_STOP - column % _TAB_STOP
            width, column, index = width + step, column + step, index + 1
        return width, index

    def is_blank(self) -> bool:
        return self.indent()[1] == len(self.text)

    def rest(self) -> str:
        return self.text[self.index :]

    def skip_columns(self, count: int) -> None:
        """Consume ``count`` columns of whitespace; a tab may be consumed only in part."""
        used = min(count, self.virtual)
        self.virtual -= used
        count -= used
        while count > 0 and self.index < len(self.text) and self.text[self.index] in " \t":
            step = 1 if self.text[self.index] == " " else _TAB_STOP - self.column % _TAB_STOP
            self.index += 1
            self.column += step
            if step > count:
                self.virtual = step - count
            count -= min(step, count)

    def skip_to(self, index: int) -> None:
        """Move to ``index``; whatever lies between counts in full, tabs included."""
        while self.index < index:
            tab = self.text[self.index] == "\t"
            self.column += _TAB_STOP - self.column % _TAB_STOP if tab else 1
            self.index += 1
        self.virtual = 0

    def column_at(self, index: int) -> int:
        """The column of ``index``, which lies after the cursor on a run of blanks."""
        column = self.column
        for char in self.text[self.index : index]:
            column += _TAB_STOP - column % _TAB_STOP if char == "\t" else 1
        return column

    def skip_chars(self, count: int) -> None:
        """Move past ``count`` marker characters (never tabs)."""
        self.index += count
        self.column += count
        self.virtual = 0


# --- block structure -----------------------------------------------------------------


@dataclass
class _Container:
    """An open block quote (``content_indent`` unused) or list item."""

    is_quote: bool
    content_indent: int = 0
    has_content: bool = True


@dataclass
class _Paragraph:
    start: int
    line_start: int
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Fence:
    char: str
    length: int


@dataclass(frozen=True)
class _HtmlBlock:
    end: re.Pattern[str] | None  # None: the block ends at a blank line


_Leaf = _Paragraph | _Fence | _HtmlBlock | None

# First characters that may open a container or a leaf other than a paragraph: a cheap
# test that spares most lines of prose every pattern below.
_CONTAINER_STARTS = (">", "-", "+", "*", *"0123456789")
_LEAF_STARTS = ("#", "`", "~", "<", "*", "-", "_")

_ATX = re.compile(r"(#{1,6})(?:[ \t]+(.*))?$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})(.*)$")
_SETEXT_UNDERLINE = re.compile(r"(=+|-+)[ \t]*$")
_THEMATIC_BREAK = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
# Group 1 is the start number of an ordered list item, None for a bullet.
_LIST_MARKER = re.compile(r"[-+*]|([0-9]{1,9})[.)]")

_HTML_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|"
    "details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|"
    "h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|"
    "noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|"
    "thead|title|tr|track|ul"
)
_TAG_NAME = r"[A-Za-z][A-Za-z0-9-]*"
_ATTRIBUTE = (
    r"[ \t\n]+[A-Za-z_:][A-Za-z0-9_.:-]*"
    r"(?:[ \t\n]*=[ \t\n]*(?:[^ \t\n\"'=<>`]+|'[^']*'|\"[^\"]*\"))?"
)
_OPEN_TAG = rf"<{_TAG_NAME}(?:{_ATTRIBUTE})*[ \t\n]*/?>"
_CLOSING_TAG = rf"</{_TAG_NAME}[ \t\n]*>"
# (start, end) of HTML block kinds 1-6; kind 7 is any complete tag alone on its line.
_HTML_BLOCK_KINDS: tuple[tuple[re.Pattern[str], re.Pattern[str] | None], ...] = (
    (
        re.compile(r"<(?:script|pre|style|textarea)(?:[ \t>]|$)", re.IGNORECASE),
        re.compile(r"</(?:script|pre|style|textarea)>", re.IGNORECASE),
    ),
    (re.compile(r"<!--"), re.compile(r"-->")),
    (re.compile(r"<\?"), re.compile(r"\?>")),
    (re.compile(r"<![A-Za-z]"), re.compile(r">")),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>")),
    (re.compile(rf"</?(?:{_HTML_BLOCK_TAGS})(?:[ \t]|/?>|$)", re.IGNORECASE), None),
)
_HTML_KIND_7 = re.compile(rf"(?:{_OPEN_TAG}|{_CLOSING_TAG})[ \t]*$")


@dataclass
class _BlockParser:
    """A line-at-a-time CommonMark block parser that keeps only what headings need.

    Only the innermost open container can hold an open leaf block, so one ``leaf`` slot is
    enough: closing or opening any container closes it.
    """

    containers: list[_Container] = field(default_factory=list)
    leaf: _Leaf = None
    headings: list[Heading] = field(default_factory=list)

    def feed(self, line: _Line) -> None:
        matched = self._match_containers(line)
        all_matched = matched == len(self.containers)
        if all_matched and isinstance(self.leaf, _Fence | _HtmlBlock):
            self._continue_verbatim(line, self.leaf)
            return
        if not all_matched and self._is_lazy_continuation(line):
            assert isinstance(self.leaf, _Paragraph)
            self.leaf.lines.append(line.text[line.indent()[1] :])
            return
        if not all_matched:
            del self.containers[matched:]
            self._close_leaf()
        paragraph_continues = isinstance(self.leaf, _Paragraph) and not line.is_blank()
        self._open_containers(line, paragraph_continues)
        self._leaf_line(line)
        if not line.is_blank():
            for container in self.containers:
                container.has_content = True

    def finish(self) -> None:
        self._close_leaf()

    # -- containers --

    def _match_containers(self, line: _Line) -> int:
        matched = 0
        for container in self.containers:
            if not self._continues(container, line):
                break
            matched += 1
        return matched

    @staticmethod
    def _continues(container: _Container, line: _Line) -> bool:
        width, index = line.indent()
        if container.is_quote:
            if width > 3 or index == len(line.text) or line.text[index] != ">":
                return False
            line.skip_to(index)
            line.skip_chars(1)
            line.skip_columns(1)
            return True
        if width >= container.content_indent:
            line.skip_columns(container.content_indent)
            return True
        # A blank line continues an item, except one that began with a blank line (cmark
        # checks the indentation first, so an indented blank line continues even that).
        return index == len(line.text) and container.has_content

    def _is_lazy_continuation(self, line: _Line) -> bool:
        """A line that only extends the open paragraph keeps unmatched containers open."""
        if not isinstance(self.leaf, _Paragraph) or line.is_blank():
            return False
        probe = _Line(line.text, line.offset, line.index, line.column, line.virtual)
        return not _starts_block(probe)

    def _open_containers(self, line: _Line, paragraph_continues: bool) -> None:
        while True:
            width, index = line.indent()
            if width > 3:
                return
            rest = line.text[index:]
            if not rest.startswith(_CONTAINER_STARTS):
                return
            if rest.startswith(">"):
                line.skip_to(index)
                line.skip_chars(1)
                line.skip_columns(1)
                self._push(_Container(is_quote=True))
            elif _THEMATIC_BREAK.match(rest) or not self._open_list_item(line, paragraph_continues):
                return
            paragraph_continues = False

    def _open_list_item(self, line: _Line, paragraph_continues: bool) -> bool:
        """Open a list item; interrupting a paragraph needs content and a bullet or ``1``."""
        width, index = line.indent()
        marker = _list_marker(line.text, index)
        if marker is None:
            return False
        size = len(marker.group())
        probe = _Line(line.text, line.offset, marker.end(), line.column_at(index) + size)
        blank_rest = probe.is_blank()
        if paragraph_continues and (blank_rest or not _starts_at_one(marker)):
            return False
        spaces = probe.indent()[0]
        if blank_rest or spaces > _CODE_INDENT:
            spaces = 1  # the content is indented code, or starts on a later line
        line.skip_to(index)
        line.skip_chars(size)
        line.skip_columns(spaces)
        self._push(_Container(False, width + size + spaces, has_content=not blank_rest))
        return True

    def _push(self, container: _Container) -> None:
        self._close_leaf()
        self.containers.append(container)

    # -- leaves --

    def _continue_verbatim(self, line: _Line, leaf: _Fence | _HtmlBlock) -> None:
        if isinstance(leaf, _Fence):
            width, index = line.indent()
            if width <= 3 and _closes_fence(line.text[index:], leaf):
                self.leaf = None
        elif leaf.end is None:
            if line.is_blank():
                self.leaf = None
        elif leaf.end.search(line.rest()):
            self.leaf = None

    def _leaf_line(self, line: _Line) -> None:
        start = line.offset + line.index
        width, index = line.indent()
        rest = line.text[index:]
        paragraph = self.leaf if isinstance(self.leaf, _Paragraph) else None
        if not rest:
            self._close_leaf()
        elif width >= _CODE_INDENT:
            if paragraph is not None:
                paragraph.lines.append(rest)
        elif paragraph is not None and _SETEXT_UNDERLINE.match(rest):
            self.leaf = None
            self._add_heading(1 if rest[0] == "=" else 2, paragraph.lines, paragraph)
        elif not self._leaf_start(rest, start, line.offset, paragraph is not None):
            if paragraph is not None:
                paragraph.lines.append(rest)
            else:
                self.leaf = _Paragraph(start, line.offset, [rest])

    def _leaf_start(self, rest: str, start: int, line_start: int, paragraph_open: bool) -> bool:
        """Open the block ``rest`` starts, if any; False means it is paragraph text."""
        if not rest.startswith(_LEAF_STARTS):
            return False
        atx = _ATX.match(rest)
        if atx:
            self._close_leaf()
            content = _ATX_CLOSING.sub("", (atx.group(2) or "").strip(" \t"))
            self.headings.append(
                Heading(len(atx.group(1)), heading_text(content), start, line_start)
            )
            return True
        fence = _fence_start(rest)
        if fence is not None:
            self._close_leaf()
            self.leaf = fence
            return True
        html_block = _html_block_start(rest, paragraph_open)
        if html_block is not None:
            self._close_leaf()
            if html_block.end is None or not html_block.end.search(rest):
                self.leaf = html_block
            return True
        if _THEMATIC_BREAK.match(rest):
            self._close_leaf()
            return True
        return False

    def _add_heading(self, level: int, lines: list[str], paragraph: _Paragraph) -> None:
        content = "\n".join(lines).rstrip(" \t")
        self.headings.append(
            Heading(level, heading_text(content), paragraph.start, paragraph.line_start)
        )

    def _close_leaf(self) -> None:
        self.leaf = None


def _list_marker(text: str, index: int) -> re.Match[str] | None:
    """A bullet or ordered list marker at ``index``, followed by a blank or the line end."""
    marker = _LIST_MARKER.match(text, index)
    if marker is None:
        return None
    after = marker.end()
    if after < len(text) and text[after] not in " \t":
        return None
    return marker


def _starts_at_one(marker: re.Match[str]) -> bool:
    return marker.group(1) is None or int(marker.group(1)) == 1


def _starts_block(line: _Line) -> bool:
    """Whether ``line`` (at its cursor, past the containers it matched) opens a block.

    Used for lazy continuation: the line is outside the open paragraph's containers, so
    any list item or HTML block may start there (as in cmark), and a setext underline
    cannot: ``---`` is a thematic break, ``===`` paragraph text.
    """
    width, index = line.indent()
    if width >= _CODE_INDENT:
        return False
    rest = line.text[index:]
    if not rest.startswith(_CONTAINER_STARTS + _LEAF_STARTS):
        return False
    if rest.startswith(">") or _THEMATIC_BREAK.match(rest) or _ATX.match(rest):
        return True
    if _fence_start(rest) is not None or _html_block_start(rest, False) is not None:
        return True
    return _list_marker(line.text, index) is not None


def _fence_start(rest: str) -> _Fence | None:
    match = _FENCE_OPEN.match(rest)
    if match is None:
        return None
    run = match.group(1)
    if run[0] == "`" and "`" in match.group(2):
        return None
    return _Fence(run[0], len(run))


def _closes_fence(rest: str, fence: _Fence) -> bool:
    run = len(rest) - len(rest.lstrip(fence.char))
    return run >= fence.length and not rest[run:].strip(" \t")


def _html_block_start(rest: str, paragraph_open: bool) -> _HtmlBlock | None:
    if not rest.startswith("<"):
        return None
    for start, end in _HTML_BLOCK_KINDS:
        if start.match(rest):
            return _HtmlBlock(end)
    if paragraph_open or not _HTML_KIND_7.match(rest):
        return None
    return _HtmlBlock(None)


# --- inline text -----------------------------------------------------------------------

_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_PLAIN_RUN = re.compile(r"[^`\\&<*_\[\]!\n]+")
_BACKTICKS = re.compile(r"`+")
_ENTITY = re.compile(r"&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});")
_URI_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\x00-\x20]*)>")
_EMAIL_AUTOLINK = re.compile(
    r"<([A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)>"
)
_ANGLE_DESTINATION = re.compile(r"<(?:[^<>\n\\]|\\.)*>")
_INLINE_HTML = re.compile(
    rf"{_OPEN_TAG}|{_CLOSING_TAG}|<!-->|<!--->|<!--.*?-->|<\?.*?\?>|<![A-Za-z][^>]*>"
    r"|<!\[CDATA\[.*?\]\]>",
    re.DOTALL,
)


def heading_text(content: str) -> str:
    """The text a heading shows: inline syntax removed, text and code contents kept."""
    return _InlineParser(content).parse()


@dataclass
class _Delimiter:
    """A run of ``*`` or ``_``; ``count`` shrinks as emphasis pairs consume it."""

    char: str
    count: int
    original: int
    can_open: bool
    can_close: bool
    order: int
    removed: bool = False


@dataclass
class _Bracket:
    """A ``[`` or ``![`` that may open a link; ``first_delimiter`` bounds its emphasis."""

    node: int
    first_delimiter: int
    is_image: bool
    active: bool = True


@dataclass
class _InlineParser:
    """CommonMark inline parsing reduced to the text a heading shows.

    Nodes are literal strings or delimiter runs; matched emphasis only shrinks runs, and a
    link's brackets become empty strings, so the text is the concatenation at the end.
    """

    source: str
    nodes: list[str | _Delimiter] = field(default_factory=list)
    delimiters: list[_Delimiter] = field(default_factory=list)
    brackets: list[_Bracket] = field(default_factory=list)
    backtick_runs: dict[int, list[int]] = field(default_factory=dict)

    handlers: dict[str, Callable[[int], int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.handlers = {
            "`": self._code_span,
            "\\": self._escape,
            "&": self._entity,
            "<": self._angle,
            "[": self._open_bracket,
            "!": self._bang,
            "]": self._close_bracket,
            "\n": self._line_break,
        }
        for run in _BACKTICKS.finditer(self.source):
            self.backtick_runs.setdefault(len(run.group()), []).append(run.start())

    def parse(self) -> str:
        position = 0
        while position < len(self.source):
            position = self._step(position)
        _process_emphasis([d for d in self.delimiters if not d.removed])
        return "".join(
            node if isinstance(node, str) else node.char * node.count for node in self.nodes
        )

    def _step(self, position: int) -> int:
        plain = _PLAIN_RUN.match(self.source, position)
        if plain:
            text = plain.group()
            if self.source.startswith("\n", plain.end()):
                text = text.rstrip(" ")  # spaces before a line break are not shown
            self.nodes.append(text)
            return plain.end()
        handler = self.handlers.get(self.source[position], self._delimiter_run)
        return handler(position)

    def _code_span(self, position: int) -> int:
        opening = _BACKTICKS.match(self.source, position)
        assert opening is not None  # called on a backtick
        run = len(opening.group())
        starts = self.backtick_runs.get(run, [])
        index = bisect_left(starts, position + run)
        if index == len(starts):
            self.nodes.append("`" * run)
            return position + run
        closing = starts[index]
        content = self.source[position + run : closing].replace("\n", " ")
        if len(content) >= 2 and content[0] == content[-1] == " " and content.strip(" "):
            content = content[1:-1]
        self.nodes.append(content)
        return closing + run

    def _escape(self, position: int) -> int:
        following = self.source[position + 1 : position + 2]
        if following and following in _ASCII_PUNCTUATION:
            self.nodes.append(following)
            return position + 2
        if following == "\n":  # a hard line break shows as one space, like a soft one
            return self._line_break(position + 1)
        self.nodes.append("\\")
        return position + 1

    def _entity(self, position: int) -> int:
        match = _ENTITY.match(self.source, position)
        if match is None:
            self.nodes.append("&")
            return position + 1
        self.nodes.append(html.unescape(match.group()))
        return match.end()

    def _angle(self, position: int) -> int:
        autolink = _URI_AUTOLINK.match(self.source, position) or _EMAIL_AUTOLINK.match(
            self.source, position
        )
        if autolink:
            self.nodes.append(autolink.group(1))
            return autolink.end()
        tag = _INLINE_HTML.match(self.source, position)
        if tag:
            return tag.end()  # raw HTML is markup, not text
        self.nodes.append("<")
        return position + 1

    def _line_break(self, position: int) -> int:
        self.nodes.append(" ")
        following = position + 1
        while following < len(self.source) and self.source[following] in " \t":
            following += 1
        return following

    def _bang(self, position: int) -> int:
        if self.source.startswith("![", position):
            return self._push_bracket(position, "![", is_image=True)
        self.nodes.append("!")
        return position + 1

    def _open_bracket(self, position: int) -> int:
        return self._push_bracket(position, "[", is_image=False)

    def _push_bracket(self, position: int, text: str, is_image: bool) -> int:
        self.brackets.append(_Bracket(len(self.nodes), len(self.delimiters), is_image))
        self.nodes.append(text)
        return position + len(text)

    def _close_bracket(self, position: int) -> int:
        if not self.brackets:
            self.nodes.append("]")
            return position + 1
        opener = self.brackets.pop()
        end = _inline_link_end(self.source, position + 1) if opener.active else None
        if end is None:
            self.nodes.append("]")
            return position + 1
        inner = [d for d in self.delimiters[opener.first_delimiter :] if not d.removed]
        _process_emphasis(inner)
        for delimiter in inner:
            delimiter.removed = True
        self.nodes[opener.node] = ""
        if not opener.is_image:  # links cannot contain links
            for earlier in self.brackets:
                if not earlier.is_image:
                    earlier.active = False
        return end

    def _delimiter_run(self, position: int) -> int:
        char = self.source[position]
        end = position
        while end < len(self.source) and self.source[end] == char:
            end += 1
        before = self.source[position - 1] if position > 0 else " "
        after = self.source[end] if end < len(self.source) else " "
        left = _flanking(after, before)
        right = _flanking(before, after)
        if char == "*":
            can_open, can_close = left, right
        else:
            can_open = left and (not right or _is_punctuation(before))
            can_close = right and (not left or _is_punctuation(after))
        count = end - position
        delimiter = _Delimiter(char, count, count, can_open, can_close, len(self.delimiters))
        self.delimiters.append(delimiter)
        self.nodes.append(delimiter)
        return end


def _flanking(toward: str, away: str) -> bool:
    """Left-flanking when called (after, before); right-flanking when called (before, after)."""
    if _is_whitespace(toward):
        return False
    return not _is_punctuation(toward) or _is_whitespace(away) or _is_punctuation(away)


def _is_whitespace(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) == "Zs"


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char)[0] in "PS"


def _process_emphasis(delimiters: list[_Delimiter]) -> None:
    """Pair emphasis delimiters (CommonMark's "process emphasis"), shrinking their counts.

    ``openers_bottom`` keeps the search linear: once no opener was found for a kind of
    closer, later closers of that kind never look below that point again.
    """
    live = list(delimiters)
    previous = list(range(-1, len(live) - 1))
    following = [*range(1, len(live)), -1]
    openers_bottom: dict[tuple[str, bool, int], int] = {}

    def unlink(index: int) -> None:
        before, after = previous[index], following[index]
        if before >= 0:
            following[before] = after
        if after >= 0:
            previous[after] = before

    current = 0 if live else -1
    while current >= 0:
        closer = live[current]
        if not closer.can_close:
            current = following[current]
            continue
        key = (closer.char, closer.can_open, closer.original % 3)
        opener = previous[current]
        while opener > openers_bottom.get(key, -1) and not _pairs(live[opener], closer):
            opener = previous[opener]
        if opener > openers_bottom.get(key, -1):
            used = 2 if live[opener].count >= 2 and closer.count >= 2 else 1
            live[opener].count -= used
            closer.count -= used
            between = following[opener]
            while between != current:  # delimiters inside the emphasis stay literal
                unlink(between)
                between = following[between]
            if live[opener].count == 0:
                unlink(opener)
            if closer.count == 0:
                unlink(current)
                current = following[current]
        else:
            openers_bottom[key] = previous[current]
            if not closer.can_open:
                unlink(current)
            current = following[current]


def _pairs(opener: _Delimiter, closer: _Delimiter) -> bool:
    if opener.char != closer.char or not opener.can_open:
        return False
    both_roles = opener.can_close or closer.can_open
    total = opener.original + closer.original
    return not (both_roles and total % 3 == 0 and (opener.original % 3 or closer.original % 3))


def _inline_link_end(source: str, position: int) -> int | None:
    """The index after an inline link tail ``(destination "title")`` at ``position``."""
    if not source.startswith("(", position):
        return None
    index = _destination_end(source, _skip_space(source, position + 1))
    if index is None:
        return None
    spaced = _skip_space(source, index)
    if spaced > index and spaced < len(source) and source[spaced] in "\"'(":
        title_end = _title_end(source, spaced)
        if title_end is None:
            return None
        spaced = _skip_space(source, title_end)
    return spaced + 1 if source.startswith(")", spaced) else None


def _skip_space(source: str, index: int) -> int:
    while index < len(source) and source[index] in " \t\n":
        index += 1
    return index


def _destination_end(source: str, index: int) -> int | None:
    if source.startswith("<", index):
        angle = _ANGLE_DESTINATION.match(source, index)
        return None if angle is None else angle.end()
    return _bare_destination_end(source, index)


def _bare_destination_end(source: str, index: int) -> int | None:
    depth = 0
    while index < len(source):
        char = source[index]
        if char == "\\" and index + 1 < len(source) and source[index + 1] in _ASCII_PUNCTUATION:
            index += 2
            continue
        if char.isspace() or ord(char) < 0x20 or ord(char) == 0x7F:
            break
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                break
            depth -= 1
        index += 1
    return index if depth == 0 else None


def _title_end(source: str, index: int) -> int | None:
    closing = ")" if source[index] == "(" else source[index]
    index += 1
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 2
            continue
        if char == closing:
            return index + 1
        if closing == ")" and char == "(":
            return None
        index += 1
    return None
