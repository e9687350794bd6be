"""``artifactize models claude-code|codex``: the agent's install and the models it lists, as
a document (``--json``) and as text (one model a line, then where the agent is)."""

from __future__ import annotations

from typing import Any

from artifactize.ports.coding_agents import AgentModels


def agent_models_view(backend: str, found: AgentModels) -> dict[str, Any]:
    return {
        "backend": backend,
        "models": [model.id for model in found.models],
        "modelDetails": [
            {"id": model.id, "name": model.name, "resolvesTo": model.resolves_to}
            for model in found.models
        ],
        "note": found.note,
        **found.install.to_json(),
    }


def agent_models_text(view: dict[str, Any]) -> str:
    width = max((len(model["id"]) for model in view["modelDetails"]), default=0)
    lines = []
    for model in view["modelDetails"]:
        said = model["name"] or ""
        if model["resolvesTo"] and model["resolvesTo"] != model["id"]:
            said = f"{said} -> {model['resolvesTo']}".strip()
        lines.append(f"{model['id']:<{width}}  {said}".rstrip())
    if view["note"]:
        lines.append(view["note"])
    elif not lines:
        lines.append("(the agent lists no models)")
    where = f"{view['program']} (from {view['programSource']})"
    lines.append(f"{view['backend']} {view['version']} at {where}: {view['detail']}")
    return "\n".join(lines)
