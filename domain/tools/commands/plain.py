"""The plain protocol: argv placeholders substituted once, stdout as one bounded text block."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.domain.declarations.templates import parse_plain_template
from artifactize.domain.text import compact_json
from artifactize.domain.tools.commands.text_output import (
    TEXT_BLOCK_MAX_BYTES,
    clean_output,
    decode_lossy,
    truncate_utf8,
)
from artifactize.domain.tools.results import ToolResult

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
            text = value if isinstance(value, str) else rust_json(value)
            if "\x00" in text:
                raise SubstitutionError(f"NUL in {part.text}")
            pieces.append(text)
        out.append("".join(pieces))
    return tuple(out)


def rust_json(value: Any) -> str:
    """Compact JSON as the reference's serde_json writes it, so argv is the same text on
    both implementations: floats in ryu's shortest form (``1e100``, ``1.5e-7``,
    ``100.0``), not Python's (``1e+100``, ``1.5e-07``)."""
    if isinstance(value, float):
        return ryu_float(value)
    if isinstance(value, dict):
        return "{" + ",".join(compact_json(k) + ":" + rust_json(v) for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(rust_json(item) for item in value) + "]"
    return compact_json(value)


RYU_FIXED_MAX_POINT = 21  # ryu writes plain digits while the decimal point is at most here
RYU_FIXED_MIN_POINT = -5  # ... and above this (0.00001 is fixed, 0.000001 is 1e-6)


def ryu_float(number: float) -> str:
    """A finite float in ryu's layout, from Python's shortest round-trip digits."""
    sign = "-" if str(number).startswith("-") else ""
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return sign + "0.0"
    point = len(whole) + int(exponent or 0) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0")
    length = len(digits)
    if length <= point <= RYU_FIXED_MAX_POINT:
        return f"{sign}{digits}{'0' * (point - length)}.0"
    if 0 < point <= RYU_FIXED_MAX_POINT:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if RYU_FIXED_MIN_POINT < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    head = digits[0] + ("." + digits[1:] if length > 1 else "")
    return f"{sign}{head}e{point - 1}"


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
