"""The one bounded JSON reader for everything that comes from outside.

Tool stdout, ``--args``, ``--fields``, store records (client and server), provider
responses and the store server's request bodies are all read here. Python's ``json``
module accepts more than JSON and has limits of its own that surface as tracebacks or in
its own wording: ``NaN``/``Infinity`` and ``1e400`` (an infinite float), an integer too
long to convert (``sys.set_int_max_str_digits``), a nesting deep enough to exhaust the
stack, and duplicate object keys where the last value silently wins (so
``"isError": true, "isError": false`` would read as a success). This reader refuses each
with :class:`JsonRefused` and a reason in our words; every caller turns that into its own
input's documented error (invalid tool output, exit 2, HTTP 400, a provider error).

It lives in the shared kernel because domain, adapters and entrypoints all read outside
JSON and must read it the same way; it is pure (standard library only) and imports nothing
of ours.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

JSON_NESTING_MAX = 512
"""Deepest accepted nesting of arrays and objects (a scalar at top level is depth 0)."""

JSON_INTEGER_DIGITS_MAX = 4300
"""Longest accepted integer literal, in decimal digits: the interpreter's own default
conversion limit (``sys.int_info.default_max_str_digits``), so every accepted integer can
also be written back."""

# A string literal (escapes included), and a run of anything that is not a bracket.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonRefused(ValueError):
    """The text is not JSON we accept; ``reason`` says why, in our words. ``syntax`` tells
    text that is not JSON at all (bad UTF-8, a syntax error) from JSON past a limit; a
    syntax error also keeps its parts (``problem`` at ``line``, ``column``) for callers
    that word it themselves."""

    def __init__(
        self,
        reason: str,
        problem: str = "",
        line: int = 0,
        column: int = 0,
        *,
        syntax: bool = False,
        offset: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.problem, self.line, self.column = problem or reason, line, column
        self.offset = offset  # where in the text a syntax error is, when known
        self.syntax = syntax or line > 0


@dataclass(frozen=True)
class RefusedValue:
    """Stands, in a batch read by :func:`read_json_batch`, where a refused number or
    object was: the entry that holds it is dropped, the rest of the batch is kept."""

    reason: str


def read_json(text: str | bytes) -> Any:
    """The value of one JSON document, within the limits above, or ``JsonRefused``."""
    return _read(text, marking=False)


def read_json_batch(text: str | bytes) -> Any:
    """Like :func:`read_json`, but a refused number (non-finite, over-long) or object
    (a duplicate key) becomes a :class:`RefusedValue` in place instead of refusing the whole
    document, so a reader of a batch (a store lookup) can skip just the entries holding
    one (:func:`first_refusal`). Syntax errors and too deep a nesting still refuse it all."""
    return _read(text, marking=True)


def first_refusal(value: Any) -> str | None:
    """The reason of the first :class:`RefusedValue` inside ``value``, if any."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, RefusedValue):
            return item.reason
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _read(text: str | bytes, *, marking: bool) -> Any:
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonRefused("not UTF-8", syntax=True, offset=exc.start) from None
    _check_nesting(text)
    hooks = (_marking_constant, _marking_float, _marking_int, _marking_object)
    if not marking:
        hooks = (_refuse_constant, _bounded_float, _bounded_int, _unique_object)
    try:
        return json.loads(
            text,
            parse_constant=hooks[0],
            parse_float=hooks[1],
            parse_int=hooks[2],
            object_pairs_hook=hooks[3],
        )
    except JsonRefused:
        raise
    except json.JSONDecodeError as exc:
        reason = f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise JsonRefused(reason, exc.msg, exc.lineno, exc.colno, offset=exc.pos) from None
    except RecursionError:  # only when the caller's own stack is nearly spent
        raise JsonRefused(f"nesting deeper than {JSON_NESTING_MAX} levels") from None


def _check_nesting(text: str) -> None:
    # Cheap bound first: fewer openers than the limit cannot nest past it.
    if text.count("[") + text.count("{") <= JSON_NESTING_MAX:
        return
    # The brackets outside strings, then their running depth, all at C speed.
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    depths = itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets))
    if max(depths, default=0) > JSON_NESTING_MAX:
        raise JsonRefused(f"nesting deeper than {JSON_NESTING_MAX} levels")


def _refuse_constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not a JSON number")


def _bounded_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise JsonRefused(f"the number {_excerpt(literal)} is too large to be finite")
    return value


def _bounded_int(literal: str) -> int:
    digits = len(literal) - (1 if literal.startswith("-") else 0)
    if digits > JSON_INTEGER_DIGITS_MAX:
        raise JsonRefused(f"an integer longer than {JSON_INTEGER_DIGITS_MAX} digits")
    return int(literal)


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonRefused(f"duplicate key {json.dumps(_excerpt(key), ensure_ascii=False)}")
            seen.add(key)
    return value


def _excerpt(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _marked(check: Any) -> Any:
    def hook(argument: Any) -> Any:
        try:
            return check(argument)
        except JsonRefused as exc:
            return RefusedValue(exc.reason)

    return hook


_marking_constant = _marked(_refuse_constant)
_marking_float = _marked(_bounded_float)
_marking_int = _marked(_bounded_int)
_marking_object = _marked(_unique_object)
