"""Input schemas and default descriptions of the Agent built-ins.

A built-in that takes the model's input publishes a strict schema (``additionalProperties:
false``); one with fixed ``args`` takes nothing (``section`` with one fixed argument takes
the heading). Defaults in these schemas document behaviour; they never change arguments.
"""

from __future__ import annotations

from typing import Any

from artifactize.domain.declarations.model import BuiltinAgentTool
from artifactize.domain.logical_paths import GLOB_PATTERN_MAX_CHARS, LOGICAL_PATH_MAX_UTF16
from artifactize.domain.tools.builtins.list_page import LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT
from artifactize.domain.tools.builtins.read import READ_DEFAULT_LIMIT, READ_MAX_LIMIT
from artifactize.domain.tools.builtins.search import GREP_DEFAULT_RESULTS, GREP_MAX_RESULTS

JSON_SAFE_INTEGER_MAX = 2**53 - 1

EMPTY_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {},
    "required": [],
    "additionalProperties": False,
}


def _path_property(example: str) -> dict[str, Any]:
    return {
        "type": "string",
        "maxLength": LOGICAL_PATH_MAX_UTF16,
        "description": (
            "Logical path relative to the tool's Artifact, without the Artifact's name; "
            f'for example "{example}". A child folder or mount alias may be the first '
            "component. No absolute paths, '..' or symlinks."
        ),
    }


def _pattern_property(what: str) -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": GLOB_PATTERN_MAX_CHARS,
        "description": what,
    }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


MODEL_INPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "read": _object(
        {
            "path": _path_property("notes.md"),
            "offset": {
                "type": "integer",
                "minimum": 1,
                "maximum": JSON_SAFE_INTEGER_MAX,
                "default": 1,
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": READ_MAX_LIMIT,
                "default": READ_DEFAULT_LIMIT,
            },
        },
        ["path"],
    ),
    "list": _object(
        {
            "path": _path_property("docs"),
            "offset": {
                "type": "integer",
                "minimum": 0,
                "maximum": JSON_SAFE_INTEGER_MAX,
                "default": 0,
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": LIST_MAX_LIMIT,
                "default": LIST_DEFAULT_LIMIT,
            },
        },
        [],
    ),
    "glob": _object(
        {
            "pattern": _pattern_property(
                "Glob relative to path: * within a name, ** across folders."
            ),
            "path": _path_property("docs"),
        },
        ["pattern"],
    ),
    "grep": _object(
        {
            "pattern": _pattern_property("Regular expression in Rust regex syntax."),
            "path": _path_property("docs"),
            "glob": _pattern_property("Only search files whose path relative to path matches."),
            "caseInsensitive": {"type": "boolean", "default": False},
            "maxResults": {
                "type": "integer",
                "minimum": 1,
                "maximum": GREP_MAX_RESULTS,
                "default": GREP_DEFAULT_RESULTS,
            },
        },
        ["pattern"],
    ),
    "view_image": _object({"path": _path_property("image.png")}, ["path"]),
}

SECTION_HEADING_SCHEMA = _object(
    {
        "heading": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4096,
            "description": "The exact heading text.",
        }
    },
    ["heading"],
)

_PURPOSE = {
    "read": "Read lines of a UTF-8 text file of {artifactName}, one page at a time (offset, limit).",
    "list": "List the entries of a folder of {artifactName}.",
    "glob": "Find files of {artifactName} whose path matches a glob pattern.",
    "grep": "Search the text files of {artifactName} for lines matching a regular expression.",
    "view_image": "View a PNG, JPEG or WebP image of {artifactName}.",
    "section": "Read one section of a Markdown document of {artifactName} by its exact heading.",
    "help": "Show the --help text of a program used by {artifactName}.",
    "graph": "Show the structure of the whole project: Artifacts, evals and relations.",
}


def input_schema_for(tool: BuiltinAgentTool) -> dict[str, Any]:
    if tool.args is None:
        return MODEL_INPUT_SCHEMAS[tool.builtin]
    if tool.builtin == "section" and len(tool.args) == 1:
        return SECTION_HEADING_SCHEMA
    return EMPTY_INPUT_SCHEMA


def default_description(tool: BuiltinAgentTool, artifact_name: str) -> str:
    """The description template of a built-in declared without one."""
    text = _PURPOSE[tool.builtin]
    if tool.args is None:
        example = "image.png" if tool.builtin == "view_image" else "notes.md"
        text += (
            f' Paths are relative to {artifact_name} itself: use "{example}", '
            f'not "{artifact_name}/{example}".'
        )
    elif tool.builtin in ("read", "list", "section"):
        text += f" Target: {tool.args[0]}."
    return text
