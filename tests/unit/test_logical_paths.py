"""Logical paths and glob patterns: every rule at its boundary, plus property tests."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifactize.domain.logical_paths import (
    FILE_ARTIFACT_VIRTUAL_ROOT,
    GLOB_PATTERN_MAX_CHARS,
    LOGICAL_PATH_MAX_UTF16,
    LOGICAL_PATH_RULE,
    LogicalPathError,
    glob_pattern_problem,
    logical_path_problem,
    parse_logical_path,
    validate_glob_pattern,
)
from artifactize.domain.text import utf16_length

ASTRAL = "\N{GRINNING FACE}"  # U+1F600: two UTF-16 code units
CONTROLS = [chr(code) for code in range(0x20)] + ["\x7f"]
FORBIDDEN_CHARACTERS = [*CONTROLS, "\\", ":"]
FORBIDDEN_COMPONENTS = ["", ".", ".."]


def accepted(path: str) -> bool:
    return logical_path_problem(path) is None


# --- length ---------------------------------------------------------------------------


def test_the_limit_is_4096_utf16_units() -> None:
    assert LOGICAL_PATH_MAX_UTF16 == 4096


def test_ascii_path_at_the_limit_is_accepted() -> None:
    path = "a" * LOGICAL_PATH_MAX_UTF16
    assert parse_logical_path(path) == (path,)


def test_ascii_path_one_past_the_limit_is_refused() -> None:
    path = "a" * (LOGICAL_PATH_MAX_UTF16 + 1)
    problem = logical_path_problem(path)
    assert problem is not None and "UTF-16" in problem
    with pytest.raises(LogicalPathError, match="UTF-16"):
        parse_logical_path(path)


def test_ascii_path_with_components_at_the_limit() -> None:
    head = "/".join(["abc"] * 1023)
    path = head + "/" + "x" * (LOGICAL_PATH_MAX_UTF16 - len(head) - 1)
    assert len(path) == LOGICAL_PATH_MAX_UTF16
    assert accepted(path)
    assert not accepted(path + "c")


def test_astral_characters_count_two_units() -> None:
    path = ASTRAL * (LOGICAL_PATH_MAX_UTF16 // 2)
    assert len(path) == LOGICAL_PATH_MAX_UTF16 // 2
    assert utf16_length(path) == LOGICAL_PATH_MAX_UTF16
    assert accepted(path)
    assert not accepted(path + "a")


def test_astral_path_refused_by_code_units_even_when_short_in_code_points() -> None:
    # 2049 code points, 4098 code units: a code-point count would wrongly accept it.
    path = ASTRAL * (LOGICAL_PATH_MAX_UTF16 // 2 + 1)
    assert len(path) < LOGICAL_PATH_MAX_UTF16
    assert not accepted(path)


def test_bmp_non_ascii_counts_one_unit() -> None:
    path = "é" * LOGICAL_PATH_MAX_UTF16
    assert accepted(path)
    assert not accepted(path + "é")


# --- characters -----------------------------------------------------------------------


@pytest.mark.parametrize("char", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_every_ascii_control_is_refused(char: str) -> None:
    for path in (f"a{char}b", f"{char}", f"dir/{char}name", f"dir/name{char}"):
        problem = logical_path_problem(path)
        assert problem == "it contains an ASCII control character"
        with pytest.raises(LogicalPathError, match="ASCII control"):
            parse_logical_path(path)


@pytest.mark.parametrize("char", ["\x80", "\x9f", "\u00a0", "\u2028"])
def test_non_ascii_controls_are_not_ascii_controls(char: str) -> None:
    assert accepted(f"a{char}b")


def test_space_and_tilde_are_fine() -> None:
    assert accepted(" a b ")
    assert accepted("~")


def test_backslash_is_refused() -> None:
    assert logical_path_problem("data\\file") == "it contains a backslash"
    assert logical_path_problem("\\") == "it contains a backslash"


def test_colon_is_refused() -> None:
    assert logical_path_problem("C:/x") == "it contains a colon"
    assert logical_path_problem("a:b") == "it contains a colon"
    assert logical_path_problem("file:") == "it contains a colon"


# --- components -----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/etc/passwd", "/a"])
def test_absolute_paths_are_refused(path: str) -> None:
    problem = logical_path_problem(path)
    assert problem is not None and "empty component" in problem


@pytest.mark.parametrize("path", ["a/", "a//b", "//", "a/b/"])
def test_empty_components_are_refused(path: str) -> None:
    problem = logical_path_problem(path)
    assert problem is not None and "empty component" in problem


@pytest.mark.parametrize("path", [".", "./x", "x/.", "a/./b"])
def test_dot_components_are_refused(path: str) -> None:
    assert logical_path_problem(path) == "it has a '.' component"


@pytest.mark.parametrize("path", ["..", "../x", "x/..", "a/../b", "../../etc/passwd"])
def test_dot_dot_components_are_refused(path: str) -> None:
    assert logical_path_problem(path) == "it has a '..' component"


@pytest.mark.parametrize("path", ["...", ".hidden", "a.", "..a", "a..", "a/.git/b", "x.y.z"])
def test_dots_inside_a_name_are_fine(path: str) -> None:
    assert accepted(path)


def test_the_empty_path_is_the_root() -> None:
    assert logical_path_problem("") is None
    assert parse_logical_path("") == ()
    assert parse_logical_path("", file_artifact_root=True) == ()


def test_parse_splits_into_components() -> None:
    assert parse_logical_path("a") == ("a",)
    assert parse_logical_path("rules/requirements.md") == ("rules", "requirements.md")


def test_the_error_message_names_the_rule() -> None:
    with pytest.raises(LogicalPathError) as info:
        parse_logical_path("a/../b")
    assert str(info.value) == f"{LOGICAL_PATH_RULE} It has a '..' component."
    assert str(info.value).startswith("Artifact path must be a safe relative logical path.")


# --- the lone "." -------------------------------------------------------------------------


def test_lone_dot_is_the_file_artifact_virtual_root_only_when_asked() -> None:
    assert FILE_ARTIFACT_VIRTUAL_ROOT == "."
    assert parse_logical_path(".", file_artifact_root=True) == ()
    with pytest.raises(LogicalPathError):
        parse_logical_path(".")
    with pytest.raises(LogicalPathError):
        parse_logical_path(".", file_artifact_root=False)


@pytest.mark.parametrize("path", ["./", "./a", "a/.", "..", "./."])
def test_other_dot_forms_are_refused_even_for_a_file_artifact(path: str) -> None:
    with pytest.raises(LogicalPathError):
        parse_logical_path(path, file_artifact_root=True)


def test_the_file_artifact_flag_keeps_every_other_rule() -> None:
    assert parse_logical_path("a/b", file_artifact_root=True) == ("a", "b")
    with pytest.raises(LogicalPathError):
        parse_logical_path("a:b", file_artifact_root=True)
    with pytest.raises(LogicalPathError):
        parse_logical_path("a" * (LOGICAL_PATH_MAX_UTF16 + 1), file_artifact_root=True)


# --- glob patterns ----------------------------------------------------------------------


def test_glob_limit_constant() -> None:
    assert GLOB_PATTERN_MAX_CHARS == 4096


def test_glob_pattern_must_be_nonempty() -> None:
    assert glob_pattern_problem("") == "it is empty"
    with pytest.raises(LogicalPathError, match="nonempty"):
        validate_glob_pattern("")


def test_glob_pattern_at_the_limit_is_accepted_and_one_past_refused() -> None:
    pattern = "*" * GLOB_PATTERN_MAX_CHARS
    assert validate_glob_pattern(pattern) == pattern
    problem = glob_pattern_problem(pattern + "*")
    assert problem is not None and "longer" in problem


def test_glob_patterns_count_characters_not_utf16_units() -> None:
    pattern = ASTRAL * GLOB_PATTERN_MAX_CHARS  # 8192 UTF-16 units, 4096 characters
    assert glob_pattern_problem(pattern) is None
    assert glob_pattern_problem(pattern + ASTRAL) is not None


@pytest.mark.parametrize("pattern", ["/", "/*.md", "/a/**"])
def test_glob_pattern_must_not_start_with_a_slash(pattern: str) -> None:
    assert glob_pattern_problem(pattern) == "it is absolute (starts with '/')"


def test_glob_pattern_refuses_backslash_colon_and_nul() -> None:
    assert glob_pattern_problem("a\\*.md") == "it contains a backslash"
    assert glob_pattern_problem("c:*.md") == "it contains a colon"
    assert glob_pattern_problem("a\x00b") == "it contains NUL"


@pytest.mark.parametrize("pattern", ["a//b", "*/", "**/"])
def test_glob_pattern_refuses_empty_components(pattern: str) -> None:
    problem = glob_pattern_problem(pattern)
    assert problem is not None and "empty component" in problem


@pytest.mark.parametrize("pattern", [".", "./*.md", "*/./x", "..", "../*", "**/../x"])
def test_glob_pattern_refuses_dot_components(pattern: str) -> None:
    problem = glob_pattern_problem(pattern)
    assert problem is not None and "component" in problem
    with pytest.raises(LogicalPathError):
        validate_glob_pattern(pattern)


@pytest.mark.parametrize(
    "pattern", ["*", "**", "**/*.md", "src/*.py", ".*", "*.tar.gz", "a b/[ch]?", "{a,b}"]
)
def test_glob_pattern_accepts_ordinary_patterns(pattern: str) -> None:
    assert validate_glob_pattern(pattern) == pattern


# --- properties -----------------------------------------------------------------------

_PATHISH = st.text(alphabet=st.sampled_from(["a", "b", ".", "/", "é", ASTRAL, " "]), max_size=24)
_NAME = st.text(
    alphabet=st.characters(
        exclude_categories=["Cs"],
        exclude_characters=["/", "\\", ":", "\x7f"],
        min_codepoint=0x20,
    ),
    min_size=1,
    max_size=8,
).filter(lambda name: name not in (".", ".."))
_VALID_PARTS = st.lists(_NAME, min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_PATHISH, st.text(max_size=24)))
def test_an_accepted_path_never_leaves_the_root(path: str) -> None:
    if logical_path_problem(path) is not None:
        return
    joined = posixpath.normpath(posixpath.join("/root", path))
    assert joined == "/root" or joined.startswith("/root/")


@settings(max_examples=300, deadline=None)
@given(_VALID_PARTS)
def test_generated_valid_paths_are_accepted(parts: list[str]) -> None:
    path = "/".join(parts)
    assert parse_logical_path(path) == tuple(parts)


@settings(max_examples=300, deadline=None)
@given(_VALID_PARTS, st.sampled_from(FORBIDDEN_CHARACTERS), st.data())
def test_inserting_a_forbidden_character_is_refused(
    parts: list[str], char: str, data: st.DataObject
) -> None:
    path = "/".join(parts)
    at = data.draw(st.integers(0, len(path)))
    spoiled = path[:at] + char + path[at:]
    assert logical_path_problem(spoiled) is not None
    with pytest.raises(LogicalPathError):
        parse_logical_path(spoiled, file_artifact_root=True)


@settings(max_examples=300, deadline=None)
@given(_VALID_PARTS, st.sampled_from(FORBIDDEN_COMPONENTS), st.data())
def test_inserting_a_forbidden_component_is_refused(
    parts: list[str], component: str, data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, len(parts)))
    spoiled = "/".join([*parts[:at], component, *parts[at:]])
    assert logical_path_problem(spoiled) is not None
    with pytest.raises(LogicalPathError):
        parse_logical_path(spoiled, file_artifact_root=True)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_PATHISH, st.text(max_size=24), _VALID_PARTS.map("/".join)))
def test_parse_round_trips(path: str) -> None:
    try:
        parts = parse_logical_path(path)
    except LogicalPathError:
        return
    assert "/".join(parts) == path
    assert all(part not in ("", ".", "..") for part in parts)
