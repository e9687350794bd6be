"""A validated ``Declaration`` as JSON text and back, for the file index (``ports.file_index``).

Every value is written with a tag so that reading it back builds exactly what
``parse_declaration`` built: ``["t", ...]`` a tuple, ``["l", ...]`` a list, ``["d", {...}]``
a mapping, ``["j", value]`` a mapping that holds nothing but JSON (dicts, lists, strings,
numbers, booleans, null: a payload, a schema), kept as it is, ``["c", "Class", {...}]`` one of the model's dataclasses, ``["e", "Enum",
value]`` one of its enums; strings, numbers, booleans and null stand for themselves. Only
the classes of ``domain.declarations.model`` are ever built (nothing is imported or called
by name), so a tampered index can at worst be refused.

``DECLARATION_FORMAT`` names this encoding and the model's shape: a stored form written by
another version of either is never read (the index keeps it apart and drops it).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from artifactize.domain.declarations import model
from artifactize.ports.statuses import ProfileKind

CODEC_VERSION = 2  # bump when the encoding itself changes

_CLASSES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in vars(model).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls)
}
_ENUMS: dict[str, type[enum.Enum]] = {
    cls.__name__: cls
    for cls in [*vars(model).values(), ProfileKind]
    if isinstance(cls, type) and issubclass(cls, enum.Enum)
}


def _shape() -> str:
    """Every model class's field names and declared types, and every enum's values."""
    parts = [f"codec {CODEC_VERSION}"]
    for name in sorted(_CLASSES):
        fields = ",".join(f"{f.name}:{f.type}" for f in dataclasses.fields(_CLASSES[name]))
        parts.append(f"{name}({fields})")
    for name in sorted(_ENUMS):
        parts.append(f"{name}[{','.join(str(m.value) for m in _ENUMS[name])}]")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


DECLARATION_FORMAT = f"declaration-{CODEC_VERSION}-{_shape()}"


class StoredFormError(ValueError):
    """A stored form that this version cannot read back (damaged, or another version's)."""


def encode_declaration(declaration: model.Declaration, text: str) -> str:
    """The declaration and the source text it was parsed from, as one JSON text."""
    return json.dumps(
        [DECLARATION_FORMAT, text, _encode(declaration)],
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=False,
    )


def decode_declaration(stored: str) -> tuple[model.Declaration, str]:
    """The declaration and its source text; raises ``StoredFormError`` for anything else."""
    try:
        value = json.loads(stored)
        if not isinstance(value, list) or len(value) != 3 or value[0] != DECLARATION_FORMAT:
            raise StoredFormError("not a stored declaration of this version")
        _, text, encoded = value
        declaration = _decode(encoded)
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        raise StoredFormError(str(exc)) from None
    if not isinstance(declaration, model.Declaration) or not isinstance(text, str):
        raise StoredFormError("not a stored declaration")
    return declaration, text


def _encode(value: Any) -> Any:
    cls = type(value)
    if value is None or cls is str or cls is int or cls is bool or cls is float:
        return value
    if cls is tuple:
        return ["t", *(_encode(item) for item in value)]
    if cls is list:
        return ["l", *(_encode(item) for item in value)]
    if isinstance(value, enum.Enum):
        if _ENUMS.get(cls.__name__) is not cls:
            raise TypeError(f"not a model enum: {cls.__name__}")
        return ["e", cls.__name__, value.value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if _CLASSES.get(cls.__name__) is not cls:
            raise TypeError(f"not a model class: {cls.__name__}")
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return ["c", cls.__name__, fields]
    if cls is dict and _plain_json(value):
        return ["j", value]
    if isinstance(value, Mapping):
        return ["d", {_key(key): _encode(item) for key, item in value.items()}]
    raise TypeError(f"cannot store a {cls.__name__}")


def _plain_json(value: Any) -> bool:
    """Only dicts with string keys, lists and JSON scalars, all the way down."""
    pending = [value]
    while pending:
        item = pending.pop()
        cls = type(item)
        if cls is dict:
            if any(type(key) is not str for key in item):
                return False
            pending.extend(item.values())
        elif cls is list:
            pending.extend(item)
        elif not (item is None or cls is str or cls is int or cls is bool or cls is float):
            return False
    return True


def _key(key: object) -> str:
    if type(key) is not str:
        raise TypeError("mapping keys must be strings")
    return key


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _decode(value: Any) -> Any:
    """The value ``_encode`` wrote (JSON object keys are always strings)."""
    if type(value) in _SCALARS:
        return value
    if type(value) is not list:
        raise StoredFormError("an untagged mapping")
    tag = value[0]
    if tag == "c":
        cls = _CLASSES[value[1]]
        fields = _mapping(value[2])
        return cls(**{k: v if type(v) in _SCALARS else _decode(v) for k, v in fields.items()})
    if tag == "t":
        return tuple([v if type(v) in _SCALARS else _decode(v) for v in value[1:]])
    if tag == "j":
        return _mapping(value[1])
    if tag == "e":
        return _ENUMS[value[1]](value[2])
    if tag == "d":
        return {k: v if type(v) in _SCALARS else _decode(v) for k, v in _mapping(value[1]).items()}
    if tag == "l":
        return [v if type(v) in _SCALARS else _decode(v) for v in value[1:]]
    raise StoredFormError(f"unknown tag {tag!r}")


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise StoredFormError("a tagged mapping without its mapping")
    return value
