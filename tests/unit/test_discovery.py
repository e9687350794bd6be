"""Discovery through the in-memory filesystem: the walk, ignore rules and per-file checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from artifactize.domain.declarations.diagnostics import ConfigError, Problem
from artifactize.domain.project.discovery import (
    DECLARATION_MAX_BYTES,
    Discovery,
    _columns,
    _string_lists,
    discover,
)
from tests.fakes.filesystem import MemoryFilesystem, Node, Special, Symlink

HUMAN_EVAL = b"""
[evals.check]
title = "Checked"
profile = { kind = "human" }
payload.instruction = "Look at it."
"""


def decl(name: str, extra: bytes = b"") -> bytes:
    return f'name = "{name}"\n'.encode() + extra


def run(
    tree: Mapping[str, Node], *, enter_nested: bool = False
) -> tuple[Discovery, MemoryFilesystem]:
    fs = MemoryFilesystem({"/repo": tree})
    with fs.open_root("/repo") as root:
        result = discover(root, "/repo", enter_nested=enter_nested)
    assert fs.open_handles == 0
    assert fs.writes == []
    return result, fs


def problems(tree: Mapping[str, Node]) -> tuple[Problem, ...]:
    fs = MemoryFilesystem({"/repo": tree})
    with fs.open_root("/repo") as root, pytest.raises(ConfigError) as caught:
        discover(root, "/repo")
    assert fs.open_handles == 0
    assert fs.writes == []
    return caught.value.problems


def only_problem(tree: Mapping[str, Node]) -> Problem:
    found = problems(tree)
    assert len(found) == 1, found
    return found[0]


def paths(result: Discovery) -> list[str]:
    return [a.path for a in result.artifacts]


# --- the walk ---------------------------------------------------------------------------


def test_walk_is_depth_first_in_sorted_name_order() -> None:
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        "b": {"index.artf": decl("b")},
        "a": {
            "z": {"index.artf": decl("az")},
            "index.artf": decl("a"),
            "m": {"index.artf": decl("am")},
        },
        "B": {"index.artf": decl("upper-b")},
        "c.md": b"c",
        "c.md.artf": decl("c"),
        "a.md": b"a",
        "a.md.artf": decl("a-md"),
    }
    result, _ = run(tree)
    # In each directory: its index.artf, then its sidecars, then its subdirectories,
    # every list in code point order (upper case before lower case).
    assert paths(result) == ["", "a.md", "c.md", "B", "a", "a/m", "a/z", "b"]
    assert [a.name for a in result.artifacts] == [
        "root",
        "a-md",
        "c",
        "upper-b",
        "a",
        "am",
        "az",
        "b",
    ]


def test_declared_artifact_fields() -> None:
    result, _ = run(
        {
            "index.artf": decl("root"),
            "docs": {"diagram.svg": b"<svg/>", "diagram.svg.artf": decl("diagram")},
            "api": {"index.artf": decl("api")},
        }
    )
    by_name = {a.name: a for a in result.artifacts}
    assert result.root_path == "/repo"
    root, api, diagram = by_name["root"], by_name["api"], by_name["diagram"]
    assert (root.path, root.folder, root.target, root.owner) == ("", "", None, None)
    assert (api.path, api.folder, api.target, api.owner) == ("api", "api", None, "")
    assert (diagram.path, diagram.folder, diagram.target, diagram.owner) == (
        "docs/diagram.svg",
        "docs",
        "diagram.svg",
        "",
    )
    assert diagram.kind.value == "file"
    assert root.kind.value == "folder"
    assert diagram.source.path == "docs/diagram.svg.artf"
    assert api.source.path == "api/index.artf"
    assert root.folder_entries == frozenset({"index.artf", "docs", "api"})


def test_owner_is_the_nearest_enclosing_folder_artifact() -> None:
    result, _ = run(
        {
            "index.artf": decl("root"),
            "a": {"b": {"index.artf": decl("ab"), "c": {"d": {"index.artf": decl("abcd")}}}},
        }
    )
    owners = {a.name: a.owner for a in result.artifacts}
    assert owners == {"root": None, "ab": "", "abcd": "a/b"}


def test_git_and_node_modules_are_never_entered() -> None:
    broken = {"index.artf": b"this is not TOML", "x.artf": b""}
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        ".git": dict(broken),
        "node_modules": dict(broken),
        "src": {"node_modules": dict(broken), "index.artf": decl("src")},
    }
    result, fs = run(tree)
    assert paths(result) == ["", "src"]
    assert fs.open_directory_calls == 1  # only src
    assert fs.read_file_calls == 2


def test_a_folder_holding_a_git_is_another_repository_not_walked_unless_asked() -> None:
    broken = {"index.artf": b"this is not TOML"}
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        "clone": {".git": dict(broken), "index.artf": decl("clone"), "deep": {}},
        "submodule": {".git": b"gitdir: ../.git/modules/submodule\n", "index.artf": decl("sub")},
        "src": {"index.artf": decl("src")},
    }
    result, fs = run(tree)
    assert paths(result) == ["", "src"]
    assert result.nested_repositories == ["clone", "submodule"]
    assert fs.open_directory_calls == 3  # each is opened to see its .git, then left
    entered, _ = run(tree, enter_nested=True)
    assert paths(entered) == ["", "clone", "src", "submodule"]
    assert entered.nested_repositories == []


def test_directory_symlinks_are_not_followed() -> None:
    tree: dict[str, Node] = {
        "real": {"index.artf": decl("real")},
        "link": Symlink("real"),
        "loop": Symlink("."),
    }
    result, fs = run(tree)
    assert paths(result) == ["real"]
    assert fs.open_directory_calls == 1


class _StaleListing(dict[str, Node]):
    """Lists ``sub`` as a directory although it has become a symlink since (a swap race)."""

    def items(self):
        return [(k, {} if k == "sub" else v) for k, v in super().items()]


def test_a_directory_swapped_for_a_symlink_after_listing_is_a_problem() -> None:
    tree = _StaleListing({"index.artf": decl("root"), "sub": Symlink("elsewhere")})
    problem = only_problem(tree)
    assert problem.file == "sub"
    assert "cannot be walked" in problem.message
    assert "symbolic link" in problem.message


# --- .artfignore ---------------------------------------------------------------------


def test_artfignore_directory_patterns_are_never_entered() -> None:
    tree: dict[str, Node] = {
        ".artfignore": b"# comment\nfixtures/\n",
        "index.artf": decl("root"),
        "fixtures": {"index.artf": b"not TOML at all"},
        "deep": {"fixtures": {"index.artf": b"broken"}, "index.artf": decl("deep")},
        "notes": {"fixtures": b"a file, not a directory", "index.artf": decl("notes")},
    }
    result, fs = run(tree)
    assert paths(result) == ["", "deep", "notes"]
    assert fs.open_directory_calls == 2  # deep and notes, never a fixtures directory


def test_artfignore_globs_negation_and_case() -> None:
    tree: dict[str, Node] = {
        ".artfignore": b"*.tmp.artf\n!keep.tmp.artf\nVendor/\n",
        "index.artf": decl("root"),
        "a.tmp.artf": b"broken and without a target",
        "keep.tmp": b"",
        "keep.tmp.artf": decl("keep"),
        "Vendor": {"index.artf": b"broken"},
        "vendor": {"index.artf": decl("vendor"), "b.tmp.artf": b"broken too"},
    }
    result, _ = run(tree)
    assert paths(result) == ["", "keep.tmp", "vendor"]


def test_ignored_sidecars_are_neither_parsed_nor_target_checked() -> None:
    tree: dict[str, Node] = {
        ".artfignore": b"drafts/*.artf\nlost.md.artf\n",
        "index.artf": decl("root"),
        "lost.md.artf": b"= not TOML",  # no target either
        "drafts": {"x.md.artf": b"= not TOML", "y.artf.artf": b""},
    }
    result, fs = run(tree)
    assert paths(result) == [""]
    assert fs.read_file_calls == 2  # .artfignore and index.artf


def test_ignored_index_artf_declares_nothing() -> None:
    tree: dict[str, Node] = {
        ".artfignore": b"/skip/index.artf\n",
        "index.artf": decl("root"),
        "skip": {"index.artf": b"broken", "inner": {"index.artf": decl("inner")}},
    }
    result, _ = run(tree)
    assert paths(result) == ["", "skip/inner"]
    inner = result.artifacts[1]
    assert inner.owner == ""  # the ignored folder declaration owns nothing


def test_symlinked_artfignore_is_treated_as_absent() -> None:
    tree: dict[str, Node] = {
        ".artfignore": Symlink("real-ignore"),
        "real-ignore": b"fixtures/\n",
        "fixtures": {"index.artf": decl("fixture")},
    }
    result, fs = run(tree)
    assert paths(result) == ["fixtures"]
    assert fs.read_file_calls == 1  # never read through the link


def test_artfignore_in_a_subfolder_has_no_effect() -> None:
    tree: dict[str, Node] = {
        "sub": {".artfignore": b"*\n", "index.artf": decl("sub")},
    }
    result, _ = run(tree)
    assert paths(result) == ["sub"]


def test_artfignore_that_is_not_utf8_is_a_problem() -> None:
    problem = only_problem({".artfignore": b"\xff\n", "index.artf": decl("root")})
    assert problem.file == ".artfignore"
    assert "cannot be read" in problem.message


# --- index.artf and sidecars ---------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "kind"),
    [
        (Symlink("elsewhere"), "symbolic link"),
        (Special(), "special file"),
        ({}, "directory"),
    ],
    ids=["symlink", "special", "directory"],
)
def test_index_artf_must_be_a_regular_file(node: Node, kind: str) -> None:
    problem = only_problem({"index.artf": node, "elsewhere": decl("real")})
    assert problem.file == "index.artf"
    assert "must be a regular file" in problem.message
    assert kind in problem.message


def test_a_sidecar_must_be_a_regular_file() -> None:
    problem = only_problem({"x.md": b"", "x.md.artf": Symlink("elsewhere")})
    assert problem.file == "x.md.artf"
    assert "must be a regular file" in problem.message


def test_an_index_artf_directory_is_refused_and_still_walked() -> None:
    found = problems({"index.artf": {"inner": {"index.artf": b"broken"}}})
    assert [p.file for p in found] == ["index.artf", "index.artf/inner/index.artf"]


@pytest.mark.parametrize(
    ("tree", "file", "fragment"),
    [
        ({"x.md.artf": decl("x")}, "x.md.artf", "does not exist"),
        ({"x.md.artf": decl("x"), "x.md": Symlink("y.md"), "y.md": b""}, "x.md.artf", "symbolic"),
        ({"x.md.artf": decl("x"), "x.md": Special()}, "x.md.artf", "not a regular file"),
        ({"docs.artf": decl("x"), "docs": {}}, "docs.artf", "directory"),
        ({"x.artf.artf": decl("x")}, "x.artf.artf", ".artf.artf"),
        ({".artf": decl("x")}, ".artf", "needs a target"),
        ({"a:b.artf": decl("x"), "a:b": b""}, "a:b.artf", "not a valid path"),
        ({"a\\b.artf": decl("x"), "a\\b": b""}, "a\\b.artf", "not a valid path"),
    ],
    ids=["missing", "symlink", "fifo", "directory", "artf-artf", "bare", "colon", "backslash"],
)
def test_sidecar_target_rules(tree: Mapping[str, Node], file: str, fragment: str) -> None:
    problem = only_problem(tree)
    assert problem.file == file
    assert problem.line is None
    assert fragment in problem.message


def test_a_refused_sidecar_is_not_read() -> None:
    fs = MemoryFilesystem(
        {"/repo": {"x.md.artf": decl("x"), "ok.md": b"", "ok.md.artf": decl("ok")}}
    )
    with fs.open_root("/repo") as root, pytest.raises(ConfigError):
        discover(root, "/repo")
    assert fs.read_file_calls == 1  # only ok.md.artf


def test_a_directory_named_like_a_sidecar_is_walked_not_parsed() -> None:
    result, _ = run({"notes.artf": {"index.artf": decl("notes"), "a.txt": b""}})
    assert paths(result) == ["notes.artf"]
    assert result.artifacts[0].kind.value == "folder"


def test_sidecars_in_nested_folders_have_the_nearest_folder_as_owner() -> None:
    result, _ = run(
        {
            "index.artf": decl("root"),
            "a": {"b": {"pic.png": b"", "pic.png.artf": decl("pic")}},
            "api": {"index.artf": decl("api"), "doc.md": b"", "doc.md.artf": decl("doc")},
        }
    )
    owners = {a.name: (a.owner, a.folder, a.path) for a in result.artifacts}
    assert owners["pic"] == ("", "a/b", "a/b/pic.png")
    assert owners["doc"] == ("api", "api", "api/doc.md")


def test_a_workspace_of_only_file_artifacts_is_fine() -> None:
    result, _ = run(
        {"a.md": b"", "a.md.artf": decl("a"), "d": {"b.txt": b"", "b.txt.artf": decl("b")}}
    )
    assert paths(result) == ["a.md", "d/b.txt"]
    assert all(a.kind.value == "file" for a in result.artifacts)


# --- legacy files and the empty workspace -------------------------------------------


def test_legacy_artifactize_json_file_fails() -> None:
    problem = only_problem({"index.artf": decl("root"), "sub": {"artifactize.json": b"{}"}})
    assert problem.file == "sub/artifactize.json"
    assert "no longer read" in problem.message
    assert "index.artf" in problem.message


def test_legacy_artifactize_json_directory_is_walked() -> None:
    result, _ = run({"artifactize.json": {"index.artf": decl("inside")}})
    assert paths(result) == ["artifactize.json"]


def test_ignored_legacy_artifactize_json_is_fine() -> None:
    tree: dict[str, Node] = {
        ".artfignore": b"artifactize.json\n",
        "index.artf": decl("root"),
        "artifactize.json": b"{}",
        "sub": {"artifactize.json": b"{}"},
    }
    result, _ = run(tree)
    assert paths(result) == [""]


def test_legacy_artifactizeignore_at_the_root_fails() -> None:
    problem = only_problem({"index.artf": decl("root"), ".artifactizeignore": b""})
    assert problem.file == ".artifactizeignore"
    assert ".artfignore" in problem.message


@pytest.mark.parametrize(
    "tree",
    [{}, {"docs": {"a.md": b""}}, {".git": {"index.artf": decl("hidden")}}],
    ids=["empty", "no-declarations", "only-in-git"],
)
def test_zero_artifacts_fails(tree: Mapping[str, Node]) -> None:
    problem = only_problem(tree)
    assert problem.message.startswith("Workspace must contain at least one .artf Artifact;")


# --- reading and parsing declarations -----------------------------------------------


def test_declaration_size_limit_is_inclusive() -> None:
    head = b'name = "big"\n#'
    exact = head + b"x" * (DECLARATION_MAX_BYTES - len(head) - 1) + b"\n"
    assert len(exact) == DECLARATION_MAX_BYTES
    result, _ = run({"index.artf": exact})
    assert [a.name for a in result.artifacts] == ["big"]

    problem = only_problem({"index.artf": exact + b"\n"})
    assert problem.file == "index.artf"
    assert "8 MiB" in problem.message


def test_non_utf8_declaration_fails() -> None:
    problem = only_problem({"index.artf": b'name = "caf\xe9"\n'})
    assert problem.file == "index.artf"
    assert "UTF-8" in problem.message


def test_invalid_toml_names_its_line() -> None:
    problem = only_problem({"sub": {"index.artf": b'name = "x"\n\nbroken =\n'}})
    assert problem.file == "sub/index.artf"
    assert problem.line == 3
    assert "invalid TOML" in problem.message


def test_problems_carry_file_line_and_key_path() -> None:
    text = decl("root", HUMAN_EVAL + b"bogus = 1\n")
    problem = only_problem({"api": {"index.artf": text}})
    assert problem.file == "api/index.artf"
    assert problem.line == 7
    assert problem.key_path == "evals.check.bogus"
    assert "unknown key" in problem.message
    assert problem.render().startswith("api/index.artf:7: evals.check.bogus: ")


def test_toml_dates_are_refused_with_their_key_path() -> None:
    problem = only_problem({"index.artf": b'name = "x"\ntags = [1979-05-27]\n'})
    assert problem.key_path == "tags[0]"
    assert problem.line == 2


def test_every_problem_is_reported_in_file_order() -> None:
    found = problems(
        {
            "b": {"index.artf": b"broken"},
            "a": {"index.artf": b'name = "bad name"\n'},
            "x.md.artf": decl("x"),
        }
    )
    assert [p.file for p in found] == ["a/index.artf", "b/index.artf", "x.md.artf"]


def test_review_policy_is_allowed_at_the_root_only() -> None:
    policy = b'\n[review_policy]\ndependency_gates = "ignore"\n'
    result, _ = run({"index.artf": decl("root", policy)})
    assert result.artifacts[0].declaration.dependency_gates == "ignore"

    found = problems(
        {
            "index.artf": decl("root"),
            "sub": {"index.artf": decl("sub", policy)},
            "x.md": b"",
            "x.md.artf": decl("x", policy),
        }
    )
    assert [(p.file, p.line, p.key_path) for p in found] == [
        ("sub/index.artf", 3, "review_policy"),
        ("x.md.artf", 3, "review_policy"),
    ]
    assert all("only in the root index.artf" in p.message for p in found)


def test_file_artifact_default_fingerprint_is_its_target() -> None:
    result, _ = run({"x.md": b"", "x.md.artf": decl("x")})
    fingerprint = result.artifacts[0].declaration.fingerprint
    assert getattr(fingerprint, "files", None) == ("x.md",)


def test_nothing_is_written_and_every_handle_is_closed() -> None:
    tree: dict[str, Node] = {
        "index.artf": decl("root", HUMAN_EVAL),
        "a": {"index.artf": decl("a"), "p.png": b"", "p.png.artf": decl("p")},
        "b": {"c": {"index.artf": decl("c")}},
    }
    result, fs = run(tree)
    assert len(result.artifacts) == 4
    assert fs.writes == []
    assert fs.open_handles == 0
    assert fs.open_root_calls == 1


# --- the rows of a kept discovery, checked before they are trusted -----------------------


@pytest.mark.parametrize(
    ("rows", "width", "optional", "kept"),
    [
        ([], 2, 0, True),
        ([["a", "b"], ["c", "d"]], 2, 0, True),
        ([["a", "b", "c", "d", "e", None, None]], 7, 2, True),
        ([["a", "b", "c", "d", "e", "f", "g"]], 7, 2, True),
        ([["a", "b", "c", "d", None, "f", "g"]], 7, 2, False),  # None outside the optional
        ([["a", None]], 2, 0, False),
        ([["a", "b"], ["c"]], 2, 0, False),  # a row too short
        ([["a", "b"], ["c", "d", "e"]], 2, 0, False),  # a row too long
        ([["a", "b"], "cd"], 2, 0, False),  # a row that is a string of the width
        ([["a", "b"], {"c": 1, "d": 2}], 2, 0, False),  # a mapping of the width
        ([["a", 1]], 2, 0, False),
        ([["a", ["b"]]], 2, 0, False),
        ({"a": "b"}, 2, 0, False),
        ("ab", 2, 0, False),
        (None, 2, 0, False),
    ],
)
def test_a_kept_discoverys_rows_are_checked_column_by_column(
    rows: Any, width: int, optional: int, kept: bool
) -> None:
    columns = _columns(rows, width, optional)
    assert (columns is not None) == kept
    if columns is not None:
        assert len(columns) == width
        assert [list(row) for row in zip(*columns, strict=True)] == rows


@pytest.mark.parametrize(
    ("values", "kept"),
    [
        ([], True),
        ([[], ["a", "b"]], True),
        ([["a"], "b"], False),
        ([["a", None]], False),
        ([["a", ["b"]]], False),
        ([{"a": "b"}], False),
    ],
)
def test_a_kept_discoverys_names_are_lists_of_strings(values: list[Any], kept: bool) -> None:
    assert _string_lists(values) == kept
