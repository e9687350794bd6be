"""Acceptance cases F (schema admission), K (registry) and L (fixed-argument built-ins).

Each test carries its case ID from ``tools-cases.md`` in its name. Workspaces are real
folders under ``tmp_path`` with ``.artf`` TOML declarations, loaded by the real
``ConfigService``; registries use the real POSIX adapters.

Command tools do not run yet ("Command tools cannot run in this version of artifactize."):
the F cases assert their admission half (the schema or size error, and the marker file the
command would create is absent), and the execution half is a skipped test that says so.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.adapters.posix.programs import PosixProgramFinder
from artifactize.adapters.posix.scratch import PosixScratchSpace
from artifactize.domain.declarations.diagnostics import ConfigError
from artifactize.domain.declarations.model import CommandAgentTool
from artifactize.domain.project.workspace import PUBLISHED_TOOL_NAME_MAX, Workspace
from artifactize.domain.tools.builtins import help as builtin_help
from artifactize.domain.tools.human.descriptions import human_scope_for_eval, human_tools_of
from artifactize.domain.tools.registry import (
    UNKNOWN_TOOL,
    AgentToolRegistry,
    RegistryError,
    ToolPorts,
)
from artifactize.domain.tools.results import ToolResult
from artifactize.domain.use_cases.config_service import ConfigService
from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.workspaces import declare, real_tool_ports
from tests.support.workspaces import entries_under as snapshot

pytestmark = pytest.mark.anyio

KIB = 1024
ARGS_REFUSED = "Tool arguments must be an object of at most 64 KiB."
SCHEMA_MISMATCH = "Tool arguments do not match the registered input schema."
MARKER = "\n[output truncated]"
COMMAND_TOOLS_LATER = "command tools: next issue"


@pytest.fixture(scope="module", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


# --- declarations as TOML -------------------------------------------------------------------


def agent_eval(instruction: str = "Review.") -> dict[str, Any]:
    return {
        "title": "Review",
        "profile": {"kind": "agent", "backend": "openai", "model": "test"},
        "payload": {"instruction": instruction},
    }


HUMAN_EVAL = {"title": "Check", "profile": {"kind": "human"}, "payload": {"instruction": "Check."}}
RUNTIME_EVAL = {
    "title": "Runs",
    "profile": {"kind": "runtime", "command": "true", "args": []},
    "payload": {"instruction": "Runs."},
}


def artifact(name: str, tools: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name}
    if tools is not None:
        data["views"] = {"agent_tools": tools}
    data.update(extra)
    return data


def load(root: Path) -> Workspace:
    return ConfigService(PosixFilesystem()).load(str(root))


def refused(root: Path) -> str:
    """Loading must fail; the rendered problems."""
    with pytest.raises(ConfigError) as info:
        load(root)
    return str(info.value)


def tool_ports(environment: dict[str, str] | None = None) -> ToolPorts:
    return real_tool_ports(dict(os.environ) if environment is None else environment)


@dataclasses.dataclass
class Harness:
    """A registry plus an output root that must never be created by these calls."""

    workspace_root: Path
    registry: AgentToolRegistry
    output_root: Path

    async def call(self, name: str, args: Any) -> ToolResult:
        existed = self.output_root.exists()
        result = await self.registry.call(name, args, str(self.output_root))
        definition = self.registry.get(name)
        runs_a_command = definition is not None and isinstance(
            definition.declaration, CommandAgentTool
        )
        refused = "Tool arguments" in (result.error_text or "")
        if not runs_a_command or refused:  # built-ins and refused calls create nothing
            assert self.output_root.exists() == existed, "a call created its output root"
        # an admitted command call may create the root; its own directories are gone
        assert not self.output_root.exists() or list(self.output_root.iterdir()) == []
        return result

    def names(self) -> list[str]:
        return [d.name for d in self.registry.list()]

    def definition(self, name: str) -> dict[str, Any]:
        found = self.registry.get(name)
        assert found is not None, name
        return found.to_json()


def harness(tmp_path: Path, eval_id: str, environment: dict[str, str] | None = None) -> Harness:
    root = tmp_path / "W"
    registry = AgentToolRegistry.for_eval(load(root), eval_id, tool_ports(environment))
    return Harness(root, registry, tmp_path / "out")


def error_text(result: ToolResult) -> str:
    assert result.is_error, result
    assert len(result.content) == 1 and result.content[0]["type"] == "text"
    return str(result.content[0]["text"])


def ok_text(result: ToolResult) -> str:
    assert not result.is_error, result
    assert len(result.content) == 1 and result.content[0]["type"] == "text"
    return str(result.content[0]["text"])


def ok_json(result: ToolResult) -> Any:
    assert not result.is_error, result
    assert len(result.content) == 1 and result.content[0]["type"] == "json"
    return result.content[0]["data"]


# --- F. schema admission ----------------------------------------------------------------------

TOOL_SCRIPT = (
    "import os\n"
    "here = os.path.dirname(os.path.abspath(__file__))\n"
    "open(os.path.join(here, 'spawned'), 'w').close()\n"
    'print(\'{"content":[{"type":"text","text":"ran"}]}\')\n'
)
F_SCHEMA = {
    "type": "object",
    "$defs": {"positive": {"type": "integer", "minimum": 1}},
    "properties": {"n": {"$ref": "#/$defs/positive"}},
    "required": ["n"],
    "additionalProperties": False,
}


def fx_c(tmp_path: Path, input_schema: dict[str, Any] | None = F_SCHEMA, **tool: Any) -> Path:
    """FX-C: ``W`` itself is Artifact ``a`` with the json command tool ``inspect``."""
    root = tmp_path / "W"
    inspect: dict[str, Any] = {
        "description": "Inspect {artifactName}",
        "protocol": "json",
        "command": "python3",
        "args": ["tool.py"],
    }
    if input_schema is not None:
        inspect["input_schema"] = input_schema
    inspect.update(tool)
    declare(root, artifact("a", {"inspect": inspect}, evals={"review": agent_eval()}))
    (root / "tool.py").write_text(TOOL_SCRIPT, encoding="utf-8")
    return root


async def test_SCH_01_non_object_and_oversize_arguments(tmp_path: Path):
    fx_c(tmp_path)
    h = harness(tmp_path, "a/review")
    assert error_text(await h.call("inspect_a", [])) == ARGS_REFUSED
    assert error_text(await h.call("inspect_a", "x")) == ARGS_REFUSED
    assert error_text(await h.call("inspect_a", None)) == ARGS_REFUSED
    assert "Tool arguments" in error_text(await h.call("inspect_a", {"n": 1, "extra": "x" * 65536}))
    assert not (h.workspace_root / "spawned").exists()


async def test_SCH_01_the_64_KiB_bound_is_inclusive(tmp_path: Path):
    fx_c(tmp_path, input_schema={"type": "object"})
    h = harness(tmp_path, "a/review")
    overhead = len(json.dumps({"p": ""}, separators=(",", ":")))
    at_limit = {"p": "x" * (64 * KIB - overhead)}
    over = {"p": "x" * (64 * KIB - overhead + 1)}
    assert error_text(await h.call("inspect_a", over)) == ARGS_REFUSED
    assert not (h.workspace_root / "spawned").exists()  # refused: nothing was spawned
    # Multibyte characters count as their UTF-8 bytes, not as characters.
    assert error_text(await h.call("inspect_a", {"p": "é" * (33 * KIB)})) == ARGS_REFUSED
    assert not (h.workspace_root / "spawned").exists()
    assert ok_text(await h.call("inspect_a", at_limit)) == "ran"  # at the limit: admitted, ran


async def test_SCH_03_diagnostic_format(tmp_path: Path):
    fx_c(tmp_path)
    h = harness(tmp_path, "a/review")
    text = error_text(await h.call("inspect_a", {"n": 0}))
    assert text.startswith(SCHEMA_MISMATCH)
    assert '\n- instancePath "/n": constraint "' in text
    assert text.endswith(" failed.")
    assert len(text) < 4096
    assert not (h.workspace_root / "spawned").exists()


async def test_SCH_03_long_paths_are_escaped_and_bounded(tmp_path: Path):
    fx_c(tmp_path, input_schema={"type": "object", "additionalProperties": {"type": "integer"}})
    h = harness(tmp_path, "a/review")
    keys = {f'{"k" * 1000}{i}\n"': "v" for i in range(8)}
    text = error_text(await h.call("inspect_a", keys))
    lines = text.split("\n")
    assert len(lines) == 6 and lines[0] == SCHEMA_MISMATCH
    for line in lines[1:]:
        assert line.startswith('- instancePath "/') and line.endswith(" failed.")
        assert "… (truncated)" in line
    assert len(text.encode("utf-8")) < 4096


async def test_SCH_04_values_never_echoed(tmp_path: Path):
    fx_c(tmp_path)
    h = harness(tmp_path, "a/review")
    for args in ({"n": "secret-input"}, {}):
        text = error_text(await h.call("inspect_a", args))
        assert "Tool arguments" in text
        assert "secret-input" not in text
    assert not (h.workspace_root / "spawned").exists()


async def test_SCH_05_at_most_five_diagnostics(tmp_path: Path):
    props = {k: {"type": "integer"} for k in "abcdef"}
    fx_c(tmp_path, input_schema={"type": "object", "properties": props})
    h = harness(tmp_path, "a/review")
    text = error_text(await h.call("inspect_a", {k: "x" for k in "abcdef"}))
    lines = text.split("\n")
    assert len(lines) == 6
    assert lines[0] == SCHEMA_MISMATCH
    assert all(line.startswith("- instancePath ") for line in lines[1:])
    assert not (h.workspace_root / "spawned").exists()


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string"},
        {"type": "object", "properties": {"n": {"minimum": "no"}}},
        {"type": "object", "$ref": "https://example.invalid/schema"},
        {"type": "object", "$ref": "file:///etc/passwd"},
    ],
    ids=["string-root", "invalid-keyword", "https-ref", "file-ref"],
)
def test_SCH_08_declaration_time_schema_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema: dict[str, Any]
):
    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a schema check attempted network access")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    fx_c(tmp_path, input_schema=schema)
    assert "views.agent_tools.inspect.input_schema" in refused(tmp_path / "W")


@pytest.mark.parametrize(
    "schema", [{"type": ["object", "null"]}, {"properties": {}}], ids=["type-list", "no-type"]
)
def test_SCH_09_root_type_must_be_exactly_object(tmp_path: Path, schema: dict[str, Any]):
    fx_c(tmp_path, input_schema=schema)
    assert 'the root must declare type = "object"' in refused(tmp_path / "W")


async def test_SCH_10_local_ref_admits_valid_arguments(tmp_path: Path):
    fx_c(tmp_path)
    h = harness(tmp_path, "a/review")
    result = await h.call("inspect_a", {"n": 1})
    # Admitted: whatever happens next is not an admission error.
    assert "Tool arguments" not in (result.error_text or "")
    # Until command tools run (next issue), the admitted call ends in an error that
    # spawned nothing.
    if result.is_error:
        assert not (h.workspace_root / "spawned").exists()


async def test_SCH_10_local_ref_runs_the_command(tmp_path: Path):
    fx_c(tmp_path)
    ports = dataclasses.replace(
        tool_ports(), programs=PosixProgramFinder(), scratch=PosixScratchSpace()
    )
    registry = AgentToolRegistry.for_eval(load(tmp_path / "W"), "a/review", ports)
    h = Harness(tmp_path / "W", registry, tmp_path / "out")
    result = await h.registry.call("inspect_a", {"n": 1}, str(tmp_path / "out"))
    assert ok_text(result) == "ran"
    assert (h.workspace_root / "spawned").exists()


async def test_SCH_defaults_never_change_arguments(tmp_path: Path):
    """A schema default neither fills a missing value nor turns a refused call into a valid one."""
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "default": 1}},
        "required": ["n"],
        "additionalProperties": False,
    }
    fx_c(tmp_path, input_schema=schema)
    h = harness(tmp_path, "a/review")
    assert error_text(await h.call("inspect_a", {})).startswith(SCHEMA_MISMATCH)
    assert not (h.workspace_root / "spawned").exists()


async def test_SCH_default_input_schema_admits_only_the_empty_object(tmp_path: Path):
    fx_c(tmp_path, input_schema=None)
    h = harness(tmp_path, "a/review")
    assert h.definition("inspect_a")["inputSchema"] == {
        "type": "object",
        "additionalProperties": False,
    }
    assert error_text(await h.call("inspect_a", {"x": 1})).startswith(SCHEMA_MISMATCH)
    assert not (h.workspace_root / "spawned").exists()  # a refused call spawns nothing
    assert ok_text(await h.call("inspect_a", {})) == "ran"
    assert (h.workspace_root / "spawned").exists()


def fx_a(tmp_path: Path, tools: dict[str, Any] | None = None) -> Path:
    """FX-A: folder Artifact ``a`` at ``W/a`` with the five model-input built-ins."""
    root = tmp_path / "W"
    declared = tools or {
        "read": {"builtin": "read"},
        "list": {"builtin": "list"},
        "glob": {"builtin": "glob"},
        "grep": {"builtin": "grep"},
        "view_image": {"builtin": "view_image"},
    }
    declare(root / "a", artifact("a", declared, evals={"review": agent_eval()}))
    return root


async def test_SCH_builtin_arguments_use_the_same_admission(tmp_path: Path):
    root = fx_a(tmp_path)
    (root / "a" / "notes.md").write_text("one\ntwo\nthree\n", encoding="utf-8")
    h = harness(tmp_path, "a/review")
    assert error_text(await h.call("read_a", [])) == ARGS_REFUSED
    assert error_text(await h.call("read_a", {"path": "x" * (65 * KIB)})) == ARGS_REFUSED
    refused_args = [
        {},
        {"path": "notes.md", "bogus": 1},
        {"path": "notes.md", "offset": 1.5},
        {"path": "notes.md", "offset": None},
        {"path": "notes.md", "offset": 2**53},
        {"path": "notes.md", "limit": 501},
        {"path": 7},
    ]
    for args in refused_args:
        assert error_text(await h.call("read_a", args)).startswith(SCHEMA_MISMATCH), args
    page = ok_json(await h.call("read_a", {"path": "notes.md", "offset": 2.0, "limit": 1}))
    assert page["lines"] == [{"number": 2, "text": "two\n"}]
    assert error_text(await h.call("grep_a", {"pattern": "x", "glob": ""})).startswith(
        SCHEMA_MISMATCH
    )
    assert error_text(await h.call("list_a", {"limit": 201})).startswith(SCHEMA_MISMATCH)


# --- K. registry, names, descriptions -----------------------------------------------------


def reg_01(tmp_path: Path) -> Path:
    root = tmp_path / "W"
    declare(root, artifact("root"))
    inspect = {
        "description": "Inspect {artifactName}",
        "protocol": "json",
        "command": "python3",
        "args": ["tool.py"],
    }
    declare(
        root / "a",
        artifact("a", {"inspect": inspect}, evals={"review": agent_eval("Inspect {b}.")}),
    )
    (root / "a" / "tool.py").write_text(TOOL_SCRIPT, encoding="utf-8")
    declare(
        root / "b",
        artifact("b", {"read": {"builtin": "read"}}, evals={"deps": agent_eval("Depends on {c}.")}),
    )
    declare(root / "b" / "child", artifact("child", {"list": {"builtin": "list"}}))
    declare(root / "c", artifact("c", {"grep": {"builtin": "grep"}}))
    return root


async def test_REG_01_eval_scope_and_listing_order(tmp_path: Path):
    root = reg_01(tmp_path)
    before = snapshot(tmp_path)
    h = harness(tmp_path, "a/review")
    assert h.names() == ["inspect_a", "list_child", "read_b"]
    assert h.registry.list()[0].description == "Inspect a"
    assert snapshot(tmp_path) == before  # listing created nothing and ran nothing
    page = ok_json(await h.call("read_b", {"path": "index.artf"}))
    assert page["artifactId"] == "b" and page["lineCount"] >= 1
    assert error_text(await h.call("grep_c", {})) == UNKNOWN_TOOL
    assert not (root / "a" / "spawned").exists()


async def test_REG_01_other_evals_references_are_not_admitted(tmp_path: Path):
    root = reg_01(tmp_path)
    (root / "c" / "data.txt").write_text("needle\n", encoding="utf-8")
    h = harness(tmp_path, "a/review")
    assert "c" not in h.registry.scope
    # b's own eval references c, so its registry admits c (and b's child).
    b = harness(tmp_path, "b/deps")
    assert b.names() == ["grep_c", "list_child", "read_b"]
    found = ok_json(await b.call("grep_c", {"pattern": "needle"}))
    assert [m["path"] for m in found["matches"]] == ["data.txt"]


def test_REG_01_listing_creates_nothing_and_runs_nothing(tmp_path: Path):
    root = reg_01(tmp_path)
    before = snapshot(tmp_path)
    for _ in range(3):
        registry = AgentToolRegistry.for_eval(load(root), "a/review", tool_ports())
        definitions = [d.to_json() for d in registry.list()]
        assert [d["name"] for d in definitions] == ["inspect_a", "list_child", "read_b"]
        assert all(
            set(d) == {"name", "artifactId", "description", "inputSchema"} for d in definitions
        )
    assert snapshot(tmp_path) == before
    assert not (root / "a" / "spawned").exists()


def reg_02(tmp_path: Path, b_operation: str) -> Path:
    root = tmp_path / "W"
    declare(root, artifact("root", evals={"review": agent_eval()}))
    declare(root / "a", artifact("a", {"inspect_b": {"builtin": "read"}}))
    declare(root / "b", artifact("b_a", {b_operation: {"builtin": "list"}}))
    return root


def test_REG_02_concatenation_collision(tmp_path: Path):
    reg_02(tmp_path, "inspect")
    assert "collide: inspect_b_a" in refused(tmp_path / "W")


def test_REG_02_the_registry_itself_refuses_a_collision(tmp_path: Path):
    """The load refuses collisions workspace-wide; the registry checks its scope on its own."""
    root = reg_02(tmp_path, "other")
    workspace = load(root)
    b_a = workspace.artifacts["b_a"]
    renamed = tuple(dataclasses.replace(t, name="inspect") for t in b_a.agent_tools)
    colliding = dataclasses.replace(
        b_a, declaration=dataclasses.replace(b_a.declaration, agent_tools=renamed)
    )
    tampered = dataclasses.replace(workspace, artifacts={**workspace.artifacts, "b_a": colliding})
    with pytest.raises(RegistryError, match="collide: inspect_b_a"):
        AgentToolRegistry.for_eval(tampered, "root/review", tool_ports())


def test_REG_02_session_provenance_names_collide_too(tmp_path: Path):
    root = tmp_path / "W"
    declare(root, artifact("root", evals={"review": agent_eval()}))
    session = {"start": {"command": "true", "args": []}, "stop": {"command": "true", "args": []}}
    declare(root / "a", {"name": "a", "views": {"agent_sessions": {"s_b": session}}})
    declare(root / "b", {"name": "b_a", "views": {"agent_sessions": {"s": session}}})
    assert "collide: s_b_a" in refused(root)


def description_case(tmp_path: Path, description: str) -> Path:
    root = tmp_path / "W"
    tools = {
        "builtin": {"builtin": "read", "description": description},
        "command": {
            "description": description,
            "protocol": "json",
            "command": "python3",
            "args": ["tool.py"],
        },
    }
    declare(root / "a", artifact("a", tools, evals={"review": agent_eval()}))
    return root


@pytest.mark.parametrize(
    "description", ["", "   ", "Read {other}", "x" * 4001], ids=["empty", "blank", "other", "4001"]
)
def test_REG_03_description_limits(tmp_path: Path, description: str):
    text = refused(description_case(tmp_path, description))
    assert "views.agent_tools.builtin.description" in text
    assert "views.agent_tools.command.description" in text


def test_REG_03_description_of_4000_accepted(tmp_path: Path):
    description_case(tmp_path, "x" * 4000)
    h = harness(tmp_path, "a/review")
    assert [len(d.description) for d in h.registry.list()] == [4000, 4000]


def test_REG_03_description_limit_counts_utf16_units(tmp_path: Path):
    refused(description_case(tmp_path, "\U0001f600" * 2000 + "x"))
    (tmp_path / "W").rename(tmp_path / "old")
    description_case(tmp_path, "\U0001f600" * 2000)
    assert len(harness(tmp_path, "a/review").registry.list()) == 2


def test_REG_05_interpolation(tmp_path: Path):
    description_case(tmp_path, "{artifactName} vs {artifactName}")
    h = harness(tmp_path, "a/review")
    assert [d.description for d in h.registry.list()] == ["a vs a", "a vs a"]


@pytest.mark.parametrize("description", ["{artifactName}}", "{ artifactName}"])
def test_REG_05_stray_braces_rejected(tmp_path: Path, description: str):
    refused(description_case(tmp_path, description))


def test_REG_05_the_length_limit_applies_to_the_template(tmp_path: Path):
    template = "{artifactName}" + "x" * (4000 - len("{artifactName}"))
    root = tmp_path / "W"
    # The longest Artifact name whose published tool name (read_<name>) the APIs accept.
    long_name = "n" * (PUBLISHED_TOOL_NAME_MAX - len("read_"))
    declare(
        root / "a",
        artifact(long_name, {"read": {"builtin": "read", "description": template}}),
    )
    workspace = load(root)
    registry = AgentToolRegistry.for_artifact(workspace, long_name, tool_ports())
    (definition,) = registry.list()
    assert definition.description.startswith(long_name + "x")
    assert len(definition.description) == 4000 - len("{artifactName}") + len(long_name)


def reg_06(tmp_path: Path) -> Workspace:
    root = tmp_path / "W"
    declare(
        root / "a",
        artifact(
            "a",
            {"read": {"builtin": "read"}},
            evals={"review": agent_eval(), "check": HUMAN_EVAL, "runs": RUNTIME_EVAL},
        ),
    )
    return load(root)


def test_REG_06_registry_kind_checks(tmp_path: Path):
    workspace = reg_06(tmp_path)
    with pytest.raises(RegistryError) as human:
        AgentToolRegistry.for_eval(workspace, "a/check", tool_ports())
    assert str(human.value) == "Agent tools require an Agent eval."
    with pytest.raises(RegistryError) as runtime:
        AgentToolRegistry.for_eval(workspace, "a/runs", tool_ports())
    assert str(runtime.value) == "Agent tools require an Agent eval."
    with pytest.raises(RegistryError) as missing:
        AgentToolRegistry.for_eval(workspace, "a/missing", tool_ports())
    assert str(missing.value) == "Unknown eval: a/missing"
    with pytest.raises(ValueError, match=r"^Human tools require a Human eval\.$"):
        human_scope_for_eval(workspace, "a/review")
    assert human_scope_for_eval(workspace, "a/check") == ("a",)


def test_REG_06_unknown_artifact(tmp_path: Path):
    workspace = reg_06(tmp_path)
    with pytest.raises(RegistryError, match=r"^Unknown Artifact: nope$"):
        AgentToolRegistry.for_artifact(workspace, "nope", tool_ports())
    registry = AgentToolRegistry.for_artifact(workspace, "a", tool_ports())
    assert [d.name for d in registry.list()] == ["read_a"]


async def test_REG_human_tools_are_never_listed_by_the_agent_registry(tmp_path: Path):
    root = tmp_path / "W"
    human_tools = {
        "guide": {"builtin": "read", "args": ["guide.md"]},
        "show": {
            "description": "Show {artifactName}.",
            "kind": "output",
            "command": "cat",
            "args": ["guide.md"],
        },
    }
    declare(
        root / "a",
        {
            "name": "a",
            "views": {"agent_tools": {"read": {"builtin": "read"}}, "human_tools": human_tools},
            "evals": {"review": agent_eval(), "check": HUMAN_EVAL},
        },
    )
    (root / "a" / "guide.md").write_text("# Guide\n", encoding="utf-8")
    workspace = load(root)
    for registry in (
        AgentToolRegistry.for_eval(workspace, "a/review", tool_ports()),
        AgentToolRegistry.for_artifact(workspace, "a", tool_ports()),
    ):
        assert [d.name for d in registry.list()] == ["read_a"]
        assert registry.get("guide_a") is None and registry.get("show_a") is None
        assert error_text(await registry.call("guide_a", {})) == UNKNOWN_TOOL
    human = human_tools_of(workspace, human_scope_for_eval(workspace, "a/check"))
    assert [d.name for d in human] == ["guide_a", "show_a"]


def test_REG_07_default_builtin_descriptions_and_path_schema_text(tmp_path: Path):
    fx_a(tmp_path)
    h = harness(tmp_path, "a/review")
    assert h.names() == ["glob_a", "grep_a", "list_a", "read_a", "view_image_a"]
    for definition in h.registry.list():
        data = definition.to_json()
        if definition.name == "view_image_a":
            assert 'use "image.png", not "a/image.png".' in data["description"]
            assert (
                'Paths are relative to a itself: use "image.png", not "a/image.png".'
                in (data["description"])
            )
        else:
            assert (
                'Paths are relative to a itself: use "notes.md", not "a/notes.md".'
                in (data["description"])
            )
        schema = data["inputSchema"]
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert schema["properties"]["path"]["description"].startswith(
            "Logical path relative to the tool's Artifact, without the Artifact's name;"
        )
        assert "{" not in data["description"]


def test_REG_07_fixed_argument_builtins_take_no_model_input(tmp_path: Path):
    root = fx_a(
        tmp_path,
        {
            "style": {"builtin": "read", "args": ["STYLE.md"]},
            "docs": {"builtin": "list", "args": ["docs"]},
            "usage": {"builtin": "section", "args": ["doc.md"]},
            "intro": {"builtin": "section", "args": ["doc.md", "Intro"]},
            "py": {"builtin": "help", "args": ["python3"]},
            "overview": {"builtin": "graph", "args": []},
        },
    )
    assert root.exists()
    h = harness(tmp_path, "a/review")
    empty = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
    for name in ("style_a", "docs_a", "intro_a", "py_a", "overview_a"):
        assert h.definition(name)["inputSchema"] == empty, name
    heading = h.definition("usage_a")["inputSchema"]
    assert heading["required"] == ["heading"]
    assert heading["properties"]["heading"]["minLength"] == 1
    assert heading["additionalProperties"] is False
    assert "Target: STYLE.md." in h.definition("style_a")["description"]


@pytest.mark.parametrize(
    ("tool", "where"),
    [
        ({"builtin": "unknown"}, "builtin"),
        ({"builtin": "read", "command": "cat"}, "command"),
        ({"builtin": "read", "protocol": "json"}, "protocol"),
        ({"builtin": "read", "input_schema": {"type": "object"}}, "input_schema"),
        ({"builtin": "read", "timeout_ms": 5}, "timeout_ms"),
        ({"protocol": "shell"}, "protocol"),
        ({"observation": "x"}, "observation"),
        ({"metadata": {}}, "metadata"),
        ({"script": "x"}, "script"),
        ({"command": "{command}"}, "command"),
        ({"timeout_ms": 0}, "timeout_ms"),
        ({"timeout_ms": 2147483648}, "timeout_ms"),
        ({"execution_paths": ["same", "same"]}, "execution_paths"),
        ({"execution_paths": ["../outside"]}, "execution_paths"),
    ],
    ids=lambda v: json.dumps(v) if isinstance(v, dict) else v,
)
def test_REG_09_declaration_strictness(tmp_path: Path, tool: dict[str, Any], where: str):
    command = {"description": "Inspect.", "protocol": "json", "command": "python3", "args": []}
    declared = tool if "builtin" in tool else {**command, **tool}
    root = tmp_path / "W"
    declare(root / "a", artifact("a", {"t": declared}))
    assert f"views.agent_tools.t.{where}" in refused(root)


@pytest.mark.parametrize("timeout", [2147483647, 1.0, 1])
def test_REG_09_timeouts_accepted(tmp_path: Path, timeout: float):
    root = tmp_path / "W"
    command = {
        "description": "Inspect.",
        "protocol": "json",
        "command": "python3",
        "args": [],
        "timeout_ms": timeout,
    }
    declare(root / "a", artifact("a", {"t": command}))
    load(root)


# --- L. fixed-argument built-ins -----------------------------------------------------------


def fixed(tmp_path: Path, tools: dict[str, Any]) -> Path:
    root = tmp_path / "W"
    declare(root / "a", artifact("a", tools, evals={"review": agent_eval()}))
    return root / "a"


@pytest.mark.parametrize(
    ("size", "truncated"), [(10, False), (65536, False), (70000, True)], ids=str
)
async def test_FIX_01_fixed_read_bounds(tmp_path: Path, size: int, truncated: bool):
    folder = fixed(tmp_path, {"style": {"builtin": "read", "args": ["STYLE.md"]}})
    content = ("a" * (size - 1) + "\n").encode("utf-8") if size < 70000 else b"a" * size
    (folder / "STYLE.md").write_bytes(content)
    h = harness(tmp_path, "a/review")
    text = ok_text(await h.call("style_a", {}))
    if truncated:
        assert text.endswith(MARKER)
        assert len(text.encode("utf-8")) <= 65536
        assert text[: -len(MARKER)] == "a" * (65536 - len(MARKER))
    else:
        assert text.encode("utf-8") == content
        assert MARKER not in text
    assert error_text(await h.call("style_a", {"x": 1})).startswith(SCHEMA_MISMATCH)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"a" * 65535 + "é".encode() + b"tail", None),
        (b"a" * 100 + b"\x00" + b"a" * 99, "Reading requires UTF-8 text, not binary data."),
        (b"abc\xffdef", "Reading requires UTF-8 text."),
    ],
    ids=["split-character", "nul", "invalid-utf8"],
)
async def test_FIX_02_fixed_read_never_splits_a_character(
    tmp_path: Path, content: bytes, expected: str | None
):
    folder = fixed(tmp_path, {"style": {"builtin": "read", "args": ["STYLE.md"]}})
    (folder / "STYLE.md").write_bytes(content)
    h = harness(tmp_path, "a/review")
    result = await h.call("style_a", {})
    if expected is not None:
        assert error_text(result) == expected
        return
    text = ok_text(result)
    assert text.endswith(MARKER)
    assert len(text.encode("utf-8")) <= 65536
    assert "\ufffd" not in text


async def test_FIX_02_fixed_read_of_a_directory_or_missing_file(tmp_path: Path):
    folder = fixed(
        tmp_path,
        {
            "dir": {"builtin": "read", "args": ["sub"]},
            "gone": {"builtin": "read", "args": ["missing.md"]},
        },
    )
    (folder / "sub").mkdir()
    h = harness(tmp_path, "a/review")
    assert error_text(await h.call("dir_a", {})) == "Reading requires a regular file."
    assert error_text(await h.call("gone_a", {})) == 'No "missing.md" in Artifact a.'


SECTION_DOC = (
    "# Top\nintro\n## Exact\nbody\n### Child\nchild\n"
    "```md\n## Fake\n```\n"
    "## Next\nnext\n\nSetext\n======\nlast\n"
)


async def test_FIX_03_section_selection(tmp_path: Path):
    folder = fixed(tmp_path, {"doc": {"builtin": "section", "args": ["doc.md"]}})
    (folder / "doc.md").write_text(SECTION_DOC, encoding="utf-8")
    h = harness(tmp_path, "a/review")
    exact = ok_text(await h.call("doc_a", {"heading": "Exact"}))
    assert exact == "## Exact\nbody\n### Child\nchild\n```md\n## Fake\n```\n"
    assert ok_text(await h.call("doc_a", {"heading": "Setext"})) == "Setext\n======\nlast\n"
    missing = error_text(await h.call("doc_a", {"heading": "Fake"}))
    assert missing.startswith("No matching heading: Fake. Available headings:\n")
    assert "Top\nExact\nChild\nNext\nSetext" in missing
    assert "Fake" not in missing.removeprefix("No matching heading: Fake.")
    assert error_text(await h.call("doc_a", {})).startswith(SCHEMA_MISMATCH)
    assert error_text(await h.call("doc_a", {"heading": ""})).startswith(SCHEMA_MISMATCH)


async def test_FIX_03_section_with_a_fixed_heading(tmp_path: Path):
    folder = fixed(
        tmp_path,
        {
            "next": {"builtin": "section", "args": ["doc.md", "Next"]},
            "absent": {"builtin": "section", "args": ["doc.md", "Absent"]},
        },
    )
    (folder / "doc.md").write_text(SECTION_DOC, encoding="utf-8")
    h = harness(tmp_path, "a/review")
    assert ok_text(await h.call("next_a", {})) == "## Next\nnext\n\n"
    listing = error_text(await h.call("absent_a", {}))
    assert (
        listing
        == "No matching heading: Absent. Available headings:\nTop\nExact\nChild\nNext\nSetext"
    )
    assert error_text(await h.call("next_a", {"heading": "Top"})).startswith(SCHEMA_MISMATCH)


# The stub's "wait" sleeps 30 s: ending within half of that proves the 300 ms timeout cut
# it, with room for a loaded CI machine (no speed is measured here).
STUB_WAIT_CUT_SECONDS = 15
STUB = """#!/bin/sh
case "$1" in
  large) head -c 70000 /dev/zero | tr '\\000' a; exit 0 ;;
  wait) exec sleep 30 ;;
  fail) echo "stub failed on purpose" >&2; exit 4 ;;
  env) env; pwd; exit 0 ;;
