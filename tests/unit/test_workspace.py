"""Cross-file resolution: names, children, mounts, references, relations and tool names."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from artifactize.domain.declarations.diagnostics import ConfigError, Problem
from artifactize.domain.project.workspace import (
    PUBLISHED_TOOL_NAME_MAX,
    Relation,
    RelationKind,
    UnknownName,
    Workspace,
    published_name,
)
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


def runtime_eval(eval_id: str, args: list[str], instruction: str = "Run it.") -> str:
    quoted = ", ".join(f'"{a}"' for a in args)
    return f"""
[evals.{eval_id}]
title = "t"
profile = {{ kind = "runtime", command = "true", args = [{quoted}] }}
payload.instruction = "{instruction}"
"""


def load(tree: Mapping[str, Node]) -> Workspace:
    fs = MemoryFilesystem({"/repo": tree})
    workspace = ConfigService(fs).load("/repo")
    assert fs.writes == []
    assert fs.open_handles == 0
    return workspace


def problems(tree: Mapping[str, Node]) -> tuple[Problem, ...]:
    with pytest.raises(ConfigError) as caught:
        load(tree)
    return caught.value.problems


def only_problem(tree: Mapping[str, Node]) -> Problem:
    found = problems(tree)
    assert len(found) == 1, found
    return found[0]


def relations(workspace: Workspace) -> set[tuple[str, str, str, str | None, str]]:
    return {(r.consumer, r.input, r.kind.value, r.eval_id, r.label) for r in workspace.relations}


# --- names ------------------------------------------------------------------------------


def test_names_are_globally_unique_and_the_error_names_the_first_file() -> None:
    problem = only_problem(
        {
            "index.artf": decl("root"),
            "a": {"index.artf": decl("dup")},
            "b": {"x.md": b"", "x.md.artf": decl("dup")},
        }
    )
    assert problem.file == "b/x.md.artf"
    assert problem.line == 1
    assert problem.key_path == "name"
    assert "a/index.artf" in problem.message
    assert "`dup`" in problem.message


def test_artifacts_keep_discovery_order() -> None:
    workspace = load(
        {
            "z": {"index.artf": decl("zed")},
            "a": {"index.artf": decl("alpha")},
            "m.md": b"",
            "m.md.artf": decl("em"),
        }
    )
    assert list(workspace.artifacts) == ["em", "alpha", "zed"]
    assert workspace.root_path == "/repo"
    assert workspace.dependency_gates == "green"


def test_root_review_policy_sets_dependency_gates() -> None:
    workspace = load({"index.artf": decl("root", '[review_policy]\ndependency_gates = "ignore"\n')})
    assert workspace.dependency_gates == "ignore"


def test_lookup_of_unknown_artifacts_and_evals() -> None:
    workspace = load({"index.artf": decl("root", human_eval("check", "Look."))})
    assert workspace.find_eval("root/check").qualified_id == "root/check"
    with pytest.raises(UnknownName, match="Unknown Artifact: nobody"):
        workspace.artifact("nobody")
    for bad in ("root/none", "nobody/check", "root", "root/"):
        with pytest.raises(UnknownName, match="Unknown eval"):
            workspace.find_eval(bad)


# --- children ---------------------------------------------------------------------------


def test_nearest_folder_children_with_multi_component_prefixes() -> None:
    workspace = load(
        {
            "index.artf": decl("root"),
            "a": {
                "b": {"index.artf": decl("ab"), "c": {"d": {"index.artf": decl("abcd")}}},
                "notes.md": b"",
            },
            "e": {"index.artf": decl("e")},
        }
    )
    root, ab, abcd, e = (workspace.artifact(n) for n in ("root", "ab", "abcd", "e"))
    assert dict(root.children) == {"a/b": "ab", "e": "e"}
    assert dict(ab.children) == {"c/d": "abcd"}
    assert dict(abcd.children) == {}
    assert (root.parent, ab.parent, abcd.parent, e.parent) == (None, "root", "ab", "root")
    assert relations(workspace) == {
        ("root", "ab", "child", None, "a/b"),
        ("root", "e", "child", None, "e"),
        ("ab", "abcd", "child", None, "c/d"),
    }


def test_folders_without_a_root_artifact_have_no_parent() -> None:
    workspace = load({"a": {"index.artf": decl("a")}, "b": {"index.artf": decl("b")}})
    assert workspace.artifact("a").parent is None
    assert workspace.relations == ()


def test_file_artifacts_are_never_children() -> None:
    workspace = load(
        {
            "index.artf": decl("root"),
            "pic.png": b"",
            "pic.png.artf": decl("pic"),
            "sub": {"index.artf": decl("sub"), "doc.md": b"", "doc.md.artf": decl("doc")},
        }
    )
    assert dict(workspace.artifact("root").children) == {"sub": "sub"}
    assert dict(workspace.artifact("sub").children) == {}
    assert workspace.artifact("pic").parent is None
    assert workspace.artifact("doc").parent is None
    assert {r.input for r in workspace.relations} == {"sub"}


def test_artifact_paths_and_folders() -> None:
    workspace = load(
        {"index.artf": decl("root"), "docs": {"d.svg": b"", "d.svg.artf": decl("diagram")}}
    )
    diagram = workspace.artifact("diagram")
    assert (diagram.kind.value, diagram.path, diagram.folder, diagram.target) == (
        "file",
        "docs/d.svg",
        "docs",
        "d.svg",
    )
    root = workspace.artifact("root")
    assert (root.kind.value, root.path, root.folder, root.target) == ("folder", "", "", None)


# --- references ----------------------------------------------------------------------


def test_a_reference_resolves_a_mount_alias_first_then_a_global_name() -> None:
    workspace = load(
        {
            "index.artf": decl(
                "app",
                'mounts = { glossary = "terms" }\n'
                + human_eval("a", "Use {glossary}.")
                + human_eval("b", "Use {terms} and {lib}."),
            ),
            "shared": {
                "terms": {"index.artf": decl("terms")},
                "lib": {"index.artf": decl("lib")},
            },
        }
    )
    app = workspace.artifact("app")
    assert workspace.resolve_name(app, "glossary") is workspace.artifact("terms")
    assert workspace.resolve_name(app, "lib") is workspace.artifact("lib")
    assert workspace.resolve_name(app, "nobody") is None
    assert workspace.eval_inputs["app/a"] == ("terms",)
    assert workspace.eval_inputs["app/b"] == ("terms", "lib")


def test_a_mount_alias_equal_to_its_target_is_fine() -> None:
    workspace = load(
        {
            "index.artf": decl(
                "app", 'mounts = { terms = "terms" }\n' + human_eval("a", "{terms}")
            ),
            "shared": {"terms": {"index.artf": decl("terms")}},
        }
    )
    assert workspace.eval_inputs["app/a"] == ("terms",)


def test_unknown_reference_names_fail_with_file_line_and_key_path() -> None:
    found = problems(
        {
            "app": {
                "index.artf": decl(
                    "app",
                    human_eval("look", "Compare with {nobody}.")
                    + runtime_eval("run", ["--in={ghost}/x.txt"]),
                )
            }
        }
    )
    assert [(p.file, p.line, p.key_path) for p in found] == [
        ("app/index.artf", 6, "evals.look.payload.instruction"),
        ("app/index.artf", 10, "evals.run.profile.args[0]"),
    ]
    assert "`{nobody}`" in found[0].message
    assert "`{ghost}`" in found[1].message
    assert "`app`" in found[0].message


@pytest.mark.parametrize("operand", ["{pic}/x", "--file={pic}/sub/y"])
def test_a_file_artifact_reference_takes_no_path_suffix(operand: str) -> None:
    problem = only_problem(
        {
            "index.artf": decl("app", runtime_eval("run", [operand])),
            "pic.png": b"",
            "pic.png.artf": decl("pic"),
        }
    )
    assert problem.key_path == "evals.run.profile.args[0]"
    assert "file Artifact" in problem.message
    assert "suffix" in problem.message


def test_a_bare_file_artifact_reference_is_fine() -> None:
    workspace = load(
        {
            "index.artf": decl("app", runtime_eval("run", ["{pic}", "--image={pic}"])),
            "pic.png": b"",
            "pic.png.artf": decl("pic"),
        }
    )
    assert workspace.eval_inputs["app/run"] == ("pic",)


def test_references_in_unused_places_are_still_checked() -> None:
    found = problems(
        {
            "index.artf": decl(
                "app",
                """
