"""The small template languages of a declaration, parsed once at load time.

- descriptions: only ``{artifactName}``;
- instructions: ``{name}`` references, everything else literal;
- operands (runtime, json tool, session and script argv): an argument that is exactly
  ``{name}``, ``{name}/rel/path`` or ``--flag={name}[/rel/path]`` is a reference;
- Human argv: the operand forms plus ``{artifactPath}``, any other brace refused;
- plain argv: ``{property}`` placeholders with ``{{``/``}}`` escapes, single pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from artifactize.domain.declarations.identifiers import IDENTIFIER_PATTERN
from artifactize.domain.logical_paths import logical_path_problem
from artifactize.domain.text import utf16_length

DESCRIPTION_MAX_UTF16 = 4000
ARTIFACT_NAME_PLACEHOLDER = "{artifactName}"
ARTIFACT_PATH_PLACEHOLDER = "artifactPath"


class TemplateError(ValueError):
    """A template that does not parse; the message says which rule it breaks."""


# --- descriptions ---------------------------------------------------------------------


def description_problem(text: str) -> str | None:
    if not text.strip():
        return "must not be blank"
    if utf16_length(text) > DESCRIPTION_MAX_UTF16:
        return (
            f"is {utf16_length(text)} UTF-16 code units long; the limit is {DESCRIPTION_MAX_UTF16}"
        )
    rest = text.replace(ARTIFACT_NAME_PLACEHOLDER, "")
    if "{" in rest or "}" in rest:
        found = re.search(r"\{[^{}]*\}", rest)
        shown = f" `{found.group()}`" if found else " a stray brace"
        return f"supports only the {ARTIFACT_NAME_PLACEHOLDER} placeholder, found{shown}"
    return None


def render_description(template: str, artifact_name: str) -> str:
    return template.replace(ARTIFACT_NAME_PLACEHOLDER, artifact_name)


# --- instruction references -----------------------------------------------------------

_INSTRUCTION_REFERENCE = re.compile(r"(?<![{$\\])\{(" + IDENTIFIER_PATTERN + r")\}(?!\})")


def instruction_references(text: str) -> list[str]:
    """Names referenced as ``{name}``; ``${VAR}``, ``\\{x}``, ``{{x}}`` stay literal."""
    return [m.group(1) for m in _INSTRUCTION_REFERENCE.finditer(text)]


# --- operands -------------------------------------------------------------------------

_OPERAND = re.compile(
    r"(?P<flag>--?[A-Za-z0-9][A-Za-z0-9_-]*=)?\{(?P<name>[^{}]*)\}(?:/(?P<suffix>.*))?",
    re.DOTALL,
)


@dataclass(frozen=True)
class Operand:
    """A reference operand: ``[flag]{name}[/suffix]``."""

    name: str
    flag: str
    suffix: str


def parse_operand(arg: str) -> Operand | None:
    """The reference an argument holds, or None when the argument is literal.

    Raises ``TemplateError`` when the argument has the reference shape but an invalid
    name or suffix, so a typo never silently becomes a literal.
    """
    match = _OPERAND.fullmatch(arg)
    if match is None:
        return None
    name = match["name"]
    if re.fullmatch(IDENTIFIER_PATTERN, name) is None:
        raise TemplateError(f"`{{{name}}}` is not a valid reference name")
    suffix = match["suffix"] or ""
    if match["suffix"] is not None:
        problem = logical_path_problem(suffix)
        if problem is not None or suffix == "":
            raise TemplateError(
                f"the path after `{{{name}}}` must be a safe relative logical path"
                + (f": {problem}" if problem else "")
            )
        if "{" in suffix or "}" in suffix:
            raise TemplateError(
                f"the path after `{{{name}}}` must not contain braces; "
                "an argument holds at most one reference"
            )
    return Operand(name=name, flag=match["flag"] or "", suffix=suffix)


def parse_human_operand(arg: str) -> Operand | None:
    """Human argv: literal, or one ``{artifactPath}``/``{name}`` operand; other braces refused."""
    if "{" not in arg and "}" not in arg:
        return None
    try:
        operand = parse_operand(arg)
    except TemplateError:
        operand = None
    if operand is None:
        raise TemplateError(
            "Human arguments support only {artifactPath} or {name}[/path] scope placeholders "
            "(optionally --flag=)"
        )
    return operand


# --- plain templates ------------------------------------------------------------------


@dataclass(frozen=True)
class PlainPart:
    """A literal run of text, or (``is_placeholder``) a property name to substitute."""

    text: str
    is_placeholder: bool


def parse_plain_template(arg: str) -> tuple[PlainPart, ...]:
    """Split one plain-protocol argument into literal text and placeholders, left to right."""
    parts: list[PlainPart] = []
    literal: list[str] = []
    index = 0
    while index < len(arg):
        ch = arg[index]
        if arg.startswith("{{", index) or arg.startswith("}}", index):
            literal.append(ch)
            index += 2
        elif ch == "{":
            close = arg.find("}", index + 1)
            if close < 0:
                raise TemplateError("Unclosed plain tool placeholder.")
            name = arg[index + 1 : close]
            if not name or "{" in name:
                raise TemplateError("Invalid plain tool placeholder.")
            if literal:
                parts.append(PlainPart("".join(literal), False))
                literal = []
            parts.append(PlainPart(name, True))
            index = close + 1
        elif ch == "}":
            raise TemplateError("Unmatched plain tool closing brace.")
        else:
            literal.append(ch)
            index += 1
    if literal:
        parts.append(PlainPart("".join(literal), False))
    return tuple(parts)
