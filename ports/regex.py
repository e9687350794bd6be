"""Regex port: the Rust ``regex`` crate's syntax and semantics, behind a small interface.

The ``grep`` tool must accept exactly what the Rust crate accepts (``\\p{…}``, ``[[:alpha:]]``,
class set operations, ``(?<name>…)``, inline flags) and refuse the rest (look-around,
backreferences), match in linear time, and refuse patterns whose compiled form exceeds a size
limit. The adapter binds the real crate; the domain only asks "does this line match?" and "where
does the first match start?".
"""

from __future__ import annotations

from typing import Protocol


class RegexError(Exception):
    """A pattern the engine refuses: bad syntax or over the size limit.

    ``message`` is the engine's own text (for the Rust crate, e.g. ``regex parse error: …`` or
    ``Compiled regex exceeds size limit of 2097152 bytes.``).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CompiledRegex(Protocol):
    def is_match(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text`` (unanchored search)."""
        ...

    def find_start(self, text: str) -> int | None:
        """Where the leftmost match in ``text`` starts, as an index into ``text`` (code
        points), or None when there is none."""
        ...


class RegexEngine(Protocol):
    def compile(self, pattern: str, *, case_insensitive: bool, size_limit: int) -> CompiledRegex:
        """Compile ``pattern``; ``size_limit`` bounds the compiled program, in bytes.

        ``case_insensitive`` is Unicode-aware (``ÉCOLE`` matches ``école``). Raises
        ``RegexError`` when the pattern is invalid or its compiled form exceeds ``size_limit``.
        An empty pattern compiles (and matches everything); refusing it is the caller's rule.
        """
        ...