[views.agent_tools.lint]
description = "Lint."
protocol = "json"
command = "lint"
args = ["{ghost1}"]

[views.human_tools.show]
description = "Show."
kind = "output"
command = "show"
args = ["{ghost2}/x"]

[fingerprint.script]
command = "fp"
args = ["{ghost3}"]
""",
            )
        }
    )
    assert [p.key_path for p in found] == [
        "views.agent_tools.lint.args[0]",
        "views.human_tools.show.args[0]",
        "fingerprint.script.args[0]",
    ]


# --- mounts -------------------------------------------------------------------------------


def test_mount_problems() -> None:
    found = problems(
        {
            "index.artf": decl(
                "app",
                'mounts = { ghost = "nobody", me = "app", docs = "terms", lib = "terms" }\n',
            ),
            "docs": {"readme.md": b""},
            "shared": {
                "terms": {"index.artf": decl("terms")},
                "lib": {"index.artf": decl("lib")},
            },
        }
    )
    by_key = {p.key_path: p for p in found}
    assert set(by_key) == {"mounts.ghost", "mounts.me", "mounts.docs", "mounts.lib"}
    assert all((p.file, p.line) == ("index.artf", 2) for p in found)
    assert "unknown Artifact `nobody`" in by_key["mounts.ghost"].message
    assert "cannot mount itself" in by_key["mounts.me"].message
    assert "clashes with the entry `docs`" in by_key["mounts.docs"].message
    assert "ambiguous" in by_key["mounts.lib"].message


def test_a_mount_alias_may_clash_with_a_file_artifacts_unrelated_sibling() -> None:
    workspace = load(
        {
            "pic.png": b"",
            "pic.png.artf": decl("pic", 'mounts = { docs = "terms" }\n'),
            "docs": {},
            "terms": {"index.artf": decl("terms")},
        }
    )
    assert dict(workspace.artifact("pic").mounts) == {"docs": "terms"}


def test_a_file_artifact_mount_alias_must_not_shadow_its_target() -> None:
    problem = only_problem(
        {
            "pic": b"",
            "pic.artf": decl("pic", 'mounts = { pic = "terms" }\n'),
            "terms": {"index.artf": decl("terms")},
        }
    )
    assert problem.key_path == "mounts.pic"
    assert "target" in problem.message


# --- relations ---------------------------------------------------------------------------


def test_relations_of_every_kind_and_no_self_relation() -> None:
    workspace = load(
        {
            "app": {
                "index.artf": decl(
                    "app",
                    'mounts = { glossary = "terms" }\n'
                    + human_eval("look", "Read {app}, {glossary} and {guide}; again {guide}.")
                    + runtime_eval("run", ["{app}", "--data={data}/a.csv", "{data}/b.csv"]),
                ),
                "child": {"index.artf": decl("child")},
            },
            "shared": {
                "terms": {"index.artf": decl("terms")},
                "guide": {"index.artf": decl("guide")},
                "data": {"index.artf": decl("data")},
            },
        }
    )
    assert relations(workspace) == {
        ("app", "child", "child", None, "child"),
        ("app", "terms", "mount", None, "glossary"),
        ("app", "terms", "instruction", "look", ""),
        ("app", "guide", "instruction", "look", ""),
        ("app", "data", "argv", "run", ""),
    }
    assert len(workspace.relations) == 5  # duplicates collapse
    assert all(r.consumer != r.input for r in workspace.relations)
    assert workspace.eval_inputs["app/look"] == ("app", "terms", "guide")
    assert workspace.eval_inputs["app/run"] == ("app", "data")
    assert Relation("app", "data", RelationKind.ARGV, "run") in workspace.relations


def test_eval_inputs_hold_only_the_evals_own_instruction_and_runtime_references() -> None:
    body = (
        'mounts = { m = "mounted" }\n'
        + human_eval("look", "See {seen}.")
        + runtime_eval("run", ["{ran}/x"], "No references here.")
        + runtime_eval("quiet", [])
        + """
