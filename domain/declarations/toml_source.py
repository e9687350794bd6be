"""Parse a ``.artf`` TOML document and locate key paths in its source for error messages.

``tomllib`` gives line numbers only for syntax errors, so a small scanner maps every key
path it can see (tables, dotted keys, inline tables) to the line where it is written.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import tomli  # tomllib's upstream, built with mypyc: the same parser, 3x faster

from artifactize.domain.declarations.diagnostics import KeyProblems, join_key

_SYNTAX_POSITION = re.compile(r"^(?P<msg>.*) \(at line (?P<line>\d+), column (?P<col>\d+)\)$")
_END_OF_DOCUMENT = re.compile(r"^(?P<msg>.*) \(at end of document\)$")


@dataclass(frozen=True)
class TomlSyntaxError(Exception):
    message: str
    line: int | None
    column: int | None


def parse_toml(text: str) -> dict[str, Any]:
    """Parse TOML; raises ``TomlSyntaxError`` with the line and column tomllib gives."""
    try:
        return tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        match = _SYNTAX_POSITION.match(str(exc))
        if match is None:
            end = _END_OF_DOCUMENT.match(str(exc))
            if end is None:
                raise TomlSyntaxError(str(exc), None, None) from None
            # tomllib gives no position there: it is the text's end
            line = text.count("\n") + 1
            column = len(text) - (text.rfind("\n") + 1) + 1
            raise _located(text, end["msg"], line, column) from None
        raise _located(text, match["msg"], int(match["line"]), int(match["col"])) from None


def _located(text: str, message: str, line: int, column: int) -> TomlSyntaxError:
    """tomllib notices an unclosed array where the next thing fails to parse, often a later
    line (or the end): the mistake is where the bracket opened, so that is the location.
    A failure on a line that starts a table or a key, inside an array opened earlier, is
    that unclosed array too."""
    opened = open_bracket_before(text, line, column)
    if opened is None:
        return TomlSyntaxError(message, line, column)
    if message.startswith(UNCLOSED):
        return TomlSyntaxError(message, opened[0], opened[1])
    outermost = opened[2]
    if outermost[0] != line:
        row = text.split("\n")[line - 1] if line - 1 < text.count("\n") + 1 else ""
        if _STARTS_TABLE_OR_KEY.match(row):
            return TomlSyntaxError(UNCLOSED_BEFORE.format(line=line), outermost[0], outermost[1])
        message += INSIDE_OPEN.format(line=outermost[0])
    return TomlSyntaxError(message, line, column)


_STARTS_TABLE_OR_KEY = re.compile(r"^\s*(\[|[A-Za-z0-9_.\"'-]+\s*=)")
UNCLOSED_BEFORE = "Unclosed array or inline table (a table or key follows at line {line})"
UNCLOSED = "Unclosed"
INSIDE_OPEN = " (inside the array or inline table opened at line {line}: is it closed?)"


def open_bracket_before(
    text: str, line: int, column: int
) -> tuple[int, int, tuple[int, int]] | None:
    """(line, column) of the innermost value array or inline table still open at ``line``,
    ``column`` (1-based), with the (line, column) of the outermost one; or None. A small scanner: strings and comments are skipped, and a
    ``[`` that starts a line outside any value is a table header, not an array."""
    lines = text.split("\n")
    end = sum(len(item) + 1 for item in lines[: line - 1]) + column - 1
    stack: list[tuple[int, int]] = []
    row, row_start, index = 1, 0, 0
    while index < min(end, len(text)):
        char = text[index]
        if char == "\n":
            row, row_start = row + 1, index + 1
        elif char == "#":
            newline = text.find("\n", index)
            index = newline if newline != -1 else len(text)
            continue  # the newline is counted next
        elif char in "\"'":
            after = _string_end(text, index)
            newlines = text.count("\n", index, after)  # multi-line strings
            if newlines:
                row, row_start = row + newlines, text.rfind("\n", index, after) + 1
            index = after
            continue
        elif char == "[" and not stack and not text[row_start:index].strip():
            newline = text.find("\n", index)  # a table header, not an array
            index = newline if newline != -1 else len(text)
            continue
        elif char in "[{":
            stack.append((row, index - row_start + 1))
        elif char in "]}" and stack:
            stack.pop()
        index += 1
    return (*stack[-1], stack[0]) if stack else None


def _string_end(text: str, start: int) -> int:
    """The index after the TOML string starting at ``start`` (basic, literal, multi-line)."""
    quote = text[start]
    if text.startswith(quote * 3, start):
        close = text.find(quote * 3, start + 3)
        return len(text) if close == -1 else close + 3
    index = start + 1
    while index < len(text) and text[index] not in (quote, "\n"):
        index += 2 if quote == '"' and text[index] == "\\" else 1
    return index + 1


def reject_non_json_values(value: Any, key_path: str, problems: KeyProblems) -> None:
    """TOML dates, times and non-finite floats have no JSON form: refuse them anywhere."""
    if _all_json_values(value):
        return  # the common case, checked without building a key path for every value
    _report_non_json_values(value, key_path, problems)


def _all_json_values(value: Any) -> bool:
    """True when nothing in ``value`` is a date, a time or a non-finite float."""
    pending = [value]
    while pending:
        item = pending.pop()
        cls = type(item)
        if cls is str or cls is int or cls is bool:
            continue
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dt.date | dt.time) or (
            isinstance(item, float) and not math.isfinite(item)
        ):
            return False
    return True


def _report_non_json_values(value: Any, key_path: str, problems: KeyProblems) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _report_non_json_values(item, join_key(key_path, key), problems)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _report_non_json_values(item, join_key(key_path, index), problems)
    elif isinstance(value, dt.date | dt.time):
        problems.add(
            key_path,
            "TOML date/time values are not allowed (JSON has no equivalent); quote the value",
        )
    elif isinstance(value, float) and not math.isfinite(value):
        problems.add(key_path, "inf and nan are not allowed (JSON has no equivalent)")


# --- key locator -----------------------------------------------------------------------

_BARE = re.compile(r"[A-Za-z0-9_-]+")


class KeyLocator:
    """Maps key paths (``evals.review.profile.timeout_ms``) to 1-based source lines."""

    def __init__(self, text: str) -> None:
        self._lines: dict[str, int] = {}
        with contextlib.suppress(IndexError, ValueError):  # a line is a courtesy, not a must
            _Scanner(text, self._lines).scan()

    def line_of(self, key_path: str) -> int | None:
        """The line of the longest prefix of ``key_path`` that the source spells out."""
        path = _strip_indices(key_path)
        while path:
            if path in self._lines:
                return self._lines[path]
            cut = max(path.rfind("."), 0)
            path = path[:cut]
        return None


def _strip_indices(key_path: str) -> str:
    return re.sub(r"\[\d+\]", "", key_path)


class _Scanner:
    """A lenient tokenizer over TOML that tomllib has already accepted."""

    def __init__(self, text: str, lines: dict[str, int]) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.lines = lines

    def record(self, path: str, line: int) -> None:
        self.lines.setdefault(path, line)

    def scan(self) -> None:
        table = ""
        while self.pos < len(self.text):
            self.skip_blank()
            if self.pos >= len(self.text):
                break
            ch = self.text[self.pos]
            if ch == "[":
                table = self.header()
            else:
                self.key_value(table)

    def skip_blank(self) -> None:
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "\n":
                self.line += 1
                self.pos += 1
            elif ch in " \t\r,":
                self.pos += 1
            elif ch == "#":
                while self.pos < len(self.text) and self.text[self.pos] != "\n":
                    self.pos += 1
            else:
                break

    def header(self) -> str:
        self.pos += 2 if self.text.startswith("[[", self.pos) else 1
        start_line = self.line
        path = self.dotted_key("")
        self.skip_inline_space()
        while self.pos < len(self.text) and self.text[self.pos] == "]":
            self.pos += 1
        self.record(path, start_line)
        return path

    def skip_inline_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def dotted_key(self, base: str) -> str:
        path = base
        while True:
            self.skip_inline_space()
            key = self.key_part()
            path = join_key(path, key)
            self.skip_inline_space()
            if self.pos < len(self.text) and self.text[self.pos] == ".":
                self.pos += 1
                continue
            return path

    def key_part(self) -> str:
        ch = self.text[self.pos]
        if ch in "\"'":
            return self.string_token()
        match = _BARE.match(self.text, self.pos)
        if match is None:
            raise ValueError(f"unexpected {ch!r}")
        self.pos = match.end()
        return match.group()

    def key_value(self, table: str) -> None:
        line = self.line
        path = self.dotted_key(table)
        self.record(path, line)
        prefix = path
        while "." in prefix[len(table) + 1 :]:  # dotted keys: `profile.kind = ...` shows `profile`
            prefix = prefix[: prefix.rfind(".")]
            self.record(prefix, line)
        self.skip_inline_space()
        if self.pos < len(self.text) and self.text[self.pos] == "=":
            self.pos += 1
        self.value(path)

    def value(self, path: str) -> None:
        self.skip_blank()
        ch = self.text[self.pos]
        if ch == "{":
            self.pos += 1
            self.inline_table(path)
        elif ch == "[":
            self.pos += 1
            self.array(path)
        elif ch in "\"'":
            self.string_token()
        else:
            while self.pos < len(self.text) and self.text[self.pos] not in ",]}\n#":
                self.pos += 1

    def inline_table(self, path: str) -> None:
        while True:
            self.skip_blank()
            if self.text[self.pos] == "}":
                self.pos += 1
                return
            self.key_value(path)

    def array(self, path: str) -> None:
        for _ in self._elements():
            self.value(path)

    def _elements(self) -> Iterator[None]:
        while True:
            self.skip_blank()
            if self.text[self.pos] == "]":
                self.pos += 1
                return
            yield None

    def string_token(self) -> str:
        quote_char = self.text[self.pos]
        triple = self.text.startswith(quote_char * 3, self.pos)
        delimiter = quote_char * 3 if triple else quote_char
        self.pos += len(delimiter)
        start = self.pos
        while not self.text.startswith(delimiter, self.pos):
            ch = self.text[self.pos]
            if ch == "\\" and quote_char == '"':
                if self.text.startswith("\n", self.pos + 1):  # a line-ending backslash
                    self.line += 1
                self.pos += 2
                continue
            if ch == "\n":
                self.line += 1
            self.pos += 1
        raw = self.text[start : self.pos]
        self.pos += len(delimiter)
        if triple:
            while self.text.startswith(quote_char, self.pos):  # up to two extra quotes
                self.pos += 1
        return raw if quote_char == "'" else _unescape_basic(raw)


def _unescape_basic(raw: str) -> str:
    if "\\" not in raw:
        return raw
    try:
        parsed: dict[str, str] = tomli.loads(f'k = "{raw}"')
        return parsed["k"]
    except tomli.TOMLDecodeError:
        return raw
