"""The plain protocol: argv placeholders substituted once, stdout as one bounded text block."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain.templates import parse_plain_template
from domain.text import compact_json
from domain.tools.results import ToolResult
from domain.tools.text_output import (
    TEXT_BLOCK_MAX_BYTES,
    clean_output,
    decode_lossy,
    truncate_utf8,
)

PLAIN_FAILED_PREFIX = "Agent tool exited unsuccessfully.\n"


class SubstitutionError(Exception):
    """A placeholder with no value, or a value with NUL: nothing may be spawned."""


def substitute(args: tuple[str, ...], values: Mapping[str, Any]) -> tuple[str, ...]:
    """Single pass, left to right: substituted text is never scanned again."""
    out: list[str] = []
    for arg in args:
        pieces: list[str] = []
        for part in parse_plain_template(arg):
            if not part.is_placeholder:
                pieces.append(part.text)
                continue
            if part.text not in values:
                raise SubstitutionError(f"no value for {part.text}")
            value = values[part.text]
            text = value if isinstance(value, str) else compact_json(value)
            if "\x00" in text:
                raise SubstitutionError(f"NUL in {part.text}")
            pieces.append(text)
        out.append("".join(pieces))
    return tuple(out)


def plain_result(stdout: bytes, overflowed: bool, succeeded: bool) -> ToolResult:
    """Cleaned, lossily decoded stdout; a failed exit is marked, never dropped."""
    text = clean_output(decode_lossy(stdout))
    # Every character is at least one UTF-8 byte, so past the cap only the first cap + 1
    # characters can matter: cutting here spares copying and encoding up to 16 MiB.
    text = text[: TEXT_BLOCK_MAX_BYTES + 1]
    if not succeeded:
        text = PLAIN_FAILED_PREFIX + text
    text = truncate_utf8(text, force=overflowed)
    block = {"type": "text", "text": text}
    if succeeded:
        return ToolResult((block,))
    return ToolResult((block,), is_error=True)
