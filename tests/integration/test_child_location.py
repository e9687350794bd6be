"""``child_location`` (the walk's shortcut) against ``resolve_location`` (the full rules).

The shortcut may decline (None) any name, but a location it does give must be the one the
full resolution gives: the same Artifact, ownership and physical components. Names cover
what a rule touches: a mount alias at the Artifact's root (and the same name deeper), where
a child Artifact's folder starts, dot names, characters outside the plain set, a name that
takes the path past the logical length limit, and a file Artifact's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.domain.logical_paths import LOGICAL_PATH_MAX_UTF16
from artifactize.domain.project.scope import eval_scope
from artifactize.domain.tools.locations import (
    all_plain_children,
    child_location,
    plain_children,
    resolve_location,
)
from artifactize.domain.tools.results import ToolError
from artifactize.domain.use_cases.config_service import ConfigService
from tests.support.workspaces import write

EVAL = """
[evals.review]
title = "Review"
profile = { kind = "agent", backend = "openai", model = "test" }
payload = { instruction = "Review." }
"""

NAMES = [
    "x.txt",
    "source",
    "nested",
    "cases",
    "deep",
    ".",
    "..",
    ".hidden",
    "é.txt",
    "with space",
    "a+b@c-d_e",
    "n" * 200,
    "n" * (LOGICAL_PATH_MAX_UTF16 - 10),
    "n" * LOGICAL_PATH_MAX_UTF16,
    "notes.md",
]


@pytest.fixture
def workspace_root(tmp_path: Path) -> Path:
    root = tmp_path / "w"
    write(root / "a" / "index.artf", 'name = "a"\nmounts = { source = "b" }\n' + EVAL)
    write(root / "b" / "index.artf", 'name = "b"\n')
    write(root / "a" / "nested" / "cases" / "index.artf", 'name = "cases"\n')
    write(root / "a" / "nested" / "deep" / "cases" / "x.txt", "x\n")
    write(root / "a" / "notes.md.artf", 'name = "notes"\n')
    write(root / "a" / "notes.md", "# notes\n")
    return root


def test_the_shortcut_agrees_with_the_full_resolution(workspace_root: Path) -> None:
    workspace = ConfigService(PosixFilesystem()).load(str(workspace_root.resolve()))
    scope = eval_scope(workspace, "a/review")
    parents = ["", "nested", "nested/deep", "source", "nested/cases"]
    taken = declined = 0
    for parent_path in parents:
        parent = resolve_location(workspace, "a", parent_path, scope)
        for name in NAMES:
            shortcut = child_location(parent, name)
            if shortcut is None:
                declined += 1
                continue
            taken += 1
            path = f"{parent_path}/{name}" if parent_path else name
            try:
                full = resolve_location(workspace, "a", path, scope)
            except ToolError as refused:
                shown = path[:80]
                raise AssertionError(
                    f"{shown!r}: the shortcut took it, the rules refuse it"
                ) from refused
            assert shortcut == full, path[:80]
    assert taken and declined  # both sides of the shortcut were exercised


def test_a_whole_folder_is_plain_exactly_when_each_name_is(workspace_root: Path) -> None:
    """``all_plain_children`` (one question per folder) answers what ``plain_children``
    answers name by name, for every subset of two names and for all of them at once."""
    workspace = ConfigService(PosixFilesystem()).load(str(workspace_root.resolve()))
    scope = eval_scope(workspace, "a/review")
    answers = set()
    for parent_path in ["", "nested", "nested/deep", "source", "nested/cases"]:
        parent = resolve_location(workspace, "a", parent_path, scope)
        plain = plain_children(parent)
        groups = [[], NAMES, *([a, b] for a in NAMES for b in NAMES), *([n] for n in NAMES)]
        for names in groups:
            expected = all(plain(name) for name in names)
            assert all_plain_children(parent, names) == expected, (parent_path, names[:3])
            answers.add(expected)
    assert answers == {True, False}
