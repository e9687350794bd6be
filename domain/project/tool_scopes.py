"""Tool operands that leave the scope their tools run in, found by ``config check``.

A Human tool argument or a json tool argument ``{name}`` becomes the path of that Artifact
when the tool runs, and the registry refuses an Artifact outside the scope of the review
("Artifact is outside this review"). The scope is known from the declarations alone: the
admitted scope of each of the owner's evals of the tool's audience (its target, what the
eval references, their children and mounts), or the owner's own scope when it has no such
eval. So ``config check`` reports it, with the file, line and key, and the fix, instead of
letting the first ``tools check`` or review fail.
"""

from __future__ import annotations

from collections.abc import Iterator

from artifactize.domain.declarations.diagnostics import Problem
from artifactize.domain.declarations.model import (
    AgentProfile,
    BuiltinHumanTool,
    CommandAgentTool,
    HumanProfile,
)
from artifactize.domain.declarations.templates import TemplateError, parse_operand
from artifactize.domain.declarations.toml_source import KeyLocator
from artifactize.domain.project.scope import artifact_scope, eval_scope
from artifactize.domain.project.workspace import Artifact, Workspace

OUTSIDE_SCOPE = (
    "{{{name}}} names the Artifact {target}, which is outside the scope of {where} "
    '({scope}); add a mount to {owner} (mounts = {{ {alias} = "{target}" }}) or reference '
    "{{{target}}} in the eval's instruction"
)


def scope_problems(workspace: Workspace) -> list[Problem]:
    """Every tool operand naming an Artifact outside the scope its tool runs in."""
    problems: list[Problem] = []
    for owner in workspace.artifacts.values():
        locator: KeyLocator | None = None
        for key_path, name, audience in _operands(owner):
            target = workspace.resolve_name(owner, name)
            if target is None:
                continue  # unknown names are reported where references are checked
            for where, scope in _scopes(workspace, owner, audience):
                if target.name in scope:
                    continue
                locator = locator or KeyLocator(owner.source.text)
                message = OUTSIDE_SCOPE.format(
                    name=name,
                    target=target.name,
                    where=where,
                    scope=", ".join(scope),
                    owner=owner.name,
                    alias=name,
                )
                line = locator.line_of(key_path)
                problems.append(Problem(owner.source.path, line, key_path, message))
                break  # one problem per operand
    return problems


def _operands(owner: Artifact) -> Iterator[tuple[str, str, str]]:
    """(key path, referenced name, audience) of each Artifact reference in a tool's args."""
    for tool in owner.human_tools:
        args = tool.args[:1] if isinstance(tool, BuiltinHumanTool) else tool.args
        for index, arg in enumerate(args):
            name = _reference(arg)
            if name is not None:
                yield f"views.human_tools.{tool.name}.args[{index}]", name, "human"
    for agent_tool in owner.agent_tools:
        if isinstance(agent_tool, CommandAgentTool) and agent_tool.protocol == "json":
            for index, arg in enumerate(agent_tool.args):
                name = _reference(arg)
                if name is not None:
                    yield f"views.agent_tools.{agent_tool.name}.args[{index}]", name, "agent"


def _reference(arg: str) -> str | None:
    try:
        operand = parse_operand(arg)
    except TemplateError:
        return None  # reported by the declaration checks
    return operand.name if operand is not None else None


def _scopes(
    workspace: Workspace, owner: Artifact, audience: str
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(what a person reads, scope) of each review a tool of ``owner`` runs in."""
    kind = HumanProfile if audience == "human" else AgentProfile
    evals = [e for e in owner.evals if isinstance(e.profile, kind)]
    if not evals:
        yield f"{owner.name}'s {audience} tools", artifact_scope(workspace, owner.name)
        return
    for item in evals:
        qualified = f"{owner.name}/{item.id}"
        yield f"the eval {qualified}", eval_scope(workspace, qualified)