esac
IFS='|'
echo "stub help: $*"
"""


def help_setup(tmp_path: Path) -> dict[str, str]:
    folder = fixed(
        tmp_path,
        {
            "sub": {"builtin": "help", "args": ["stub", "sub"]},
            "large": {"builtin": "help", "args": ["stub", "large"]},
            "wait": {"builtin": "help", "args": ["stub", "wait"]},
            "fail": {"builtin": "help", "args": ["stub", "fail"]},
            "env": {"builtin": "help", "args": ["stub", "env"]},
            "nothere": {"builtin": "help", "args": ["nonexistent-xyz"]},
        },
    )
    assert folder.is_dir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "stub"
    stub.write_text(STUB, encoding="utf-8")
    stub.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "ARTIFACTIZE_SECRET_PROBE": "do-not-leak",
        "HOME": str(tmp_path / "home"),
    }


async def test_FIX_04_help_prints_the_program_help(tmp_path: Path):
    h = harness(tmp_path, "a/review", help_setup(tmp_path))
    assert ok_text(await h.call("sub_a", {})) == "stub help: sub|--help\n"
    assert error_text(await h.call("sub_a", {"x": 1})).startswith(SCHEMA_MISMATCH)


async def test_FIX_04_help_output_over_64_KiB(tmp_path: Path):
    h = harness(tmp_path, "a/review", help_setup(tmp_path))
    assert "64 KiB" in error_text(await h.call("large_a", {}))


async def test_FIX_04_help_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    assert builtin_help.HELP_TIMEOUT_MS == 10_000
    monkeypatch.setattr(builtin_help, "HELP_TIMEOUT_MS", 300)
    h = harness(tmp_path, "a/review", help_setup(tmp_path))
    started = time.monotonic()
    assert "timed out" in error_text(await h.call("wait_a", {}))
    assert time.monotonic() - started < STUB_WAIT_CUT_SECONDS


async def test_FIX_04_help_exits_unsuccessfully(tmp_path: Path):
    h = harness(tmp_path, "a/review", help_setup(tmp_path))
    text = error_text(await h.call("fail_a", {}))
    assert text.startswith("Help exited unsuccessfully (exit status: 4).")
    assert "stub failed on purpose" in text


async def test_FIX_04_help_environment_and_cwd(tmp_path: Path):
    environment = help_setup(tmp_path)
    h = harness(tmp_path, "a/review", environment)
    text = ok_text(await h.call("env_a", {}))
    assert "do-not-leak" not in text
    assert f"HOME={environment['HOME']}" in text
    assert f"PATH={environment['PATH']}" in text
    assert text.rstrip("\n").splitlines()[-1] == str(tmp_path / "W" / "a")


async def test_FIX_04_help_of_a_missing_program(tmp_path: Path):
    h = harness(tmp_path, "a/review", help_setup(tmp_path))
    assert "nonexistent-xyz" in error_text(await h.call("nothere_a", {}))


@pytest.mark.parametrize(
    ("tool", "where"),
    [
        ({"builtin": "read", "args": []}, "args"),
        ({"builtin": "read", "args": ["a.md", "b.md"]}, "args"),
        ({"builtin": "list", "args": ["a", "b"]}, "args"),
        ({"builtin": "glob", "args": ["x"]}, "args"),
        ({"builtin": "grep", "args": ["x"]}, "args"),
        ({"builtin": "view_image", "args": ["x.png"]}, "args"),
        ({"builtin": "section", "args": ["doc.md", "  "]}, "args[1]"),
        ({"builtin": "section"}, "builtin"),
        ({"builtin": "section", "args": ["doc.md", "a", "b"]}, "args"),
        ({"builtin": "help", "args": ["  "]}, "args[0]"),
        ({"builtin": "help", "args": []}, "args"),
        ({"builtin": "help"}, "builtin"),
        ({"builtin": "graph"}, "builtin"),
        ({"builtin": "graph", "args": ["x"]}, "args"),
        ({"builtin": "open", "args": ["https://example.com"]}, "builtin"),
        ({"builtin": "read", "args": ["a\u0000b"]}, "args"),
        ({"builtin": "help", "args": ["stub", "a\u0000b"]}, "args"),
        ({"builtin": "section", "args": ["doc.md", "a\u0000b"]}, "args"),
        ({"builtin": "read", "args": ["../outside.md"]}, "args"),
        ({"builtin": "read", "args": ["/etc/passwd"]}, "args"),
    ],
    ids=lambda v: json.dumps(v) if isinstance(v, dict) else v,
)
def test_FIX_05_fixed_args_arity(tmp_path: Path, tool: dict[str, Any], where: str):
    root = tmp_path / "W"
    declare(root / "a", artifact("a", {"t": tool}))
    assert f"views.agent_tools.t.{where}" in refused(root)


async def test_FIX_graph_returns_the_project_structure(tmp_path: Path):
    root = reg_01(tmp_path)
    declare(
        root / "a",
        artifact(
            "a",
            {"overview": {"builtin": "graph", "args": []}},
            evals={"review": agent_eval("Inspect {b}.")},
        ),
    )
    h = harness(tmp_path, "a/review")
    data = ok_json(await h.call("overview_a", {}))
    names = [a["name"] for a in data["artifacts"]]
    assert sorted(names) == ["a", "b", "c", "child", "root"]  # c is outside this eval's scope
    assert data["root"] == str(root.resolve())
    relations = {(r["input"], r["consumer"], r["kind"]) for r in data["relations"]}
    assert ("b", "a", "instruction") in relations
    assert ("child", "b", "child") in relations
    assert "structure" in h.definition("overview_a")["description"]
    assert error_text(await h.call("overview_a", {"x": 1})).startswith(SCHEMA_MISMATCH)


async def test_FIX_fixed_list_uses_the_list_result(tmp_path: Path):
    folder = fixed(tmp_path, {"docs": {"builtin": "list", "args": ["docs"]}})
    (folder / "docs").mkdir()
    (folder / "docs" / "b.md").write_text("b", encoding="utf-8")
    (folder / "docs" / "a.md").write_text("a", encoding="utf-8")
    h = harness(tmp_path, "a/review")
    data = ok_json(await h.call("docs_a", {}))
    assert data["artifactId"] == "a" and data["path"] == "docs"
    assert [(e["name"], e["path"], e["kind"]) for e in data["entries"]] == [
        ("a.md", "docs/a.md", "file"),
        ("b.md", "docs/b.md", "file"),
    ]
    assert data["truncated"] is False
