"""A validated ``Declaration`` as text and back, for the file index (``ports.file_index``).

The stored form is four lines' worth of text: ``DECLARATION_FORMAT``, a newline, the
declaration as one line of compact JSON, a newline, each eval's hash as the caller kept it
with the declaration (``eval_hashes``: lowercase hex SHA-256, one per eval in the
declaration's order, separated by spaces; an empty line when none is kept), a newline, then
the source text as it is (the JSON never holds a raw newline: ``json.dumps`` escapes every
control character, so the first three newlines are the separators and the text needs no
escaping or parsing). The hashes are opaque here: the caller (discovery) computes them from
the declaration it stores them with, and this module checks only their form and number.

The JSON is positional: each of the model's dataclasses is the list of its field values in
field order, and how each value is written is chosen from the field's type hint, once per
class (``_codec``): a string, number, boolean or null stands for itself; an enum (or a
``Literal`` of enum members) is its value; ``tuple[X, ...]`` a list; ``Mapping[str, X]`` an
object (``Mapping[str, Any]``, a payload or a schema, only when it holds nothing but JSON,
kept as ``json.loads`` gives it); a union of dataclasses ``[class name, fields]``; a
dataclass its list of fields. Reading back runs one closure per field that needs one,
built from the same hints, and each class's constructor; values whose runtime type is not
the one their hint names (which the parser never builds) make a declaration unstorable
(``encode_declaration`` answers None: it is then parsed every time). Only the classes of
``domain.declarations.model`` are ever built (nothing is imported or called by name), so a
tampered index can at worst be refused: a wrong shape, arity, tag or enum value raises
``StoredFormError``.

``DECLARATION_FORMAT`` names this encoding and the model's shape (every class's resolved
field types, every enum's values): a stored form written by another version of either is
never read (the index keeps it apart and drops it).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

from artifactize.domain.declarations import model
from artifactize.ports.statuses import ProfileKind

CODEC_VERSION = 4  # bump when the encoding itself changes (4: the eval hashes' line)

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
    """Every model class's field names and resolved types, and every enum's values."""
    parts = [f"codec {CODEC_VERSION}"]
    for name in sorted(_CLASSES):
        hints = typing.get_type_hints(_CLASSES[name])
        fields = ",".join(f"{f.name}:{hints[f.name]}" for f in dataclasses.fields(_CLASSES[name]))
        parts.append(f"{name}({fields})")
    for name in sorted(_ENUMS):
        parts.append(f"{name}[{','.join(str(m.value) for m in _ENUMS[name])}]")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


DECLARATION_FORMAT = f"declaration-{CODEC_VERSION}-{_shape()}"


class StoredFormError(ValueError):
    """A stored form that this version cannot read back (damaged, or another version's)."""


class Unstorable(TypeError):
    """A value whose runtime type is not the one its field's hint names."""


def encode_declaration(
    declaration: model.Declaration, text: str, eval_hashes: tuple[str, ...] = ()
) -> str | None:
    """The declaration, the source text it was parsed from and each of its evals' hashes
    (``eval_hashes``: none, or one per eval in order), as one text; None when a value is not
    of its field's declared type, or not JSON (never built by the parser)."""
    if eval_hashes and len(eval_hashes) != len(declaration.evals):
        raise ValueError("one hash per eval, or none")
    hashes = " ".join(eval_hashes)
    if not _EVAL_HASHES.fullmatch(hashes):
        raise ValueError("an eval hash is lowercase hex SHA-256")
    try:
        row = _codec(model.Declaration).encode(declaration)
        body = _BODY_ENCODER.encode(row)
    except (Unstorable, ValueError):  # ValueError: a NaN or an infinity (not JSON)
        return None
    return f"{DECLARATION_FORMAT}\n{body}\n{hashes}\n{text}"


def decode_declaration(stored: str) -> tuple[model.Declaration, str]:
    """The declaration and its source text; raises ``StoredFormError`` for anything else."""
    declaration, text, _hashes = decode_stored(stored)
    return declaration, text


def decode_stored(stored: str) -> tuple[model.Declaration, str, tuple[str, ...]]:
    """The declaration, its source text and its evals' hashes (none, or one per eval);
    raises ``StoredFormError`` for anything else."""
    head, _, rest = stored.partition("\n")
    body, separator, rest = rest.partition("\n")
    hashes, last_separator, text = rest.partition("\n")
    if head != DECLARATION_FORMAT or not separator or not last_separator:
        raise StoredFormError("not a stored declaration of this version")
    try:
        declaration = _codec(model.Declaration).decode(json.loads(body))
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
        raise StoredFormError(str(exc)) from None
    eval_hashes = tuple(hashes.split(" ")) if hashes else ()
    if not _EVAL_HASHES.fullmatch(hashes) or len(eval_hashes) not in (0, len(declaration.evals)):
        raise StoredFormError("the eval hashes are not one lowercase SHA-256 per eval")
    return declaration, text, eval_hashes


_EVAL_HASHES = re.compile(r"(?:[0-9a-f]{64}(?: [0-9a-f]{64})*)?")

# The JSON line's encoder, made once: ``json.dumps`` with these options builds a new one for
# every declaration a cold load parses. No circular check: a row is lists the codec has just
# built, tuples of strings and payloads ``_plain_json`` has walked to their leaves (a cycle
# would never get here); the bytes are ``json.dumps``' with the same options.
_BODY_ENCODER = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
)


