"""Scopes, logical-path ownership and json-protocol scope entries."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from artifactize.domain.logical_paths import LogicalPathError
from artifactize.domain.project.scope import (
    Ownership,
    ScopeError,
    artifact_scope,
    closure,
    eval_scope,
    physical_path,
    resolve_ownership,
    scope_entries,
    working_directory,
)
from artifactize.domain.project.workspace import Workspace
from artifactize.domain.use_cases.config_service import ConfigService
from tests.fakes.filesystem import MemoryFilesystem, Node


def decl(name: str, body: str = "") -> bytes:
    return f'name = "{name}"\n{body}'.encode()


def human_eval(eval_id: str, instruction: str) -> str:
    return f"""
[evals.{eval_id}]
title = "t"
profile = {{ kind = "human" }}
payload.instruction = "{instruction}"
"""


def load(tree: Mapping[str, Node]) -> Workspace:
    return ConfigService(MemoryFilesystem({"/repo": tree})).load("/repo")


@pytest.fixture(scope="module")
def workspace() -> Workspace:
    """app (in ``app/``) owns ``rules`` (spec, which owns ``deep``/deeper) and ``a/b`` (ab).

    app mounts ``glossary`` -> terms and ``pic`` -> diagram (a file Artifact) and has two
    evals referencing different Artifacts; terms and other mount each other (a cycle).
    """
    return load(
        {
            "app": {
                "index.artf": decl(
                    "app",
                    'mounts = { glossary = "terms", pic = "diagram" }\n'
                    + human_eval("first", "Compare with {guide}.")
                    + human_eval("second", "Compare with {lonely}.")
                    + human_eval("plain", "Nothing referenced."),
                ),
                "rules": {
                    "index.artf": decl("spec"),
                    "requirements.md": b"must",
                    "deep": {"index.artf": decl("deeper")},
                },
                "a": {"b": {"index.artf": decl("ab")}},
            },
            "docs": {
                "diagram.svg": b"<svg/>",
                "diagram.svg.artf": decl("diagram", 'mounts = { words = "terms" }\n'),
            },
            "top.md": b"",
            "top.md.artf": decl("top"),
            "ext": {
                "terms": {"index.artf": decl("terms", 'mounts = { peer = "other" }\n')},
                "other": {"index.artf": decl("other", 'mounts = { back = "terms" }\n')},
                "guide": {"index.artf": decl("guide", 'mounts = { g = "glossy" }\n')},
                "glossy": {"index.artf": decl("glossy")},
                "lonely": {"index.artf": decl("lonely")},
            },
        }
    )


# --- closures --------------------------------------------------------------------------


def test_artifact_scope_is_the_child_and_mount_closure(workspace: Workspace) -> None:
    assert set(artifact_scope(workspace, "spec")) == {"spec", "deeper"}
    assert set(artifact_scope(workspace, "app")) == {
        "app",
        "spec",
        "deeper",
        "ab",
        "terms",
        "other",
        "diagram",
    }
    assert artifact_scope(workspace, "app")[0] == "app"


def test_closure_is_cycle_safe(workspace: Workspace) -> None:
    assert artifact_scope(workspace, "terms") == ("terms", "other")
    assert artifact_scope(workspace, "other") == ("other", "terms")
    assert closure(workspace, ["terms", "other", "terms"]) == ("terms", "other")
    assert closure(workspace, []) == ()


def test_closure_of_a_file_artifact_follows_its_mounts(workspace: Workspace) -> None:
    assert artifact_scope(workspace, "diagram") == ("diagram", "terms", "other")
    assert artifact_scope(workspace, "top") == ("top",)


def test_eval_scope_admits_only_the_evals_own_references(workspace: Workspace) -> None:
    base = set(artifact_scope(workspace, "app"))
    first = set(eval_scope(workspace, "app/first"))
    second = set(eval_scope(workspace, "app/second"))
    assert first == base | {"guide", "glossy"}
    assert second == base | {"lonely"}
    assert set(eval_scope(workspace, "app/plain")) == base
    assert "lonely" not in first
    assert "guide" not in second


def test_eval_scope_of_an_unknown_eval_fails(workspace: Workspace) -> None:
    with pytest.raises(LookupError, match="Unknown eval: app/none"):
        eval_scope(workspace, "app/none")


# --- ownership -----------------------------------------------------------------------


def test_the_seed_example_child_folder_ownership(workspace: Workspace) -> None:
    owned = resolve_ownership(workspace, "app", "rules/requirements.md")
    assert owned == Ownership("app", "spec", ("requirements.md",))
    assert owned.remaining_path == "requirements.md"


@pytest.mark.parametrize(
    ("path", "resolved", "remaining"),
    [
        ("", "app", ()),
        ("README.md", "app", ("README.md",)),
        ("rules", "spec", ()),
        ("rules/deep", "deeper", ()),
        ("rules/deep/x/y.md", "deeper", ("x", "y.md")),
        ("rulesx/y", "app", ("rulesx", "y")),
        ("a/b/c.md", "ab", ("c.md",)),
        ("a/c.md", "app", ("a", "c.md")),
        ("a", "app", ("a",)),
        ("glossary/terms.csv", "terms", ("terms.csv",)),
        ("glossary/peer/back/peer/x", "other", ("x",)),
        ("pic", "diagram", ()),
        ("pic/diagram.svg", "diagram", ("diagram.svg",)),
        ("pic/words/x.csv", "terms", ("x.csv",)),
    ],
)
def test_resolve_ownership_walks_children_and_mounts(
    workspace: Workspace, path: str, resolved: str, remaining: tuple[str, ...]
) -> None:
    assert resolve_ownership(workspace, "app", path) == Ownership("app", resolved, remaining)


def test_a_mount_alias_is_tried_before_a_child_prefix(workspace: Workspace) -> None:
    # Configuration refuses an alias that shadows a folder entry; resolution still must
    # prefer the mount when both match, so build that state directly.
    app = workspace.artifact("app")
    shadowing = dataclasses.replace(app, mounts={**app.mounts, "rules": "lonely", "a": "terms"})
    patched = dataclasses.replace(workspace, artifacts={**workspace.artifacts, "app": shadowing})
    assert resolve_ownership(patched, "app", "rules/requirements.md") == Ownership(
        "app", "lonely", ("requirements.md",)
    )
    assert resolve_ownership(patched, "app", "a/b/c.md") == Ownership("app", "terms", ("b", "c.md"))


def test_a_jump_outside_the_scope_is_refused(workspace: Workspace) -> None:
    scope = ["app", "spec"]
    assert resolve_ownership(workspace, "app", "rules/x", scope).resolved_artifact_id == "spec"
    with pytest.raises(ScopeError, match=r"^Artifact is outside this review: deeper$"):
        resolve_ownership(workspace, "app", "rules/deep/x", scope)
    with pytest.raises(ScopeError, match=r"^Artifact is outside this review: terms$"):
        resolve_ownership(workspace, "app", "glossary", scope)
    # Without a jump, nothing is checked against the scope.
    assert resolve_ownership(workspace, "app", "README.md", []).resolved_artifact_id == "app"


def test_ownership_within_an_eval_scope(workspace: Workspace) -> None:
    scope = eval_scope(workspace, "app/first")
    owned = resolve_ownership(workspace, "guide", "g/x.md", scope)
    assert owned == Ownership("guide", "glossy", ("x.md",))
    with pytest.raises(ScopeError, match="outside this review: glossy"):
        resolve_ownership(workspace, "guide", "g/x.md", eval_scope(workspace, "app/second"))


def test_a_file_artifact_exposes_only_its_target(workspace: Workspace) -> None:
    message = r"^File Artifact diagram exposes only its target diagram\.svg and mounts\.$"
    for path in ("other.txt", "diagram.svg/x", "index.artf", "diagram.svg.artf"):
        with pytest.raises(ScopeError, match=message):
            resolve_ownership(workspace, "diagram", path)
    with pytest.raises(ScopeError, match=message):
        resolve_ownership(workspace, "app", "pic/sibling.md")
    assert resolve_ownership(workspace, "diagram", "diagram.svg") == Ownership(
        "diagram", "diagram", ("diagram.svg",)
    )
    assert resolve_ownership(workspace, "diagram", "") == Ownership("diagram", "diagram", ())
    assert resolve_ownership(workspace, "diagram", "words/t.csv") == Ownership(
        "diagram", "terms", ("t.csv",)
    )


def test_the_virtual_root_is_only_for_a_file_artifact_when_allowed(workspace: Workspace) -> None:
    assert resolve_ownership(workspace, "diagram", ".", allow_virtual_root=True) == Ownership(
        "diagram", "diagram", ()
    )
    with pytest.raises(LogicalPathError):
        resolve_ownership(workspace, "diagram", ".")
    with pytest.raises(LogicalPathError):
        resolve_ownership(workspace, "app", ".", allow_virtual_root=True)
    with pytest.raises(LogicalPathError):
        resolve_ownership(workspace, "diagram", "./diagram.svg", allow_virtual_root=True)


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "../x",
        "rules/../x",
        "a//b",
        "a/",
        "./a",
        "a/.",
        ".",
        "..",
        "a\\b",
        "C:/x",
        "a:b",
        "a\nb",
        "a\x00b",
        "a\x7fb",
        "x" * 4097,
        "\U0001f600" * 2049,
    ],
)
def test_invalid_logical_paths_are_refused(workspace: Workspace, path: str) -> None:
    with pytest.raises(LogicalPathError, match="safe relative logical path"):
        resolve_ownership(workspace, "app", path)


def test_the_longest_valid_logical_path_is_accepted(workspace: Workspace) -> None:
    assert resolve_ownership(workspace, "app", "x" * 4096).remaining_path == "x" * 4096
    astral = "\U0001f600" * 2048
    assert resolve_ownership(workspace, "app", astral).remaining == (astral,)


def test_an_unknown_owner_fails(workspace: Workspace) -> None:
    with pytest.raises(LookupError, match="Unknown Artifact: nobody"):
        resolve_ownership(workspace, "nobody", "x")


# --- scope entries -------------------------------------------------------------------


def test_scope_entries_have_exactly_the_protocol_shape(workspace: Workspace) -> None:
    entries = scope_entries(workspace, artifact_scope(workspace, "app"))
    assert list(entries) == list(artifact_scope(workspace, "app"))
    assert all(set(entry) == {"path", "kind", "children", "mounts"} for entry in entries.values())
    assert entries["app"] == {
        "path": "/repo/app",
        "kind": "folder",
        "children": {"rules": "spec", "a/b": "ab"},
        "mounts": {"glossary": "terms", "pic": "diagram"},
    }
    assert entries["spec"] == {
        "path": "/repo/app/rules",
        "kind": "folder",
        "children": {"deep": "deeper"},
        "mounts": {},
    }
    assert entries["ab"]["path"] == "/repo/app/a/b"
    assert entries["diagram"] == {
        "path": "/repo/docs/diagram.svg",
        "kind": "file",
        "children": {},
        "mounts": {"words": "terms"},
    }


def test_physical_paths_and_working_directories(workspace: Workspace) -> None:
    app, spec, diagram, top = (workspace.artifact(n) for n in ("app", "spec", "diagram", "top"))
    assert physical_path(workspace, app) == "/repo/app"
    assert working_directory(workspace, app) == "/repo/app"
    assert physical_path(workspace, spec) == "/repo/app/rules"
    assert working_directory(workspace, spec) == "/repo/app/rules"
    assert physical_path(workspace, diagram) == "/repo/docs/diagram.svg"
    assert working_directory(workspace, diagram) == "/repo/docs"
    assert physical_path(workspace, top) == "/repo/top.md"
    assert working_directory(workspace, top) == "/repo"


def test_a_root_folder_artifact_is_the_workspace_root() -> None:
    workspace = load({"index.artf": decl("root"), "sub": {"index.artf": decl("sub")}})
    root = workspace.artifact("root")
    assert physical_path(workspace, root) == "/repo"
    assert working_directory(workspace, root) == "/repo"
    assert scope_entries(workspace, ["root"])["root"] == {
        "path": "/repo",
        "kind": "folder",
        "children": {"sub": "sub"},
        "mounts": {},
    }


def test_physical_paths_below_the_filesystem_root() -> None:
    fs = MemoryFilesystem({"/": {"index.artf": decl("root"), "x.md": b"", "x.md.artf": decl("x")}})
    workspace = ConfigService(fs).load("/")
    assert scope_entries(workspace, ["root", "x"]) == {
        "root": {"path": "/", "kind": "folder", "children": {}, "mounts": {}},
        "x": {"path": "/x.md", "kind": "file", "children": {}, "mounts": {}},
    }
    assert working_directory(workspace, workspace.artifact("x")) == "/"


def test_scope_entries_are_json_values_not_views(workspace: Workspace) -> None:
    entries = scope_entries(workspace, ["app"])
    children = entries["app"]["children"]
    assert type(children) is dict
    children["new"] = "x"
    assert "new" not in workspace.artifact("app").children
