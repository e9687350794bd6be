"""The one canonical JSON encoder behind every hash (eval definitions, reuse keys, manifests).

Compact separators, object keys sorted recursively (by code point), no ASCII escaping,
UTF-8 bytes, and no NaN or infinity. It defines every reuse key: change it only together
with the key version (``domain.reviews.reuse.keys.REUSE_KEY_VERSION``), never casually.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class CanonicalJsonError(ValueError):
    """A value that has no canonical JSON form (a non-string key, a set, NaN, bad Unicode)."""


def canonical_json(value: Any) -> bytes:
    """``value`` as compact, key-sorted UTF-8 JSON; mappings and tuples are accepted."""
    try:
        try:
            plain = _fast(value)
        except _Unusual:
            plain = _plain(value, "$")  # raises, saying where
        text = json.dumps(
            plain,
            ensure_ascii=False,
            sort_keys=True,
            separators=(",", ":"),
            allow_nan=False,
        )
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalJsonError(f"canonical JSON needs valid Unicode text: {exc.reason}") from None
    except ValueError as exc:  # allow_nan=False
        raise CanonicalJsonError(f"canonical JSON has no form for this value: {exc}") from None


class _Unusual(Exception):
    """A value ``_fast`` leaves to ``_plain``, which says where it is."""


def _fast(value: Any) -> Any:
    """``_plain`` without building each value's location (a hash of every eval's definition
    per ``status``): the same copies, and ``_Unusual`` wherever ``_plain`` would raise."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Unusual
            plain[key] = _fast(item)
        return plain
    if isinstance(value, list | tuple):
        return [_fast(item) for item in value]
    raise _Unusual


def _plain(value: Any, where: str) -> Any:
    """Plain ``dict``/``list`` copies, so any ``Mapping`` or tuple encodes the same way."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalJsonError(f"{where}: object key {key!r} is not a string")
            plain[key] = _plain(item, f"{where}.{key}")
        return plain
    if isinstance(value, list | tuple):
        return [_plain(item, f"{where}[{index}]") for index, item in enumerate(value)]
    raise CanonicalJsonError(f"{where}: {type(value).__name__} is not a JSON value")
