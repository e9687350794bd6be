"""Indented JSON as every ``--json`` answer prints it, written without the generator chain.

``json.dumps(value, ensure_ascii=False, indent=2)`` runs CPython's pure-Python encoder
whenever ``indent`` is set (the C encoder writes only compact JSON): every value is
yielded up through one generator per level of nesting, which made an all-reused
``verify --json`` spend 0.2 s on its 6.7 MB answer at 1,000 Artifacts and 2 s at 10,000.
:func:`dumps_indented` writes the same bytes by appending pieces to one list: each string
still goes through the encoder's own escaping function (``json.encoder.encode_basestring``,
C when available), numbers through ``int.__repr__`` and ``float.__repr__`` as the encoder
writes them, and every type decision is taken in the encoder's order (a ``str`` subclass
such as a status enum is a string, ``bool`` before ``int``, any ``tuple`` is an array), so
the output, the errors (an unserializable value, a bad key, a circular reference) and
their wording are the encoder's. ``tests/unit/test_indented_json.py`` holds the identity
over generated documents (non-ASCII, control characters, lone surrogates, floats with
NaN, infinities and exponents, integers beyond 64 bits, every key type, subclasses).

Pure (standard library only): the kernel's rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from typing import Any

INDENT = 2  # spaces per level: the one format of every --json answer

_INFINITY = float("inf")
_ENCODER = json.JSONEncoder(ensure_ascii=False, indent=INDENT)  # its errors, for the rare case


def _float_text(value: float) -> str:
    """A float as the encoder writes it with ``allow_nan`` (its default)."""
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _key_text(key: object) -> str:
    """An object key as the encoder turns it into a string (before escaping it)."""
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float_text(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def dumps_indented(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, indent=2)``, byte for byte."""
    return "".join(dumps_indented_parts(value))


def dumps_indented_parts(value: Any) -> list[str]:
    """``dumps_indented(value)`` as consecutive parts of tens of KB each, joined as the
    pieces reach ``PIECES_PER_WRITE`` at an array's item: a long answer (67 MB for a
    10,000-Artifact Run) is never held as millions of small pieces nor copied whole again
    to be printed, and nothing is printed before all of it is made."""
    if isinstance(value, str):  # as JSONEncoder.encode answers a lone string
        return [encode_basestring(value)]
    parts: list[str] = []
    writer = _Writer.joining(parts.append)
    writer.value(value, 0)
    writer.joined()
    return parts


# Pieces a streamed array gathers before it writes them as one string: tens of KB a write.
PIECES_PER_WRITE = 4096


def write_indented_array(items: Iterable[Any], write: Callable[[str], None]) -> None:
    """``dumps_indented(list(items))``, written through ``write`` a part at a time while
    ``items`` is consumed: the array and its text are never whole in memory (a request list
    of a long history is a gigabyte of JSON)."""
    writer = _Writer.joining(write)
    pieces, separator = writer.pieces, "[" + writer.newline(1)
    for item in items:
        pieces.append(separator)
        writer.value(item, 1)
        separator = "," + writer.newline(1)
        if len(pieces) >= PIECES_PER_WRITE:
            writer.joined()
    if separator[0] == "[":  # no item
        write("[]")
        return
    pieces.append(writer.newline(0) + "]")
    writer.joined()


class _Writer:
    """One document's writer: ``append`` takes each piece; ``markers`` holds the containers
    being written (the encoder's circular-reference check)."""

    def __init__(self, append: Callable[[str], None]) -> None:
        self.append = append
        self.markers: set[int] = set()
        self.newlines = ["\n"]  # "\n" and the indent of each level, made once
        self.names: dict[str, str] = {}  # an object key, escaped, with its ": "
        # A ``joining`` writer's pieces (``append`` adds to them), and where they go joined
        # (``joined``): after an array's item once they are many, and at the end.
        self.pieces: list[str] = []
        self.part: Callable[[str], None] | None = None

    @classmethod
    def joining(cls, part: Callable[[str], None]) -> _Writer:
        """A writer that hands its pieces to ``part`` joined, tens of KB at a time."""
        pieces: list[str] = []
        writer = cls(pieces.append)
        writer.pieces, writer.part = pieces, part
        return writer

    def joined(self) -> None:
        """The pieces so far, joined, to ``part``."""
        assert self.part is not None
        self.part("".join(self.pieces))
        self.pieces.clear()

    def newline(self, level: int) -> str:
        newlines = self.newlines
        while len(newlines) <= level:
            newlines.append("\n" + " " * (INDENT * len(newlines)))
        return newlines[level]

    def value(self, value: Any, level: int) -> None:
        kind = type(value)
        if kind is str:
            self.append(encode_basestring(value))
        elif kind is dict:
            self.object(value, level)
        elif kind is list or kind is tuple:
            self.array(value, level)
        else:
            self.other(value, level)

    def other(self, value: Any, level: int) -> None:
        """Everything but an exact ``str``, ``dict``, ``list`` or ``tuple``, tested in the
        order the encoder tests them."""
        if isinstance(value, str):
            self.append(encode_basestring(value))
        elif value is None:
            self.append("null")
        elif value is True:
            self.append("true")
        elif value is False:
            self.append("false")
        elif isinstance(value, int):
            self.append(int.__repr__(value))
        elif isinstance(value, float):
            self.append(_float_text(value))
        elif isinstance(value, (list, tuple)):
            self.array(value, level)
        elif isinstance(value, dict):
            self.object(value, level)
        else:
            _ENCODER.default(value)  # raises the encoder's TypeError
            raise AssertionError("JSONEncoder.default returned")  # pragma: no cover

    def _enter(self, container: object) -> int:
        marker = id(container)
        if marker in self.markers:
            raise ValueError("Circular reference detected")
        self.markers.add(marker)
        return marker

    def array(self, items: list[Any] | tuple[Any, ...], level: int) -> None:
        if not items:
            self.append("[]")
            return
        marker = self._enter(items)
        append, inner = self.append, self.newline(level + 1)
        separator = "[" + inner
        pieces, joining = self.pieces, self.part is not None
        for item in items:
            if type(item) is str:
                append(separator + encode_basestring(item))
            else:
                append(separator)
                self.value(item, level + 1)
                if joining and len(pieces) >= PIECES_PER_WRITE:
                    self.joined()
            separator = "," + inner
        append(self.newline(level) + "]")
        self.markers.discard(marker)

    def object(self, mapping: dict[Any, Any], level: int) -> None:
        if not mapping:
            self.append("{}")
            return
        marker = self._enter(mapping)
        append, inner, names = self.append, self.newline(level + 1), self.names
        separator = "{" + inner
        for key, item in mapping.items():
            name = names.get(key) if type(key) is str else None
            if name is None:
                name = encode_basestring(key if type(key) is str else _key_text(key)) + ": "
                if type(key) is str:
                    names[key] = name
            kind = type(item)  # the common values inline: a scalar is one piece
            if kind is str:
                append(separator + name + encode_basestring(item))
            elif item is None:
                append(separator + name + "null")
            elif kind is dict:
                append(separator + name)
                self.object(item, level + 1)
            elif kind is int:
                append(separator + name + int.__repr__(item))
            elif isinstance(item, str):  # a status enum: the encoder tests str first too
                append(separator + name + encode_basestring(item))
            elif kind is bool:
                append(separator + name + ("true" if item else "false"))
            elif kind is list:
                append(separator + name)
                self.array(item, level + 1)
            else:
                append(separator + name)
                self.other(item, level + 1)
            separator = "," + inner
        append(self.newline(level) + "}")
        self.markers.discard(marker)
