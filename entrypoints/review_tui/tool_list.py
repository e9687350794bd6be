"""The Human tools of a request as the Request screen lists them, and their command lines.

The list comes from the request's recorded ``humanDefinition`` (every Artifact of the
admitted scope with its Human tool declarations), so the screen shows it without
reading the repository; the lifecycle refuses to run anything if the repository no longer
declares exactly that. Names follow the registry: ``<operation>_<artifactId>``, sorted.

Command lines are shown shell-quoted so a person can read (and paste) them: a word made
only of ``SAFE_WORD_CHARACTERS`` stays as it is, any other is single-quoted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from artifactize.domain.declarations.templates import render_description
from artifactize.domain.project.workspace import published_name

SAFE_WORD = re.compile(r"[A-Za-z0-9\-_./=:,+@%{}]+")
BUILTIN_DESCRIPTION = "Built-in {builtin} {args}"
RESOLVED_FIELDS = ("repository", "program", "argv", "cwd")


@dataclass(frozen=True)
class ToolInfo:
    """One Human tool of the request, as declared when the request was recorded."""

    name: str  # published: <operation>_<artifactId>
    operation: str
    artifact: str
    kind: str  # "launch" or "output"
    description: str
    declared: str  # the declared command line (shell-quoted), or the built-in and its args
    builtin: bool


def shell_quote(words: Sequence[str]) -> str:
    """Words joined by spaces, each single-quoted unless it is plainly safe."""
    return " ".join(_quote(word) for word in words)


def _quote(word: str) -> str:
    if SAFE_WORD.fullmatch(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _tool(artifact: str, declaration: Mapping[str, Any]) -> ToolInfo:
    operation = str(declaration.get("name", ""))
    args = [str(arg) for arg in declaration.get("args") or []]
    builtin = declaration.get("builtin")
    description = declaration.get("description")
    if isinstance(builtin, str):
        declared = shell_quote([builtin, *args])
        if not description:
            description = BUILTIN_DESCRIPTION.format(builtin=builtin, args=" ".join(args))
    else:
        declared = shell_quote([str(declaration.get("command", "")), *args])
    return ToolInfo(
        name=published_name(operation, artifact),
        operation=operation,
        artifact=artifact,
        kind=str(declaration.get("kind", "")),
        description=render_description(str(description or ""), artifact),
        declared=declared,
        builtin=isinstance(builtin, str),
    )


def recorded_tools(request: Mapping[str, Any]) -> list[ToolInfo]:
    """The Human tools of a request's recorded scope (empty for a request without one)."""
    definition = request.get("humanDefinition")
    if not isinstance(definition, Mapping):
        return []
    artifacts = definition.get("artifacts")
    if not isinstance(artifacts, Mapping):
        return []
    tools: list[ToolInfo] = []
    for name, artifact in artifacts.items():
        declaration = artifact.get("declaration") if isinstance(artifact, Mapping) else None
        if not isinstance(declaration, Mapping):
            continue
        for tool in declaration.get("humanTools") or []:
            if isinstance(tool, Mapping):
                tools.append(_tool(str(name), tool))
    return sorted(tools, key=lambda tool: tool.name)


def resolved_line(command: Mapping[str, Any]) -> str:
    """A resolved command line (``tool_commands`` entry): program and argv, shell-quoted."""
    return shell_quote([str(command["program"]), *(str(arg) for arg in command["argv"])])


def command_key(command: Mapping[str, Any]) -> str:
    """Identifies a resolved command line: a Confirm is asked once per key and session."""
    return json.dumps([command.get(name) for name in RESOLVED_FIELDS], ensure_ascii=False)


def is_resolved(command: Mapping[str, Any] | None) -> bool:
    """Whether ``tool_commands`` resolved the tool (not an ``{error}`` entry)."""
    return command is not None and all(name in command for name in RESOLVED_FIELDS)
