"""Normalize what a json-protocol command printed into a ``ToolResult``, within hard limits.

Stdout must be exactly one JSON object ``{"content": [...], "isError"?: bool}`` with 1-32
closed blocks. Anything else, an extra field anywhere included, is one generic error: the
reviewer never sees the raw output, and never stderr. An authored error (``isError: true``
with exactly one nonblank text block) reaches the reviewer unchanged. Image blocks that
name a file below the call's output directory are read and embedded as base64 here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from artifactize.domain.logical_paths import logical_path_problem
from artifactize.domain.text import compact_json_size
from artifactize.domain.tools.commands.text_output import TEXT_BLOCK_MAX_BYTES
from artifactize.domain.tools.images import ImageError, check_image_bytes, decode_base64_image
from artifactize.domain.tools.results import CONTENT_BLOCKS_MAX, ToolResult
from artifactize.kernel.bounded_json import JsonRefused, read_json

JSON_BLOCK_MAX_BYTES = 512 * 1024
RESULT_MAX_BYTES = 8 * 1024 * 1024

INVALID_OUTPUT = "Agent tool returned invalid output."
EXECUTION_FAILED = "Agent tool execution failed."

_BLOCK_FIELDS = {
    "text": {"type", "text"},
    "json": {"type", "data"},
}
_IMAGE_FIELDS = {"type", "mimeType", "data", "path"}

OutputFileReader = Callable[[tuple[str, ...]], bytes]
"""Reads a file below the call's output directory by its components (pinned, no-follow)."""


class InvalidOutput(Exception):
    """The command's stdout broke the protocol; the reviewer gets the generic message.
    ``where`` (line, column, offset) says where JSON parsing failed, for the author."""

    def __init__(self, message: str, where: dict[str, int | str] | None = None) -> None:
        super().__init__(message)
        self.where = where


def _where(refused: JsonRefused) -> dict[str, int | str] | None:
    """Where parsing failed, for the tool's author (``tools check`` diagnostics); None for
    JSON refused past a limit rather than for its syntax."""
    if not refused.syntax:
        return None
    where: dict[str, int | str] = {"message": refused.problem}
    if refused.line:
        where.update(line=refused.line, column=refused.column)
    if refused.offset is not None:
        where["offset"] = refused.offset
    return where


def parse_result_object(stdout: bytes) -> dict[str, Any]:
    """One JSON object, read by the bounded reader (``kernel.bounded_json``): a non-finite
    number, an over-long integer, too deep a nesting or a duplicate key (``isError`` twice
    must not read as its last value) is invalid output like any other."""
    try:
        value = read_json(stdout)
    except JsonRefused as exc:
        raise InvalidOutput(
            f"stdout is not one JSON document we accept: {exc.reason}", _where(exc)
        ) from None
    if not isinstance(value, dict):
        raise InvalidOutput("the result is not a JSON object")
    return value


def normalize_json_output(
    stdout: bytes, output_dir: str, read_output_file: OutputFileReader
) -> ToolResult:
    """The normalized result of an exit-0 json command, or ``InvalidOutput``."""
    try:
        return _normalize(stdout, output_dir, read_output_file)
    except UnicodeEncodeError:  # a lone surrogate escape has no UTF-8 form
        raise InvalidOutput("the result holds text that is not valid Unicode") from None


def _normalize(stdout: bytes, output_dir: str, read_output_file: OutputFileReader) -> ToolResult:
    value = parse_result_object(stdout)
    if set(value) - {"content", "isError"} or "content" not in value:
        raise InvalidOutput("unknown or missing top-level field")
    is_error = value.get("isError", False)
    if not isinstance(is_error, bool):
        raise InvalidOutput("isError is not a boolean")
    content = value["content"]
    if not isinstance(content, list) or not 1 <= len(content) <= CONTENT_BLOCKS_MAX:
        raise InvalidOutput("content is not a list of 1-32 blocks")
    blocks: list[dict[str, Any]] = []
    running = 0
    for block in content:
        normalized = _block(block, output_dir, read_output_file)
        running += compact_json_size(normalized)
        if running > RESULT_MAX_BYTES:
            raise InvalidOutput("the result exceeds 8 MiB")
        blocks.append(normalized)
    if is_error and not (
        len(blocks) == 1 and blocks[0]["type"] == "text" and blocks[0]["text"].strip()
    ):
        raise InvalidOutput("an authored error needs exactly one nonblank text block")
    result = ToolResult(tuple(blocks), is_error=is_error)
    if compact_json_size(result.to_json()) > RESULT_MAX_BYTES:
        raise InvalidOutput("the result exceeds 8 MiB")
    return result


def _block(block: Any, output_dir: str, read_output_file: OutputFileReader) -> dict[str, Any]:
    if not isinstance(block, dict):
        raise InvalidOutput("a block is not an object")
    kind = block.get("type")
    if kind == "image":
        return _image_block(block, output_dir, read_output_file)
    if not isinstance(kind, str) or kind not in _BLOCK_FIELDS or set(block) != _BLOCK_FIELDS[kind]:
        raise InvalidOutput("unknown block type or fields")
    if kind == "text":
        text = block["text"]
        if not isinstance(text, str) or len(text.encode("utf-8")) > TEXT_BLOCK_MAX_BYTES:
            raise InvalidOutput("text block is not a string of at most 64 KiB")
        return {"type": "text", "text": text}
    if compact_json_size(block["data"]) > JSON_BLOCK_MAX_BYTES:
        raise InvalidOutput("json block data exceeds 512 KiB")
    return {"type": "json", "data": block["data"]}


def _image_block(
    block: dict[str, Any], output_dir: str, read_output_file: OutputFileReader
) -> dict[str, Any]:
    if (
        set(block) - _IMAGE_FIELDS
        or "mimeType" not in block
        or ("data" in block) == ("path" in block)
    ):
        raise InvalidOutput("an image block has mimeType and exactly one of data or path")
    mime = block["mimeType"]
    if not isinstance(mime, str):
        raise InvalidOutput("mimeType is not a string")
    try:
        if "data" in block:
            if not isinstance(block["data"], str):
                raise InvalidOutput("image data is not a string")
            return decode_base64_image(block["data"], mime).to_json()
        components = output_path_components(block["path"], output_dir)
        return check_image_bytes(read_output_file(components), mime).to_json()
    except ImageError as exc:
        raise InvalidOutput(exc.message) from None


def output_path_components(path: Any, output_dir: str) -> tuple[str, ...]:
    """Components of an image path below the output directory; anything else is refused.

    A relative path starts at the output directory and follows the logical-path rules; an
    absolute path is accepted only when it is still below the directory (a sibling such as
    ``<outputDir>-other`` is outside).
    """
    if not isinstance(path, str) or not path:
        raise InvalidOutput("image path is not a nonempty string")
    base = output_dir.rstrip("/") + "/"
    relative = path[len(base) :] if path.startswith("/") and path.startswith(base) else path
    if relative.startswith("/") or logical_path_problem(relative) is not None or not relative:
        raise InvalidOutput("image path is not below the output directory")
    return tuple(relative.split("/"))
