"""Regex adapter: the Rust ``regex`` crate (1.13) through the ``ry`` binding.

``ry`` is the one binding found that takes a compile ``size_limit`` (reference/ecosystem.md §1).
It is a 17 MB extension module, so it is imported on the first compile, not at import time:
the CLI starts without it.

Case-insensitive matching uses the crate's builder flag (``RegexBuilder::case_insensitive``),
which is the same Unicode-aware simple case folding as an inline ``(?i)`` prefix but leaves the
pattern, and therefore the positions in the crate's error messages, untouched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ports.regex import CompiledRegex, RegexError

if TYPE_CHECKING:
    import ry

# ry wraps every crate error as ValueError("Invalid regex: <the crate's message>").
_RY_ERROR_PREFIX = "Invalid regex: "


def _engine_message(error: Exception) -> str:
    message = str(error)
    return message.removeprefix(_RY_ERROR_PREFIX)


class RyCompiledRegex:
    """A compiled pattern; matching is linear in the haystack (no backtracking)."""

    def __init__(self, regex: ry.Regex) -> None:
        self._regex = regex

    def is_match(self, text: str) -> bool:
        # The crate takes UTF-8: text with lone surrogates raises UnicodeEncodeError.
        return self._regex.is_match(text)


class RyRegexEngine:
    """``RegexEngine`` backed by the Rust crate; errors carry the crate's own text."""

    def compile(self, pattern: str, *, case_insensitive: bool, size_limit: int) -> CompiledRegex:
        if size_limit < 0:
            raise ValueError(f"size_limit must not be negative, got {size_limit}")
        import ry  # lazy: a 17 MB module the CLI should not load unless a regex is needed

        try:
            regex = ry.Regex(pattern, case_insensitive=case_insensitive, size_limit=size_limit)
        except UnicodeEncodeError as error:
            # A pattern with lone surrogates (possible from JSON input) is not a Rust string.
            raise RegexError(f"pattern is not valid Unicode: {error.reason}") from error
        except ValueError as error:
            raise RegexError(_engine_message(error)) from error
        return RyCompiledRegex(regex)
