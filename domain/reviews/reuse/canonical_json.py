"""The one canonical JSON encoder behind every hash (eval definitions, reuse keys, manifests).

Compact separators, object keys sorted recursively (by code point), no ASCII escaping,
UTF-8 bytes, and no NaN or infinity. It defines every reuse key: change it only together
with the key version (``domain.reviews.reuse.keys.REUSE_KEY_VERSION``), never casually.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NoReturn


class CanonicalJsonError(ValueError):
    """A value that has no canonical JSON form (a non-string key, a set, NaN, bad Unicode)."""


# ``json.dumps`` with these options builds this very encoder on every call (~3 us, a third
# of an eval definition's hash); one made once encodes the same bytes.
_ENCODER = json.JSONEncoder(
    ensure_ascii=False,
    sort_keys=True,
    separators=(",", ":"),
    allow_nan=False,
)
# Returned as they are, told by their exact type first (the ``isinstance`` tests below also
# let their subclasses through, as ``json`` encodes them).
_EXACT_SCALARS = frozenset({str, bool, int, float, type(None)})


def canonical_json(value: Any) -> bytes:
    """``value`` as compact, key-sorted UTF-8 JSON; mappings and tuples are accepted."""
    try:
        try:
            plain = _plain(value, None)
        except _Unusual:
            plain = _plain(value, "$")  # raises, saying where
        return _ENCODER.encode(plain).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalJsonError(f"canonical JSON needs valid Unicode text: {exc.reason}") from None
    except ValueError as exc:  # allow_nan=False
        raise CanonicalJsonError(f"canonical JSON has no form for this value: {exc}") from None


class _Unusual(Exception):
    """A value refused while no location was built: ``_plain`` runs again, to say where."""


def _refuse(where: str | None, message: str) -> NoReturn:
    if where is None:
        raise _Unusual
    raise CanonicalJsonError(f"{where}: {message}")


def _plain(value: Any, where: str | None) -> Any:
    """Plain ``dict``/``list`` copies, so any ``Mapping`` or tuple encodes the same way;
    ``where``: the value's location, for a refusal (None: not built, ``_Unusual`` raised
    instead: a hash of every eval's definition per ``status`` never needs one)."""
    kind = type(value)
    if kind in _EXACT_SCALARS or value is None or isinstance(value, str | bool | int | float):
        return value
    if kind is dict or isinstance(value, Mapping):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                _refuse(where, f"object key {key!r} is not a string")
            plain[key] = _plain(item, None if where is None else f"{where}.{key}")
        return plain
    if isinstance(value, list | tuple):
        if where is None:
            return [_plain(item, None) for item in value]
        return [_plain(item, f"{where}[{index}]") for index, item in enumerate(value)]
    _refuse(where, f"{type(value).__name__} is not a JSON value")
