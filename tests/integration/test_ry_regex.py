"""Contract tests of the regex port against the real Rust crate (through ``ry``).

Every row of the fidelity matrix in reference/ecosystem.md §1 is checked with the behaviour
of Rust's ``regex`` crate, so an upgrade of ``ry`` (or a swap of binding) is checked
mechanically. Any ``RegexEngine`` adapter must pass this file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.ports.regex import CompiledRegex, RegexEngine, RegexError

TWO_MIB = 2 * 1024 * 1024

ENGINE: RegexEngine = RyRegexEngine()


def compile_(pattern: str, *, case_insensitive: bool = False) -> CompiledRegex:
    return ENGINE.compile(pattern, case_insensitive=case_insensitive, size_limit=TWO_MIB)


def refusal(pattern: str, *, size_limit: int = TWO_MIB) -> str:
    with pytest.raises(RegexError) as caught:
        ENGINE.compile(pattern, case_insensitive=False, size_limit=size_limit)
    assert caught.value.message == str(caught.value)
    return caught.value.message


# (pattern, haystack, expected match) — one row (or more) per fidelity-matrix probe.
MATRIX = [
    # (?<name>a): Rust ≥1.10 named-group syntax
    pytest.param(r"(?<name>a)", "xa", True, id="angle-named-group"),
    pytest.param(r"(?P<n>a)", "xa", True, id="P-named-group"),
    pytest.param(r"(?P<n>a)", "xyz", False, id="P-named-group-miss"),
    # POSIX classes inside brackets
    pytest.param(r"^[[:alpha:]]+$", "abcXYZ", True, id="posix-alpha"),
    pytest.param(r"^[[:alpha:]]+$", "abc1", False, id="posix-alpha-digit"),
    pytest.param(r"[[:digit:]]", "a7", True, id="posix-digit"),
    # class set operations: intersection, difference, symmetric difference
    pytest.param(r"^[a-z&&[^aeiou]]+$", "bcd", True, id="class-intersection"),
    pytest.param(r"[a-z&&[^aeiou]]", "aei", False, id="class-intersection-vowels"),
    pytest.param(r"^[a-z--[aeiou]]+$", "bcd", True, id="class-difference"),
    pytest.param(r"[a-z--[aeiou]]", "aeiou", False, id="class-difference-vowels"),
    pytest.param(r"^[a-c~~b-d]+$", "ad", True, id="class-symmetric-difference"),
    pytest.param(r"[a-c~~b-d]", "bc", False, id="class-symmetric-difference-common"),
    # Unicode scripts
    pytest.param(r"^\p{Greek}+$", "αβγ", True, id="p-greek"),
    pytest.param(r"\p{Greek}", "abc", False, id="p-greek-latin"),
    # inline flags
    pytest.param(r"(?i)abc", "xABCx", True, id="inline-i"),
    pytest.param(r"abc", "ABC", False, id="case-sensitive-default"),
    pytest.param(r"(?x) a b # c", "ab", True, id="inline-x"),
    pytest.param(r"(?x) a b # c", "a b", False, id="inline-x-ignores-space"),
    # word boundaries, ASCII and Unicode-aware
    pytest.param(r"\bword\b", "a word here", True, id="word-boundary-ascii"),
    pytest.param(r"\bword\b", "swordfish", False, id="word-boundary-inside"),
    pytest.param(r"\bword\b", "éwordé", False, id="word-boundary-unicode"),
    # counted repetition
    pytest.param(r"^a{2,}$", "aaa", True, id="counted-min"),
    pytest.param(r"^a{2,}$", "a", False, id="counted-min-miss"),
    # Unicode \d and \w
    pytest.param(r"^\d+$", "٣٤٥", True, id="unicode-digits-arabic-indic"),
    pytest.param(r"^\w+$", "ñandú", True, id="unicode-word"),
    # regex ≥1.10 word-boundary assertions
    pytest.param(r"\<word\>", "a word here", True, id="start-end-word"),
    pytest.param(r"\<word\>", "swords", False, id="start-end-word-miss"),
    pytest.param(r"\b{start}word\b{end}", "a word", True, id="b-start-end"),
    pytest.param(r"\b{start}ord", "word", False, id="b-start-miss"),
    # `$` does not match before a trailing \n (no multi-line); \z is the absolute end
    pytest.param(r"a$", "a\n", False, id="dollar-before-trailing-newline"),
    pytest.param(r"a$", "ba", True, id="dollar-at-end"),
    pytest.param(r"a\z", "ba", True, id="z-at-end"),
    pytest.param(r"a\z", "a\n", False, id="z-before-newline"),
    pytest.param(r"(?m)a$", "a\nb", True, id="inline-m"),
    # `.` and (?s)
    pytest.param(r"a.b", "a\nb", False, id="dot-no-newline"),
    pytest.param(r"(?s)a.b", "a\nb", True, id="inline-s"),
    # (?U) swaps greed; still matches
    pytest.param(r"(?U)^a+$", "aaa", True, id="inline-U"),
    # \x{…} escapes
    pytest.param(r"\x{263A}", "smile ☺", True, id="x-braced-escape"),
    pytest.param(r"\x{263A}", "smile", False, id="x-braced-escape-miss"),
    # possessive-looking `a++` is nested repetition, not a possessive quantifier
    pytest.param(r"^a++b$", "aab", True, id="double-plus-is-repetition"),
]


@pytest.mark.parametrize(("pattern", "haystack", "expected"), MATRIX)
def test_fidelity_matrix(pattern: str, haystack: str, expected: bool) -> None:
    assert compile_(pattern).is_match(haystack) is expected


@pytest.mark.parametrize(
    ("pattern", "error"),
    [
        pytest.param(r"\Q.*\E", "unrecognized escape sequence", id="quote-escape"),
        pytest.param(r"\141", "backreferences are not supported", id="octal"),
        pytest.param(r"(?>a)", "unrecognized flag", id="atomic-group"),
        pytest.param(r"*", "repetition operator missing expression", id="bare-repetition"),
        pytest.param(r"(a", "unclosed group", id="unclosed-group"),
        pytest.param(r"\p{NoSuchScript}", "Unicode property not found", id="unknown-property"),
    ],
)
def test_rust_refuses_what_other_engines_accept(pattern: str, error: str) -> None:
    message = refusal(pattern)
    assert message.startswith("regex parse error:")
    assert error in message
    assert not message.startswith("Invalid regex")


LOOK_AROUND = "look-around, including look-ahead and look-behind, is not supported"


@pytest.mark.parametrize(
    ("pattern", "error"),
    [
        pytest.param(r"a(?=b)", LOOK_AROUND, id="lookahead"),
        pytest.param(r"a(?!b)", LOOK_AROUND, id="negative-lookahead"),
        pytest.param(r"(?<=a)b", LOOK_AROUND, id="lookbehind"),
        pytest.param(r"(?<!a)b", LOOK_AROUND, id="negative-lookbehind"),
        pytest.param(r"(a)\1", "backreferences are not supported", id="backreference"),
        pytest.param(r"(?P<x>a)\k<x>", "unrecognized escape sequence", id="named-backreference"),
    ],
)
def test_look_around_and_backreferences_are_refused(pattern: str, error: str) -> None:
    assert error in refusal(pattern)


def test_error_message_keeps_the_pattern_and_caret_positions() -> None:
    assert refusal(r"a(?=b)") == ("regex parse error:\n    a(?=b)\n     ^^^\nerror: " + LOOK_AROUND)


def test_case_insensitive_compile_does_not_shift_error_positions() -> None:
    with pytest.raises(RegexError) as caught:
        ENGINE.compile(r"a(?=b)", case_insensitive=True, size_limit=TWO_MIB)
    assert caught.value.message == refusal(r"a(?=b)")


def test_size_ceiling_at_two_mib() -> None:
    assert compile_(r"\w{41}").is_match("a" * 41)
    assert refusal(r"\w{50}") == "Compiled regex exceeds size limit of 2097152 bytes."


def test_size_limit_is_the_given_one() -> None:
    ENGINE.compile(r"\w{50}", case_insensitive=False, size_limit=10 * 1024 * 1024)
    assert refusal(r"\w{50}", size_limit=1024) == (
        "Compiled regex exceeds size limit of 1024 bytes."
    )


@pytest.mark.parametrize(
    "pattern", [r"[a-z]{5000}", r"a{1000}"], ids=["ascii-class-5000", "literal-1000"]
)
def test_large_but_cheap_repetitions_fit_in_two_mib(pattern: str) -> None:
    compile_(pattern)


@pytest.mark.parametrize(
    "pattern", [r"\w{500}", r"(\p{L}{100}){100}"], ids=["word-500", "nested-letters"]
)
def test_huge_unicode_repetitions_are_oversized(pattern: str) -> None:
    assert refusal(pattern).startswith("Compiled regex exceeds size limit of")


def test_empty_pattern_compiles_and_matches_everything() -> None:
    regex = compile_("")
    assert regex.is_match("")
    assert regex.is_match("anything")


@pytest.mark.parametrize(
    ("pattern", "haystack", "expected"),
    [
        pytest.param("ÉCOLE", "école", True, id="accented-upper-vs-lower"),
        pytest.param("école", "ÉCOLE", True, id="accented-lower-vs-upper"),
        pytest.param("straße", "STRAẞE", True, id="sharp-s-capital"),
        # simple case folding only: ß does not expand to SS
        pytest.param("straße", "STRASSE", False, id="sharp-s-no-full-folding"),
        pytest.param("k", "\u212a", True, id="kelvin-sign"),
        pytest.param("σ", "Σ", True, id="greek-sigma"),
        pytest.param(r"\p{Lu}", "a", True, id="class-folds-too"),
        pytest.param("(?-i)abc", "ABC", False, id="inline-flag-overrides"),
    ],
)
def test_case_insensitive_is_unicode_aware(pattern: str, haystack: str, expected: bool) -> None:
    regex = compile_(pattern, case_insensitive=True)
    assert regex.is_match(haystack) is expected


def test_case_sensitive_by_default() -> None:
    assert not compile_("ÉCOLE").is_match("école")
    assert compile_("(?i)ÉCOLE").is_match("école")


def test_no_catastrophic_backtracking() -> None:
    # Exponential for a backtracking engine; the Rust crate answers in linear time.
    assert not compile_(r"(a+)+$").is_match("a" * 100_000 + "b")
    assert compile_(r"(a+)+$").is_match("a" * 100_000)


def test_pattern_with_lone_surrogate_is_a_regex_error() -> None:
    assert "not valid Unicode" in refusal("a\ud800")


def test_negative_size_limit_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        ENGINE.compile("a", case_insensitive=False, size_limit=-1)


def test_ry_is_not_imported_by_the_adapter_module() -> None:
    code = "import sys, adapters.ry_regex; print('ry' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("pattern", "haystack", "expected"),
    [
        ("b", "abc", 1),
        ("z", "abc", None),
        ("b", "ééb", 2),  # code points, though the crate counts UTF-8 bytes (4 here)
        ("c", "a\U0001f600c", 2),
        ("^$", "", 0),
        ("(?m)^x", "é\nx", 2),
    ],
)
def test_find_start_is_an_index_into_the_text(
    pattern: str, haystack: str, expected: int | None
) -> None:
    """grep splits its lines off at this index: it must be the str's own, not the crate's."""
    assert compile_(pattern).find_start(haystack) == expected
