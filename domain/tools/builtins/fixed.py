"""Built-ins with a fixed target: ``read`` and ``section`` as text, ``view_image``, ``graph``."""

from __future__ import annotations

from typing import Any

from artifactize.domain.project.graph import graph_report
from artifactize.domain.tools.builtins.section import (
    SECTION_SOURCE_MAX_BYTES,
    SectionError,
    extract_section,
)
from artifactize.domain.tools.commands.text_output import TEXT_BLOCK_MAX_BYTES, TRUNCATION_MARKER
from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.images import (
    IMAGE_MAX_BYTES,
    SIZE_REFUSED,
    ImageError,
    check_image_bytes,
)
from artifactize.domain.tools.locations import SPECIAL_REFUSED, open_location
from artifactize.domain.tools.results import ToolError, ToolResult, bounded_json_result
from artifactize.ports.filesystem import EntryKind, FileTooLarge

FIXED_READ_REGULAR = "Reading requires a regular file."
FIXED_READ_BINARY = "Reading requires UTF-8 text, not binary data."
FIXED_READ_INVALID = "Reading requires UTF-8 text."
VIEW_NOT_A_FILE = "Viewing an image requires a regular file."


def _read_bytes(context: BuiltinContext, path: str, limit: int, not_a_file: str) -> bytes:
    """Up to ``limit`` + 1 bytes of a regular file reached by a logical path."""
    location = context.locate(path)
    with open_location(context.filesystem, context.root_path, location, context.owner) as opened:
        if opened.kind is EntryKind.OTHER:
            raise ToolError(SPECIAL_REFUSED)
        if opened.kind is not EntryKind.FILE or opened.name is None:
            raise ToolError(not_a_file)
        with opened.parent.open_file(opened.name) as handle:
            return handle.read(limit + 1)


def run_fixed_read(context: BuiltinContext, path: str) -> ToolResult:
    data = _read_bytes(context, path, TEXT_BLOCK_MAX_BYTES, FIXED_READ_REGULAR)
    if b"\x00" in data:
        raise ToolError(FIXED_READ_BINARY)
    if len(data) <= TEXT_BLOCK_MAX_BYTES:
        try:
            return ToolResult.text(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise ToolError(FIXED_READ_INVALID) from None
    keep = data[: TEXT_BLOCK_MAX_BYTES - len(TRUNCATION_MARKER.encode("utf-8"))]
    try:
        text = keep.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(keep) - 3:  # only a character cut at the boundary may be dropped
            raise ToolError(FIXED_READ_INVALID) from None
        text = keep[: exc.start].decode("utf-8")
    return ToolResult.text(text + TRUNCATION_MARKER)


def run_section(context: BuiltinContext, path: str, heading: str) -> ToolResult:
    data = _read_bytes(context, path, SECTION_SOURCE_MAX_BYTES, FIXED_READ_REGULAR)
    if len(data) > SECTION_SOURCE_MAX_BYTES:
        raise ToolError("Markdown document exceeds 8 MiB.")
    try:
        return ToolResult.text(extract_section(data.decode("utf-8"), heading))
    except UnicodeDecodeError:
        raise ToolError(FIXED_READ_INVALID) from None
    except SectionError as exc:
        raise ToolError(str(exc)) from None


def run_view_image(context: BuiltinContext, args: dict[str, Any]) -> ToolResult:
    try:
        data = _read_bytes(context, args["path"], IMAGE_MAX_BYTES, VIEW_NOT_A_FILE)
    except FileTooLarge:
        raise ToolError(SIZE_REFUSED) from None
    try:
        block = check_image_bytes(data, None)
    except ImageError as exc:
        raise ToolError(str(exc)) from None
    return ToolResult((block.to_json(),))


def run_graph(context: BuiltinContext) -> ToolResult:
    return bounded_json_result(graph_report(context.workspace))