# --- the codec of each type, built from its hint at first use ---------------------------

_Encode = Callable[[Any], Any]
_Decode = Callable[[Any], Any]
_Codec = tuple[_Encode, _Decode | None]  # None: the JSON value stands for itself
_NONE = type(None)


class _Class:
    """One dataclass of the model as the list of its field values."""

    def __init__(self, cls: type[Any]) -> None:
        hints = typing.get_type_hints(cls)
        self.cls = cls
        self.names = tuple(f.name for f in dataclasses.fields(cls))
        codecs = [_field(hints[name]) for name in self.names]
        # A scalar field is only checked (inline, not through a call): it stands for itself.
        self.scalars = tuple(
            (at, encode.allowed)
            for at, (encode, _) in enumerate(codecs)
            if isinstance(encode, _Scalar)
        )
        self.encoders = tuple(
            (at, encode) for at, (encode, _) in enumerate(codecs) if not isinstance(encode, _Scalar)
        )
        convert = [(at, decode) for at, (_, decode) in enumerate(codecs) if decode is not None]
        self.decode = _row_decoder(cls, len(self.names), convert)

    def encode(self, value: Any) -> list[Any]:
        if type(value) is not self.cls:
            raise Unstorable(f"not a {self.cls.__name__}: {type(value).__name__}")
        row = [getattr(value, name) for name in self.names]
        for at, allowed in self.scalars:
            if type(row[at]) not in allowed:
                raise Unstorable(f"{self.names[at]}: a {type(row[at]).__name__}")
        for at, encode in self.encoders:
            row[at] = encode(row[at])
        return row


_CODECS: dict[type[Any], _Class] = {}


def _codec(cls: type[Any]) -> _Class:
    """``cls``'s codec, built at its first use (its fields' first: no model class holds
    itself)."""
    found = _CODECS.get(cls)
    if found is None:
        if _CLASSES.get(cls.__name__) is not cls:
            raise TypeError(f"not a model class: {cls.__name__}")
        found = _CODECS[cls] = _Class(cls)
    return found


