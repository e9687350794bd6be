"""The project graph: Artifacts, their evals and relations, and components in dependency order.

Relations point from a consumer to an input. Cycles are allowed: each strongly connected
component is reviewed as one unit, and components are ordered inputs-first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from artifactize.domain.declarations.model import (
    AgentProfile,
    ArtifactsumFingerprint,
    BuiltinAgentTool,
    BuiltinHumanTool,
    CommandAgentTool,
    DependencyProfile,
    Eval,
    NoFingerprint,
    Profile,
    RuntimeProfile,
    ScriptFingerprint,
)
from artifactize.domain.project.workspace import Artifact, Workspace, published_name
from artifactize.ports.statuses import ProfileKind


def required_closure(workspace: Workspace, name: str) -> tuple[str, ...]:
    """``name`` and every Artifact it consumes, transitively (cycle peers included)."""
    workspace.artifact(name)
    return closure(workspace, (name,))


def closure(workspace: Workspace, names: Iterable[str]) -> tuple[str, ...]:
    """``names`` and every Artifact they consume, transitively, in configuration order.

    One walk over the cached input map for all of ``names`` together: linear in the
    Artifacts and relations reached, whatever the number of starting points.
    """
    inputs = workspace.inputs
    seen = set(names)
    pending = list(seen)
    while pending:
        for item in inputs.get(pending.pop(), ()):
            if item not in seen:
                seen.add(item)
                pending.append(item)
    if len(seen) * 4 < len(workspace.artifacts):  # few: sort them by configuration order
        order = workspace.order
        return tuple(sorted(seen, key=order.__getitem__))
    return tuple(a for a in workspace.artifacts if a in seen)


def components(workspace: Workspace, names: Iterable[str]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), inputs before consumers."""
    selected = list(names)
    allowed = set(selected)
    order = {name: i for i, name in enumerate(selected)}
    inputs = {k: [v for v in vs if v in allowed] for k, vs in workspace.inputs.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for start in selected:
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = inputs.get(node, [])
            if position < len(successors):
                work.append((node, position + 1))
                nxt = successors[position]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(sorted(component, key=order.__getitem__))
    return result


def graph_report(workspace: Workspace, artifact: str | None = None) -> dict[str, Any]:
    """The ``config graph`` document (camelCase JSON)."""
    names = required_closure(workspace, artifact) if artifact else tuple(workspace.artifacts)
    selected = set(names)
    comps = components(workspace, names)
    cyclic = {n for c in comps if len(c) > 1 for n in c}
    return {
        "root": workspace.root_path,
        "selected": artifact,
        "artifacts": [_artifact_json(workspace.artifact(n), workspace, n in cyclic) for n in names],
        "relations": [
            _drop_none(
                {
                    "consumer": r.consumer,
                    "input": r.input,
                    "kind": r.kind.value,
                    "evalId": r.eval_id,
                    "label": r.label or None,
                }
            )
            for r in workspace.relations
            if r.consumer in selected and r.input in selected
        ],
        "components": comps,
    }


def _artifact_json(artifact: Artifact, workspace: Workspace, in_cycle: bool) -> dict[str, Any]:
    declaration = artifact.declaration
    return {
        "name": artifact.name,
        "kind": artifact.kind.value,
        "path": artifact.path,
        "declaration": artifact.source.path,
        "tags": list(declaration.tags),
        "basis": declaration.basis,
        "parent": artifact.parent,
        "children": dict(artifact.children),
        "mounts": dict(artifact.mounts),
        "fingerprint": _fingerprint_json(artifact),
        "inCycle": in_cycle,
        "evals": [_eval_json(artifact, e, workspace) for e in artifact.evals],
        "agentTools": [_agent_tool_json(artifact, t) for t in artifact.agent_tools],
        "humanTools": [
            {
                "name": published_name(t.name, artifact.name),
                "kind": t.kind,
                **({"builtin": t.builtin} if isinstance(t, BuiltinHumanTool) else {}),
            }
            for t in artifact.human_tools
        ],
        "agentSessions": [published_name(s.name, artifact.name) for s in artifact.agent_sessions],
    }


def _fingerprint_json(artifact: Artifact) -> Mapping[str, Any] | bool:
    fingerprint = artifact.declaration.fingerprint
    if isinstance(fingerprint, NoFingerprint):
        return False
    if isinstance(fingerprint, ArtifactsumFingerprint):
        return {
            "kind": "artifactsum",
            "files": list(fingerprint.files),
            "ignore": list(fingerprint.ignore),
        }
    assert isinstance(fingerprint, ScriptFingerprint)
    return {"kind": "script", "command": fingerprint.command, "args": list(fingerprint.args)}


def _eval_json(artifact: Artifact, item: Eval, workspace: Workspace) -> dict[str, Any]:
    qualified = f"{artifact.name}/{item.id}"
    return {
        "id": qualified,
        "title": item.title,
        "profile": profile_json(item.profile),
        "references": list(workspace.eval_inputs.get(qualified, ())),
        "variants": sorted(item.profile_variants),
        "hasPassSchema": item.pass_schema is not None,
        "hasFailSchema": item.fail_schema is not None,
    }


def profile_json(profile: Profile) -> dict[str, Any]:
    if isinstance(profile, RuntimeProfile):
        return {
            "kind": ProfileKind.RUNTIME,
            "command": profile.command,
            "args": list(profile.args),
            "timeoutMs": profile.timeout_ms,
        }
    if isinstance(profile, AgentProfile):
        return _drop_none(
            {
                "kind": ProfileKind.AGENT,
                "backend": profile.backend,
                "model": profile.model,
                "reasoning": profile.reasoning,
                "timeoutMs": profile.timeout_ms,
                "maxToolCalls": profile.max_tool_calls,
                "maxTokens": profile.max_tokens,
            }
        )
    if isinstance(profile, DependencyProfile):
        return {"kind": ProfileKind.DEPENDENCY, "dependsOn": list(profile.depends_on)}
    return {"kind": ProfileKind.HUMAN}


def _agent_tool_json(
    artifact: Artifact, tool: BuiltinAgentTool | CommandAgentTool
) -> dict[str, Any]:
    base: dict[str, Any] = {"name": published_name(tool.name, artifact.name)}
    if isinstance(tool, BuiltinAgentTool):
        base["builtin"] = tool.builtin
    else:
        base["protocol"] = tool.protocol
        if tool.session:
            base["session"] = published_name(tool.session, artifact.name)
    return base


def _drop_none(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None}
