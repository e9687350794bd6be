"""Text measures the seeds define in UTF-16 code units (like JavaScript's ``length``)."""

from __future__ import annotations

import json
import re
from typing import Any

_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units: astral characters (above U+FFFF) count two."""
    if text.isascii():  # constant time in CPython, and the common case
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def has_ascii_control(text: str) -> bool:
    """True when the text holds an ASCII control character (U+0000-U+001F or U+007F)."""
    return _ASCII_CONTROL.search(text) is not None


def compact_json(value: Any) -> str:
    """The one canonical compact JSON form: no spaces, non-ASCII kept, keys in given order."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def merged_json_objects(*objects: str) -> str:
    """The compact JSON of one object holding, in order, the members of ``objects`` (each
    the ``compact_json`` of an object, none sharing a key): what ``compact_json`` gives for
    the merged dict, so a member already encoded (a ``list`` page) is not encoded again."""
    members = [text[1:-1] for text in objects if text != "{}"]
    return "{" + ",".join(members) + "}"


def compact_json_size(value: Any) -> int:
    """UTF-8 byte size of the compact JSON form, the unit of every JSON size limit."""
    return len(compact_json(value).encode("utf-8"))


def quote(text: str) -> str:
    """Quote a user-supplied value for an error message, escaping controls and quotes."""
    return json.dumps(text, ensure_ascii=False)
