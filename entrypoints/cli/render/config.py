"""The text forms of ``config check`` (the summary line) and ``config graph`` (Artifacts,
components, relations); their ``--json`` forms are the documents themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.domain.declarations.diagnostics import Problem
from artifactize.domain.use_cases.config_service import NESTED_SHOWN, NESTED_SKIPPED


def summary_text(data: dict[str, Any]) -> str:
    """The warnings (file, line, key), the other repositories skipped below the root, then
    the one summary line."""
    kinds = data["evalsByKind"]
    warnings = "".join(
        "warning: " + Problem(w["file"], w["line"], w["keyPath"], w["message"]).render() + "\n"
        for w in data.get("warnings", [])
    )
    nested = data.get("nestedRepositories") or []
    skipped = ""
    if nested:
        names = ", ".join(nested[:NESTED_SHOWN]) + (", …" if len(nested) > NESTED_SHOWN else "")
        noun = "repository" if len(nested) == 1 else "repositories"
        skipped = NESTED_SKIPPED.format(count=len(nested), noun=noun, names=names) + "\n"
    return (
        warnings
        + skipped
        + (
            f"Configuration OK: {_count(data['artifacts'], 'Artifact')} "
            f"({data['folderArtifacts']} folder, {data['fileArtifacts']} file), "
            f"{_count(data['evals'], 'eval')} (runtime {kinds['runtime']}, agent {kinds['agent']}, "
            f"human {kinds['human']}), {_count(data['agentTools'], 'Agent tool')}, "
            f"{_count(data['humanTools'], 'Human tool')}, "
            f"{_count(data['agentSessions'], 'tool session')}."
        )
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def graph_text(report: Mapping[str, Any]) -> str:
    """Human-readable ``config graph``: Artifacts with their evals, then relations."""
    lines = ["Artifacts:"]
    for artifact in report["artifacts"]:
        marker = " [file]" if artifact["kind"] == "file" else ""
        basis = " [basis]" if artifact["basis"] else ""
        tags = f"  ({', '.join(artifact['tags'])})" if artifact["tags"] else ""
        path = artifact["path"] or "."
        lines.append(f"  {artifact['name']}{marker}{basis}  {path}{tags}")
        for item in artifact["evals"]:
            lines.append(f"    eval {item['id']} [{item['profile']['kind']}]  {item['title']}")
        tools = [t["name"] for t in artifact["agentTools"]]
        if tools:
            lines.append(f"    agent tools: {', '.join(tools)}")
        human = [t["name"] for t in artifact["humanTools"]]
        if human:
            lines.append(f"    human tools: {', '.join(human)}")
    lines.append("Components (inputs first):")
    for component in report["components"]:
        cycle = "  (cycle)" if len(component) > 1 else ""
        lines.append(f"  {' + '.join(component)}{cycle}")
    lines.append("Relations (input -> consumer):")
    if not report["relations"]:
        lines.append("  (none)")
    for relation in report["relations"]:
        lines.append(
            f"  {relation['input']} -> {relation['consumer']}  [{_relation_detail(relation)}]"
        )
    return "\n".join(lines)


def _relation_detail(relation: Mapping[str, Any]) -> str:
    """``child code``, ``mount impl``, ``instruction of calc/review``, ``argv of calc/tests``."""
    if relation.get("evalId"):
        return f"{relation['kind']} of {relation['consumer']}/{relation['evalId']}"
    if relation.get("label"):
        return f"{relation['kind']} {relation['label']}"
    return str(relation["kind"])
