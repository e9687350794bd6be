"""The ``read`` built-in: one page of complete original lines, decoded only where asked.

Lines before the page are counted, never decoded, so binary data before the page does not
matter; the page holds at most 64 KiB of whole lines with their terminators (LF, CRLF and
a BOM survive), so concatenating ``text`` values reproduces the bytes of the range.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.locations import SPECIAL_REFUSED, open_location
from artifactize.domain.tools.results import ToolError, ToolResult, bounded_json_result
from artifactize.ports.filesystem import EntryKind, FileHandle

READ_PAGE_MAX_BYTES = 64 * 1024
READ_DEFAULT_LIMIT = 80
READ_MAX_LIMIT = 500
_CHUNK = 1024 * 1024

NOT_A_FILE = "Reading requires a regular file; list the directory first."
NUL_REFUSED = "Binary text (NUL) cannot be read."
INVALID_UTF8 = "Artifact contains invalid UTF-8 in the requested lines."


@dataclass
class _Reader:
    """Sequential line access over a file handle, with a byte buffer.

    The unread part of the buffer starts at ``start``: taking a line moves it instead of
    copying the rest of the buffer (up to a 1 MiB chunk) once per line."""

    handle: FileHandle
    buffer: bytes = b""
    start: int = 0
    eof: bool = False

    def fill(self) -> bool:
        if self.eof:
            return False
        chunk = self.handle.read(_CHUNK)
        if not chunk:
            self.eof = True
            return False
        self.buffer = self.buffer[self.start :] + chunk if self.start else self.buffer + chunk
        self.start = 0
        return True

    def skip_lines(self, count: int, check: Callable[[], None]) -> tuple[int, bool]:
        """Drop ``count`` lines without decoding them.

        Returns the lines dropped and whether a partial (unterminated) line was pending when
        the file ended; chunks are discarded as they are counted, so memory stays bounded.
        """
        if self.start:
            self.buffer, self.start = self.buffer[self.start :], 0
        skipped = 0
        pending = False
        while skipped < count:
            if not self.buffer and not self.fill():
                return skipped, pending
            newlines = self.buffer.count(b"\n")
            if skipped + newlines < count:
                skipped += newlines
                pending = not self.buffer.endswith(b"\n")
                self.buffer = b""
                check()
                continue
            position = -1
            for _ in range(count - skipped):
                position = self.buffer.find(b"\n", position + 1)
            self.start = position + 1
            skipped = count
        return skipped, False

    def next_line(self, budget: int) -> bytes | None:
        """The next line (terminator included) if it fits ``budget``; b"" at EOF.

        None means the line is longer than the budget: it is never read whole.
        """
        while True:
            start = self.start
            end = self.buffer.find(b"\n", start, start + budget)  # at most budget bytes
            if end >= 0:
                self.start = end + 1
                return self.buffer[start : end + 1]
            if len(self.buffer) - start > budget:
                return None
            if not self.fill():
                line, self.buffer, self.start = self.buffer[self.start :], b"", 0
                return line

    def whole_lines(self, count: int, budget: int) -> bytes:
        """Up to ``count`` whole lines (terminators included) of at most ``budget`` bytes in
        all, from what the buffer already holds, without taking them; b"" when none."""
        region = self.buffer[self.start : self.start + budget]
        parts = region.split(b"\n", count)  # the last part follows the last newline taken
        return region[: len(region) - len(parts[-1])]

    def at_end(self) -> bool:
        return self.start >= len(self.buffer) and not self.fill()


def _decoded_lines(block: bytes) -> list[str] | None:
    """The lines of ``block`` (whole lines), decoded in one step; None when a NUL or invalid
    UTF-8 is among them, for the line-by-line reading to refuse at the line that has it.

    UTF-8 never encodes another character with the byte of LF, so the decoded text splits
    into the very lines the bytes do."""
    if b"\x00" in block:
        return None
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return [line + "\n" for line in text.split("\n")[:-1]]


def _decode(line: bytes) -> str:
    if b"\x00" in line:
        raise ToolError(NUL_REFUSED)
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(INVALID_UTF8) from None


def read_page(
    handle: FileHandle, offset: int, limit: int, check: Callable[[], None]
) -> dict[str, Any]:
    """The page fields of a read result (everything but the ownership metadata)."""
    reader = _Reader(handle)
    skipped, partial = reader.skip_lines(offset - 1, check)
    if skipped < offset - 1:
        total = skipped + (1 if partial else 0)
        return _page([], offset, complete=True, total=total)
    lines: list[dict[str, Any]] = []
    used = 0
    # the whole lines the buffer holds already are decoded at once (a page of a small file
    # is one block); the rest, and any line with a NUL or invalid UTF-8, line by line
    if reader.start >= len(reader.buffer):
        reader.fill()
    block = reader.whole_lines(limit, READ_PAGE_MAX_BYTES)
    decoded = _decoded_lines(block) if block else None
    if decoded is not None:
        lines = [{"number": offset + index, "text": text} for index, text in enumerate(decoded)]
        reader.start += len(block)
        used = len(block)
    while len(lines) < limit and used < READ_PAGE_MAX_BYTES:
        line = reader.next_line(READ_PAGE_MAX_BYTES - used)
        if line is None:
            if not lines:
                raise ToolError(
                    f"Artifact line {offset} exceeds the {READ_PAGE_MAX_BYTES}-byte read limit."
                )
            break
        if line == b"":
            return _page(lines, offset, complete=True, total=offset - 1 + len(lines))
        lines.append({"number": offset + len(lines), "text": _decode(line)})
        used += len(line)
        if used == READ_PAGE_MAX_BYTES:
            break
    complete = reader.at_end()
    return _page(lines, offset, complete=complete, total=offset - 1 + len(lines))


def _page(
    lines: list[dict[str, Any]], offset: int, *, complete: bool, total: int
) -> dict[str, Any]:
    count = len(lines)
    page: dict[str, Any] = {
        "lines": lines,
        "startLine": offset,
        "endLine": offset + count - 1 if count else None,
        "lineCount": count,
        "truncated": not complete,
        "nextOffset": None if complete else offset + count,
    }
    if complete:
        page["totalLines"] = total
    return page


def run_read(context: BuiltinContext, args: dict[str, Any]) -> ToolResult:
    path = args["path"]
    offset = int(args.get("offset", 1))
    limit = int(args.get("limit", READ_DEFAULT_LIMIT))
    location = context.locate(path)
    with open_location(context.filesystem, context.root_path, location, context.owner) as opened:
        if opened.kind is EntryKind.DIRECTORY:
            raise ToolError(NOT_A_FILE)
        if opened.kind is not EntryKind.FILE or opened.name is None:
            raise ToolError(SPECIAL_REFUSED)
        with opened.parent.open_file(opened.name) as handle:
            page = read_page(handle, offset, limit, context.cancellation.check)
    return bounded_json_result(
        {
            "artifactId": context.owner,
            "resolvedArtifactId": location.artifact.name,
            "path": path,
            **page,
        }
    )
