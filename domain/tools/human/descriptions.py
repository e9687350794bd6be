"""How Human tools are described: published name, description, kind, and no free arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from artifactize.domain.declarations.model import BuiltinHumanTool, HumanProfile, HumanTool
from artifactize.domain.declarations.templates import render_description
from artifactize.domain.project.scope import artifact_scope, eval_scope
from artifactize.domain.project.workspace import Workspace, published_name

HUMAN_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}

_BUILTIN_PURPOSE = {
    "read": "Show {target} of {artifactName}.",
    "list": "List the folder {target} of {artifactName}.",
    "section": "Show one section of {target} of {artifactName}.",
    "help": "Show the --help text of {target}.",
    "open": "Open {target} with the desktop's default application.",
    "graph": "Open a viewer of the whole project's structure: Artifacts, evals and relations.",
}


@dataclass(frozen=True)
class HumanToolDefinition:
    name: str
    artifact_id: str
    description: str
    kind: str
    declaration: HumanTool

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "artifactId": self.artifact_id,
            "description": self.description,
            "inputSchema": HUMAN_INPUT_SCHEMA,
            "kind": self.kind,
        }


def _description(tool: HumanTool, artifact: str) -> str:
    if tool.description:
        return render_description(tool.description, artifact)
    assert isinstance(tool, BuiltinHumanTool)
    target = " ".join(tool.args)
    return (
        _BUILTIN_PURPOSE[tool.builtin]
        .replace("{target}", target)
        .replace("{artifactName}", artifact)
    )


def human_tools_of(workspace: Workspace, scope: tuple[str, ...]) -> list[HumanToolDefinition]:
    definitions = [
        HumanToolDefinition(
            published_name(tool.name, name), name, _description(tool, name), tool.kind, tool
        )
        for name in scope
        for tool in workspace.artifact(name).human_tools
    ]
    return sorted(definitions, key=lambda d: d.name)


def human_scope_for_eval(workspace: Workspace, eval_id: str) -> tuple[str, ...]:
    found = workspace.find_eval(eval_id)
    if not isinstance(found.eval.profile, HumanProfile):
        raise ValueError("Human tools require a Human eval.")
    return eval_scope(workspace, eval_id)


def human_scope_for_artifact(workspace: Workspace, artifact: str) -> tuple[str, ...]:
    return artifact_scope(workspace, artifact)
