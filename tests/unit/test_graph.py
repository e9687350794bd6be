"""The project graph: components in dependency order, closures and ``config graph`` output."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from artifactize.domain.project.graph import components, graph_report, required_closure
from artifactize.domain.project.workspace import Relation, RelationKind, UnknownName, Workspace
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.entrypoints.cli.render.config import graph_text
from tests.fakes.filesystem import MemoryFilesystem, Node


def decl(name: str, body: str = "") -> bytes:
    return f'name = "{name}"\n{body}'.encode()


APP = decl(
    "app",
    """
[evals.review]
title = "Reviewed"
profile = { kind = "human" }
payload.instruction = "Compare with {lib}."

[evals.run]
title = "Runs"
profile = { kind = "runtime", command = "check", args = ["{diagram}"] }
payload.instruction = "Run the check."

[views.agent_tools]
read = { builtin = "read" }

[views.human_tools]
show = { builtin = "read", args = ["README.md"] }
""",
)


@pytest.fixture(scope="module")
def workspace() -> Workspace:
    """app -> sub (child), lib (instruction), diagram (argv); lib -> base (mount);
    x and y mount each other; style is a basis Artifact nobody consumes."""
    tree: dict[str, Node] = {
        "app": {"index.artf": APP, "sub": {"index.artf": decl("sub")}},
        "lib": {"index.artf": decl("lib", 'mounts = { b = "base" }\n')},
        "base": {"index.artf": decl("base")},
        "docs": {"d.svg": b"<svg/>", "d.svg.artf": decl("diagram", 'tags = ["type:image"]\n')},
        "x": {"index.artf": decl("x", 'mounts = { other = "y" }\n')},
        "y": {"index.artf": decl("y", 'mounts = { other = "x" }\n')},
        "style": {"index.artf": decl("style", "basis = true\n")},
    }
    return ConfigService(MemoryFilesystem({"/repo": tree})).load("/repo")


def position(order: list[list[str]], name: str) -> int:
    return next(i for i, component in enumerate(order) if name in component)


def test_components_are_inputs_first(workspace: Workspace) -> None:
    order = components(workspace, workspace.artifacts)
    assert sorted(n for c in order for n in c) == sorted(workspace.artifacts)
    assert position(order, "base") < position(order, "lib") < position(order, "app")
    assert position(order, "sub") < position(order, "app")
    assert position(order, "diagram") < position(order, "app")


def test_a_mount_cycle_is_one_component(workspace: Workspace) -> None:
    order = components(workspace, workspace.artifacts)
    assert ["x", "y"] in order
    assert [c for c in order if len(c) > 1] == [["x", "y"]]
    assert components(workspace, ["y", "x"]) == [["y", "x"]]  # members in the given order


def test_components_only_see_the_selected_artifacts(workspace: Workspace) -> None:
    assert components(workspace, ["app", "base"]) == [["app"], ["base"]]
    assert components(workspace, []) == []


def test_required_closure_follows_relations_transitively(workspace: Workspace) -> None:
    # in discovery order (sorted walk), not in the order the relations were followed
    assert required_closure(workspace, "app") == ("app", "sub", "base", "diagram", "lib")
    assert required_closure(workspace, "lib") == ("base", "lib")
    assert required_closure(workspace, "base") == ("base",)
    assert required_closure(workspace, "x") == ("x", "y")
    assert required_closure(workspace, "y") == ("x", "y")  # discovery order, peers included
    with pytest.raises(UnknownName):
        required_closure(workspace, "nobody")


def test_graph_report_marks_cycles(workspace: Workspace) -> None:
    report = graph_report(workspace)
    in_cycle = {a["name"]: a["inCycle"] for a in report["artifacts"]}
    assert in_cycle == {
        "app": False,
        "sub": False,
        "base": False,
        "diagram": False,
        "lib": False,
        "style": False,
        "x": True,
        "y": True,
    }
    assert report["root"] == "/repo"
    assert report["selected"] is None
    assert len(report["relations"]) == len(workspace.relations)
    json.dumps(report)  # plain JSON values only


def test_graph_report_for_one_artifact_holds_only_its_closure(workspace: Workspace) -> None:
    report = graph_report(workspace, "app")
    assert report["selected"] == "app"
    assert [a["name"] for a in report["artifacts"]] == ["app", "sub", "base", "diagram", "lib"]
    assert sorted(
        (r["consumer"], r["input"], r["kind"], r.get("evalId"), r.get("label"))
        for r in report["relations"]
    ) == [
        ("app", "diagram", "argv", "run", None),
        ("app", "lib", "instruction", "review", None),
        ("app", "sub", "child", None, "sub"),
        ("lib", "base", "mount", None, "b"),
    ]
    assert [n for c in report["components"] for n in c] == ["sub", "base", "lib", "diagram", "app"]


def test_graph_report_artifact_details(workspace: Workspace) -> None:
    report = graph_report(workspace, "app")
    app = report["artifacts"][0]
    assert app["kind"] == "folder"
    assert app["path"] == "app"
    assert app["declaration"] == "app/index.artf"
    assert app["children"] == {"sub": "sub"}
    assert app["fingerprint"] == {"kind": "artifactsum", "files": ["."], "ignore": []}
    assert [e["id"] for e in app["evals"]] == ["app/review", "app/run"]
    assert app["evals"][0]["references"] == ["lib"]
    assert app["evals"][1]["references"] == ["diagram"]
    assert app["evals"][1]["profile"]["kind"] == "runtime"
    assert app["agentTools"] == [{"name": "read_app", "builtin": "read"}]
    assert app["humanTools"] == [{"name": "show_app", "kind": "output", "builtin": "read"}]
    diagram = next(a for a in report["artifacts"] if a["name"] == "diagram")
    assert diagram["kind"] == "file"
    assert diagram["path"] == "docs/d.svg"
    assert diagram["fingerprint"] == {"kind": "artifactsum", "files": ["d.svg"], "ignore": []}


def test_graph_text_marks_file_and_basis_artifacts(workspace: Workspace) -> None:
    text = graph_text(graph_report(workspace))
    lines = text.splitlines()
    assert lines[0] == "Artifacts:"
    assert any(line.strip().startswith("diagram [file]") for line in lines)
    assert any(line.strip().startswith("style [basis]") for line in lines)
    assert "(type:image)" in text
    assert "eval app/review [human]" in text
    assert "x + y  (cycle)" in text
    assert "lib -> app  [instruction of app/review]" in text
    assert "base -> lib  [mount b]" in text
    assert "agent tools: read_app" in text
    assert "human tools: show_app" in text


def test_graph_text_without_relations() -> None:
    fs = MemoryFilesystem({"/repo": {"index.artf": decl("only")}})
    workspace = ConfigService(fs).load("/repo")
    text = graph_text(graph_report(workspace))
    assert "  only  ." in text
    assert text.endswith("Relations (input -> consumer):\n  (none)")


def test_a_5000_node_chain_does_not_hit_the_recursion_limit(workspace: Workspace) -> None:
    size = 5000
    assert sys.getrecursionlimit() < size
    template = workspace.artifact("base")
    artifacts = {
        f"n{i}": dataclasses.replace(template, name=f"n{i}", path=f"n{i}", folder=f"n{i}")
        for i in range(size)
    }
    chain = tuple(
        Relation(f"n{i}", f"n{i + 1}", RelationKind.MOUNT, label="next") for i in range(size - 1)
    )
    big = dataclasses.replace(workspace, artifacts=artifacts, relations=chain)

    order = components(big, big.artifacts)
    assert order == [[f"n{i}"] for i in reversed(range(size))]
    assert len(required_closure(big, "n0")) == size
    assert required_closure(big, "n4998") == ("n4998", "n4999")

    report = graph_report(big, "n0")
    assert len(report["relations"]) == size - 1
    assert not any(a["inCycle"] for a in report["artifacts"])

    ring = (*chain, Relation(f"n{size - 1}", "n0", RelationKind.MOUNT, label="back"))
    cyclic = dataclasses.replace(big, relations=ring)
    (component,) = components(cyclic, cyclic.artifacts)
    assert component == [f"n{i}" for i in range(size)]
