"""grep's line search against the plain one: every line split off and tried by the regex.

``_matching_lines`` tries only the lines where the prefilter's leftmost match starts, block
by block; it must give exactly the lines the plain search gives, whatever the blocks' size,
the line endings (LF, CRLF, a lone CR, none at the end) or non-ASCII text (the crate's
offsets are UTF-8 bytes, the text's indexes code points)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.domain.tools.builtins import search

PATTERNS = [
    "ab",
    "^a",
    "b$",
    "^$",
    "a.b",
    r"a\sb",
    r"\bab\b",
    "é+",
    "a|^",
    "x*",
    r"\r",
    "[^a]b",
    "a+ ?b",
    "$",
]
TEXT = st.text(alphabet=["a", "b", "x", " ", "é", "\n", "\r", "\U0001f600"], max_size=60)
_ENGINE: Any = SimpleNamespace(regex=RyRegexEngine())


def plain(text: str, pattern: str) -> list[tuple[int, str]]:
    regex, _ = search._compile(_ENGINE, pattern, False)
    return [(n, line) for n, line in search._lines(text) if regex.is_match(line)]


def blocked(text: str, pattern: str, block: int = search._BLOCK_CHARS) -> list[tuple[int, str]]:
    regex, prefilter = search._compile(_ENGINE, pattern, False)
    assert prefilter is not None
    return list(search._matching_lines(text, regex, prefilter, block))


@settings(max_examples=300, deadline=None)
@given(text=TEXT, pattern=st.sampled_from(PATTERNS), block=st.integers(1, 12))
def test_blocked_search_finds_the_lines_the_plain_search_finds(
    text: str, pattern: str, block: int
) -> None:
    assert blocked(text, pattern, block) == plain(text, pattern)


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("a\nb\n", "^$", []),  # no line after the final LF
        ("a\n\nb", "^$", [(2, "")]),
        ("éé ab\r\nab", "b$", [(1, "éé ab"), (2, "ab")]),
        ("xa\nb", r"a\sb", []),  # the prefilter's match spans two lines: neither matches
    ],
)
def test_edges(text: str, pattern: str, expected: list[tuple[int, str]]) -> None:
    assert blocked(text, pattern) == plain(text, pattern) == expected
