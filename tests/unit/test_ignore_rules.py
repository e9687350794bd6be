"""Gitignore lines, matched one entry at a time on the entry's own path (gitignore(5))."""

from __future__ import annotations

import pytest

from domain.reviews.ignore_rules import BUILTIN_IGNORES, IgnoreRules, compile_pattern


def decide(text: str, path: str, is_dir: bool = False) -> bool | None:
    return IgnoreRules.parse(text).decide(path, is_dir)


def test_builtin_ignores_are_the_documented_five() -> None:
    assert BUILTIN_IGNORES == (".git", "__pycache__/", "*.pyc", "target/", "node_modules/")


@pytest.mark.parametrize("line", ["", "   ", "# a comment", "#", "/", "!", "\r"])
def test_blank_lines_and_comments_are_not_patterns(line: str) -> None:
    assert compile_pattern(line) is None


def test_no_pattern_matches_gives_no_decision() -> None:
    assert decide("*.log", "notes.md") is None


def test_a_name_without_slash_matches_at_any_depth() -> None:
    assert decide("*.log", "a.log") is True
    assert decide("*.log", "deep/er/a.log") is True


def test_a_slash_inside_anchors_to_the_file_folder() -> None:
    assert decide("docs/*.tmp", "docs/a.tmp") is True
    assert decide("docs/*.tmp", "x/docs/a.tmp") is None
    assert decide("/top", "top") is True
    assert decide("/top", "sub/top") is None


def test_a_trailing_slash_matches_folders_only() -> None:
    assert decide("build/", "build", is_dir=True) is True
    assert decide("build/", "build", is_dir=False) is None


def test_an_entry_is_matched_on_its_own_path_not_through_its_folder() -> None:
    """The walk never enters an excluded folder; below a walked one, only the entry counts."""
    assert decide("build/", "build/x") is None
    assert decide("build", "build/x") is None


def test_star_does_not_cross_folders_but_double_star_does() -> None:
    assert decide("a/*.c", "a/b/x.c") is None
    assert decide("a/**/x.c", "a/b/c/x.c") is True
    assert decide("a/**/x.c", "a/x.c") is True
    assert decide("foo/**", "foo/x/y") is True
    assert decide("foo/**", "foo", is_dir=True) is None


def test_star_matches_dotfiles() -> None:
    assert decide("*", ".hidden") is True


def test_matching_is_case_sensitive() -> None:
    assert decide("README", "readme") is None


def test_the_last_matching_line_wins_and_negation_re_includes() -> None:
    assert decide("*.log\n!keep.log", "keep.log") is False
    assert decide("*.log\n!keep.log", "other.log") is True
    assert decide("!keep.log\n*.log", "keep.log") is True


def test_escapes_make_leading_hash_and_bang_literal() -> None:
    assert decide("\\#notes", "#notes") is True
    assert decide("\\!bang", "!bang") is True
    assert decide("\\!bang", "bang") is None


def test_trailing_spaces_are_dropped_unless_escaped() -> None:
    assert decide("trail   ", "trail") is True
    assert decide("esc\\ ", "esc ") is True
    assert decide("esc\\ ", "esc") is None


def test_crlf_lines_are_accepted() -> None:
    assert decide("*.log\r\n!keep.log\r\n", "keep.log") is False