[views.agent_tools.lint]
description = "Lint {artifactName}."
protocol = "json"
command = "lint"
args = ["{tooled}"]

[views.human_tools.show]
description = "Show."
kind = "output"
command = "show"
args = ["{humaned}/x", "{artifactPath}"]

[views.human_tools.page]
builtin = "read"
args = ["{humaned2}/page.md"]

[fingerprint.script]
command = "fp"
args = ["{scripted}"]
"""
    )
    shared = ("seen", "ran", "tooled", "humaned", "humaned2", "scripted", "mounted")
    workspace = load(
        {
            "app": {"index.artf": decl("app", body)},
            "shared": {n: {"index.artf": decl(n)} for n in shared},
        }
    )
    assert dict(workspace.eval_inputs) == {
        "app/look": ("seen",),
        "app/quiet": (),
        "app/run": ("ran",),
    }
    inputs = {(r.input, r.kind.value) for r in workspace.relations}
    assert inputs == {("seen", "instruction"), ("ran", "argv"), ("mounted", "mount")}


# --- fingerprints ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "fragment"),
    [
        ('["rules"]', "child Artifact `spec`"),
        ('["rules/requirements.md"]', "child Artifact `spec`"),
        ('["a/b/c.md"]', "child Artifact `ab`"),
        ('["glossary/terms.csv"]', "mount `glossary`"),
        ('["glossary"]', "mount `glossary`"),
    ],
)
def test_fingerprint_files_entering_a_child_or_a_mount_are_refused(
    files: str, fragment: str
) -> None:
    problem = only_problem(
        {
            "index.artf": decl(
                "app", f'mounts = {{ glossary = "terms" }}\nfingerprint = {{ files = {files} }}\n'
            ),
            "rules": {"index.artf": decl("spec")},
            "a": {"b": {"index.artf": decl("ab")}},
            "shared": {"index.artf": decl("terms")},
        }
    )
    assert problem.file == "index.artf"
    assert problem.key_path == "fingerprint.files[0]"
    assert problem.line == 3
    assert fragment in problem.message


def test_fingerprint_files_beside_children_are_fine() -> None:
    workspace = load(
        {
            "index.artf": decl("app", 'fingerprint = { files = ["a", "rulesets", "README.md"] }\n'),
            "rules": {"index.artf": decl("spec")},
            "a": {"b": {"index.artf": decl("ab")}},
            "rulesets": {},
        }
    )
    assert dict(workspace.artifact("app").children) == {"rules": "spec", "a/b": "ab"}


# --- published tool names ----------------------------------------------------------------

AGENT_TOOL = (
    '\n[views.agent_tools.{tool}]\ndescription = "d"\nprotocol = "json"\ncommand = "x"\nargs = []\n'
)
HUMAN_TOOL = (
    '\n[views.human_tools.{tool}]\ndescription = "d"\nkind = "output"\ncommand = "x"\nargs = []\n'
)
SESSION = (
    "\n[views.agent_sessions.{tool}]\n"
    'start = {{ command = "h", args = ["start"] }}\n'
    'stop = {{ command = "h", args = ["stop"] }}\n'
)


@pytest.mark.parametrize(
    ("template", "view"),
    [(AGENT_TOOL, "agent_tools"), (HUMAN_TOOL, "human_tools"), (SESSION, "agent_sessions")],
)
def test_published_tool_names_must_not_collide(template: str, view: str) -> None:
    problem = only_problem(
        {
            "a": {"index.artf": decl("a", template.format(tool="inspect_b"))},
            "b": {"index.artf": decl("b_a", template.format(tool="inspect"))},
        }
    )
    assert published_name("inspect", "b_a") == published_name("inspect_b", "a") == "inspect_b_a"
    assert problem.file == "b/index.artf"
    assert problem.key_path == f"views.{view}.inspect"
    assert problem.line is not None
    assert "Artifact tool names collide: inspect_b_a" in problem.message
    assert "a/index.artf" in problem.message


def test_the_same_published_name_in_different_views_is_fine() -> None:
    workspace = load(
        {
            "a": {
                "index.artf": decl(
                    "a",
                    AGENT_TOOL.format(tool="inspect_b") + SESSION.format(tool="inspect_b"),
                )
            },
            "b": {"index.artf": decl("b_a", HUMAN_TOOL.format(tool="inspect"))},
        }
    )
    assert len(workspace.artifacts) == 2


def test_the_same_short_tool_name_on_two_artifacts_is_fine() -> None:
    workspace = load(
        {
            "a": {
                "index.artf": decl("a", AGENT_TOOL.format(tool="read") + SESSION.format(tool="s"))
            },
            "b": {
                "index.artf": decl("b", AGENT_TOOL.format(tool="read") + SESSION.format(tool="s"))
            },
            "c.md": b"",
            "c.md.artf": decl("c", '[views.agent_tools]\nread = { builtin = "read" }\n'),
        }
    )
    assert [t.name for a in workspace.artifacts.values() for t in a.agent_tools] == [
        "read",
        "read",
        "read",
    ]


@pytest.mark.parametrize(
    ("template", "view"), [(AGENT_TOOL, "agent_tools"), (SESSION, "agent_sessions")]
)
def test_an_agent_tool_name_at_the_limit_is_published(template: str, view: str) -> None:
    tool = "t" * (PUBLISHED_TOOL_NAME_MAX - len("_app"))
    workspace = load({"index.artf": decl("app", template.format(tool=tool))})
    assert len(published_name(tool, "app")) == PUBLISHED_TOOL_NAME_MAX
    assert len(workspace.artifacts) == 1


@pytest.mark.parametrize(
    ("template", "view"), [(AGENT_TOOL, "agent_tools"), (SESSION, "agent_sessions")]
)
def test_an_agent_tool_name_one_past_the_limit_is_refused(template: str, view: str) -> None:
    tool = "t" * (PUBLISHED_TOOL_NAME_MAX - len("_app") + 1)
    problem = only_problem({"index.artf": decl("app", template.format(tool=tool))})
    assert problem.key_path == f"views.{view}.{tool}"
    assert f"Agent tool name {tool}_app is 65 characters" in problem.message
    assert "at most 64" in problem.message
    assert "shorten the tool or the Artifact name" in problem.message


def test_a_long_human_tool_name_is_not_an_agent_tool_name() -> None:
    tool = "t" * PUBLISHED_TOOL_NAME_MAX
    workspace = load({"index.artf": decl("app", HUMAN_TOOL.format(tool=tool))})
    assert len(workspace.artifacts) == 1
