"""``.artf`` text for Human review fixtures: Artifacts, Human tools and Human evals.

The unit and integration tests of Human reviews, Human tools and the terminal reviewer
declare the same kinds of blocks (an output tool ``show`` that prints the notes, the sign-off
eval ``signoff`` with its pass and fail schemas); they are written once here. Each builder
returns TOML text ending in a newline; ``artifact`` joins blocks with blank lines.
"""

from __future__ import annotations

import json

SHOW_NOTES = ["{artifactPath}/notes.txt"]


def artifact(name: str, *blocks: str, settings: str = "") -> str:
    """An Artifact declaration: ``name = "NAME"`` (then ``settings`` lines), then ``blocks``."""
    return "\n".join([f'name = "{name}"\n{settings}', *blocks])


def human_tool(
    name: str,
    description: str,
    command: str,
    args: list[str],
    *,
    kind: str = "output",
    extra: str = "",
) -> str:
    """A command Human tool ``[views.human_tools.NAME]`` (then ``extra`` lines)."""
    return (
        f"[views.human_tools.{name}]\n"
        f'description = "{description}"\n'
        f'kind = "{kind}"\n'
        f'command = "{command}"\n'
        f"args = {json.dumps(args)}\n"
        f"{extra}"
    )


def show_tool() -> str:
    """The output tool ``show``: ``cat {artifactPath}/notes.txt``."""
    return human_tool("show", "Show the notes.", "cat", SHOW_NOTES)


def human_eval(name: str, title: str, instruction: str) -> str:
    """A Human eval ``[evals.NAME]`` without schemas."""
    return (
        f"[evals.{name}]\n"
        f'title = "{title}"\n'
        'profile = { kind = "human" }\n'
        f'payload.instruction = "{instruction}"\n'
    )


def signoff_eval(instruction: str = "Sign off {doc}.") -> str:
    """The Human eval ``signoff``: pass ``approved`` const true, fail a required ``reason``."""
    return "\n".join(
        [
            human_eval("signoff", "Signed off", instruction),
            "[evals.signoff.pass_schema]\n"
            'type = "object"\n'
            "properties.approved = { const = true }\n"
            'required = ["approved"]\n'
            "additionalProperties = false\n",
            "[evals.signoff.fail_schema]\n"
            'type = "object"\n'
            'properties.reason = { type = "string" }\n'
            'required = ["reason"]\n',
        ]
    )
