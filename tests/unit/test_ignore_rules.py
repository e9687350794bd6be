"""Gitignore lines, matched one entry at a time on the entry's own path (gitignore(5))."""

from __future__ import annotations

import pytest

from artifactize.domain.reviews.reuse.ignore_rules import (
    BUILTIN_IGNORES,
    IgnoreRules,
    compile_pattern,
)


def decide(text: str, path: str, is_dir: bool = False) -> bool | None:
    return IgnoreRules.parse(text).decide(path, is_dir)


def test_builtin_ignores_are_the_documented_five() -> None:
    assert BUILTIN_IGNORES == (".git", "__pycache__/", "*.pyc", "target/", "node_modules/")


@pytest.mark.parametrize("line", ["", "   ", "# a comment", "#", "/", "!", "\r"])
def test_blank_lines_and_comments_are_not_patterns(line: str) -> None:
    assert compile_pattern(line) is None


@pytest.mark.parametrize(
    ("rules", "path", "is_dir", "decision"),
    [
        pytest.param("*.log", "notes.md", False, None, id="no-pattern-matches-no-decision"),
        # A name without a slash matches at any depth.
        pytest.param("*.log", "a.log", False, True, id="name-at-the-top"),
        pytest.param("*.log", "deep/er/a.log", False, True, id="name-at-any-depth"),
        # A slash inside anchors the pattern to the folder of the file.
        pytest.param("docs/*.tmp", "docs/a.tmp", False, True, id="inner-slash-anchors"),
        pytest.param("docs/*.tmp", "x/docs/a.tmp", False, None, id="inner-slash-not-deeper"),
        pytest.param("/top", "top", False, True, id="leading-slash-anchors"),
        pytest.param("/top", "sub/top", False, None, id="leading-slash-not-deeper"),
        # A trailing slash matches folders only.
        pytest.param("build/", "build", True, True, id="trailing-slash-folder"),
        pytest.param("build/", "build", False, None, id="trailing-slash-not-a-file"),
        # The walk never enters an excluded folder; below a walked one, only the entry counts.
        pytest.param("build/", "build/x", False, None, id="own-path-not-through-folder"),
        pytest.param("build", "build/x", False, None, id="own-path-not-through-name"),
        # A star does not cross folders, a double star does.
        pytest.param("a/*.c", "a/b/x.c", False, None, id="star-stays-in-its-folder"),
        pytest.param("a/**/x.c", "a/b/c/x.c", False, True, id="double-star-crosses-folders"),
        pytest.param("a/**/x.c", "a/x.c", False, True, id="double-star-matches-no-folder"),
        pytest.param("foo/**", "foo/x/y", False, True, id="trailing-double-star-inside"),
        pytest.param("foo/**", "foo", True, None, id="trailing-double-star-not-the-folder"),
        pytest.param("*", ".hidden", False, True, id="star-matches-dotfiles"),
        pytest.param("README", "readme", False, None, id="case-sensitive"),
        # The last matching line wins, and a negation re-includes.
        pytest.param("*.log\n!keep.log", "keep.log", False, False, id="negation-re-includes"),
        pytest.param("*.log\n!keep.log", "other.log", False, True, id="negation-only-its-own"),
        pytest.param("!keep.log\n*.log", "keep.log", False, True, id="last-matching-line-wins"),
        # Escapes make a leading hash and bang literal.
        pytest.param("\\#notes", "#notes", False, True, id="escaped-hash"),
        pytest.param("\\!bang", "!bang", False, True, id="escaped-bang"),
        pytest.param("\\!bang", "bang", False, None, id="escaped-bang-is-no-negation"),
        # Trailing spaces are dropped unless escaped.
        pytest.param("trail   ", "trail", False, True, id="trailing-spaces-dropped"),
        pytest.param("esc\\ ", "esc ", False, True, id="escaped-trailing-space-kept"),
        pytest.param("esc\\ ", "esc", False, None, id="escaped-trailing-space-required"),
        pytest.param("*.log\r\n!keep.log\r\n", "keep.log", False, False, id="crlf-lines"),
    ],
)
def test_decision(rules: str, path: str, is_dir: bool, decision: bool | None) -> None:
    assert decide(rules, path, is_dir) is decision