def _row_decoder(cls: type[Any], width: int, convert: list[tuple[int, _Decode]]) -> _Decode:
    """``cls`` from the list of its fields, the fields at ``convert`` decoded first (in
    place: the list is ``json.loads``' own). Unrolled for up to three such fields (most
    classes): this runs once per object of every declaration a warm load reads."""

    def refuse() -> StoredFormError:
        return StoredFormError(f"not the {width} fields of a {cls.__name__}")

    if not convert:

        def decode(row: Any) -> Any:
            if type(row) is not list or len(row) != width:
                raise refuse()
            return cls(*row)

    elif len(convert) == 1:
        ((a, fa),) = convert

        def decode(row: Any) -> Any:
            if type(row) is not list or len(row) != width:
                raise refuse()
            row[a] = fa(row[a])
            return cls(*row)

    elif len(convert) == 2:
        (a, fa), (b, fb) = convert

        def decode(row: Any) -> Any:
            if type(row) is not list or len(row) != width:
                raise refuse()
            row[a] = fa(row[a])
            row[b] = fb(row[b])
            return cls(*row)

    elif len(convert) == 3:
        (a, fa), (b, fb), (c, fc) = convert

        def decode(row: Any) -> Any:
            if type(row) is not list or len(row) != width:
                raise refuse()
            row[a] = fa(row[a])
            row[b] = fb(row[b])
            row[c] = fc(row[c])
            return cls(*row)

    else:

        def decode(row: Any) -> Any:
            if type(row) is not list or len(row) != width:
                raise refuse()
            for at, field in convert:
                row[at] = field(row[at])
            return cls(*row)

    return decode


def _field(hint: Any, optional: bool = False) -> _Codec:
    """How a value of type ``hint`` (or None, when ``optional``) is written and read back."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (str, int, bool, float):
        return _Scalar(frozenset({hint, _NONE} if optional else {hint})), None
    if hint is Any:
        return _json_value, None
    if origin is Literal:
        return _literal(args, optional)
    if origin in _UNIONS:
        return _union(args, optional)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _tuple(args[0], optional)
    if origin in (Mapping, dict) and args[0] is str:
        return _mapping(_field(args[1]), optional)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum(hint, tuple(hint), optional)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        codec = _codec(hint)
        return _optional((codec.encode, codec.decode)) if optional else (codec.encode, codec.decode)
    raise TypeError(f"no stored form for {hint!r}")


class _Scalar:
    """A string, number, boolean or null of one of the ``allowed`` types: itself."""

    def __init__(self, allowed: frozenset[type[Any]]) -> None:
        self.allowed = allowed

    def __call__(self, value: Any) -> Any:
        if type(value) not in self.allowed:
            raise Unstorable(
                f"a {type(value).__name__}, not one of {sorted(map(str, self.allowed))}"
            )
        return value


def _json_value(value: Any) -> Any:
    if not _plain_json(value):
        raise Unstorable("not plain JSON")
    return value


def _literal(args: tuple[Any, ...], optional: bool) -> _Codec:
    if all(isinstance(arg, enum.Enum) for arg in args):
        return _enum(type(args[0]), args, optional)
    if all(type(arg) is str for arg in args):
        allowed = frozenset([*args, None] if optional else args)

        def encode(value: Any) -> Any:
            if (type(value) is not str and value is not None) or value not in allowed:
                raise Unstorable(f"{value!r} is not one of {sorted(map(str, allowed))}")
            return value

        return encode, None
    raise TypeError(f"no stored form for Literal{list(args)}")


def _enum(cls: type[enum.Enum], members: tuple[Any, ...], optional: bool) -> _Codec:
    by_value: dict[Any, Any] = {member.value: member for member in members}
    if any(type(value) is not str for value in by_value):
        raise TypeError(f"no stored form for {cls.__name__}: its values are not strings")
    if optional:
        by_value[None] = None

    def encode(value: Any) -> Any:
        if value is None and optional:
            return None
        if type(value) is not cls or value not in members:
            raise Unstorable(f"{value!r} is not one of {cls.__name__} {list(by_value)}")
        return value.value

    return encode, by_value.__getitem__  # KeyError (unknown) or TypeError (unhashable)


def _members(args: tuple[Any, ...]) -> dict[str, _Class] | None:
    """The codecs of a union of the model's dataclasses by class name; None for another union."""
    if not all(isinstance(arg, type) and dataclasses.is_dataclass(arg) for arg in args):
        return None
    return {member.__name__: _codec(member) for member in args}


def _union(args: tuple[Any, ...], optional: bool) -> _Codec:
    members = tuple(arg for arg in args if arg is not _NONE)
    if len(members) == 1:
        return _field(members[0], optional or len(args) == 2)
    codecs = _members(args)
    if codecs is None or optional:
        raise TypeError(f"no stored form for the union {args!r}")
    decoders = {name: codec.decode for name, codec in codecs.items()}

    def encode(value: Any) -> Any:
        codec = codecs.get(type(value).__name__)
        if codec is None or codec.cls is not type(value):
            raise Unstorable(f"a {type(value).__name__} is none of {sorted(codecs)}")
        return [type(value).__name__, codec.encode(value)]

    def decode(value: Any) -> Any:
        if type(value) is not list:
            raise StoredFormError("a union member is stored as [class, fields]")
        name, row = value  # ValueError: not two; KeyError, TypeError: not a member's name
        return decoders[name](row)

    return encode, decode


def _optional(inner: _Codec) -> _Codec:
    encode_inner, decode_inner = inner

    def encode(value: Any) -> Any:
        return None if value is None else encode_inner(value)

    if decode_inner is None:
        return encode, None

    def decode(value: Any) -> Any:
        return None if value is None else decode_inner(value)

    return encode, decode


def _tuple(hint: Any, optional: bool) -> _Codec:
    """``tuple[hint, ...]``: a list. Read back in one call per tuple where its items need no
    reading (strings) or are a union of classes (tools, profiles): each ``[class, fields]``
    pair is unpacked in the comprehension."""
    encode_item, decode_item = _field(hint)
    allowed = encode_item.allowed if isinstance(encode_item, _Scalar) else None

    def encode(value: Any) -> Any:
        if value is None and optional:
            return None
        if type(value) is not tuple:
            raise Unstorable(f"a {type(value).__name__}, not a tuple")
        if allowed is None:
            return [encode_item(each) for each in value]
        if not set(map(type, value)) <= allowed:
            raise Unstorable(f"a tuple holding one of {sorted(map(str, set(map(type, value))))}")
        return value  # json.dumps writes a tuple as a list

    members = _members(typing.get_args(hint)) if typing.get_origin(hint) in _UNIONS else None
    if members is not None:
        decoders = {name: codec.decode for name, codec in members.items()}

        def union_items(value: list[Any]) -> tuple[Any, ...]:
            return tuple([decoders[name](row) for name, row in value])

        return encode, _container(list, union_items, optional)
    if decode_item is None:
        return encode, _container(list, tuple, optional)
    item = decode_item
    return encode, _container(list, lambda value: tuple(map(item, value)), optional)


def _container(kind: type[Any], convert: _Decode, optional: bool) -> _Decode:
    """``convert`` of a stored ``kind`` (a list, an object), None when ``optional``."""

    def decode(value: Any) -> Any:
        if type(value) is kind:
            return convert(value)
        if value is None and optional:
            return None
        raise StoredFormError(f"a {kind.__name__} was expected")

    return decode


_UNIONS = (typing.Union, types.UnionType)


def _mapping(item: _Codec, optional: bool) -> _Codec:
    encode_item, decode_item = item

    def encode(value: Any) -> Any:
        if value is None and optional:
            return None
        if type(value) is not dict or any(type(key) is not str for key in value):
            raise Unstorable("a mapping is stored only as a dict with string keys")
        if encode_item is _json_value:  # a payload, a schema: walked once, kept as it is
            return _json_value(value)
        if isinstance(encode_item, _Scalar):
            if not set(map(type, value.values())) <= encode_item.allowed:
                raise Unstorable("a mapping holding a value of another type")
            return value
        return {key: encode_item(each) for key, each in value.items()}

    if decode_item is None:

        def decode(value: Any) -> Any:
            if type(value) is dict or (value is None and optional):
                return value
            raise StoredFormError("a mapping is stored as an object")

        return encode, decode
    value_decoder = decode_item
    return encode, _container(
        dict, lambda value: {k: value_decoder(v) for k, v in value.items()}, optional
    )


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
