"""The verdict form: the fields of a flat owner schema, their values, and the result.

A form is offered only when the verdict's branch schema (``VerdictValidator.branch_schema``)
is a flat object: top-level keys in ``TOP_LEVEL_KEYS`` and each property one of

- ``const`` (shown fixed, prefilled, immutable),
- a string ``enum`` (a choice),
- ``boolean``,
- ``string`` (``minLength``/``maxLength``),
- ``integer`` or ``number`` (``minimum``/``maximum``/``exclusiveMinimum``/
  ``exclusiveMaximum``/``multipleOf``),

each with optional annotations (``title``, ``description``, ``$comment``). Anything else
(nested objects, arrays, composition, ``$ref``, type unions) has no form: the reviewer
edits JSON instead. The form checks only what it must to build JSON (numbers parse);
the schema itself is checked by the lifecycle's validator on submit, and its errors are
shown in the form, which stays open.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from artifactize.domain.reviews.verdicts import VERDICT_FIELD

ANNOTATIONS = frozenset({"title", "description", "$comment", "$schema"})
TOP_LEVEL_KEYS = ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
CONST_KEYS = ANNOTATIONS | {"const", "type"}
CHOICE_KEYS = ANNOTATIONS | {"enum", "type"}
BOOLEAN_KEYS = ANNOTATIONS | {"type"}
STRING_KEYS = ANNOTATIONS | {"type", "minLength", "maxLength"}
NUMBER_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
NUMBER_KEYS = ANNOTATIONS | {"type", *NUMBER_BOUNDS}
BOUND_SYMBOLS = {
    "minimum": "≥",
    "maximum": "≤",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
    "multipleOf": "multiple of",
}

INTEGER_TEXT = re.compile(r"-?\d+")
NUMBER_TEXT = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
ENTER_INTEGER = "{field}: enter an integer."
ENTER_NUMBER = "{field}: enter a number."
UNSET = "(unset)"
FIXED = "{value} (fixed)"


class FieldKind(enum.Enum):
    CONST = "const"
    CHOICE = "choice"
    BOOLEAN = "boolean"
    STRING = "string"
    INTEGER = "integer"
    NUMBER = "number"


TEXT_KINDS = (FieldKind.STRING, FieldKind.INTEGER, FieldKind.NUMBER)


class FormError(ValueError):
    """A value the form cannot turn into JSON; ``message`` names the field."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class FormField:
    """One owner field and what the reviewer entered so far."""

    name: str
    kind: FieldKind
    required: bool
    hint: str  # type and constraints, then the description
    const: Any = None
    choices: tuple[str, ...] = ()
    text: str = ""  # string, integer and number fields
    choice: int | None = None  # index into ``choices``; None is unset
    flag: bool | None = None  # booleans; None is unset

    def shown(self) -> str:
        """The value as the form shows it."""
        if self.kind is FieldKind.CONST:
            return FIXED.format(value=json.dumps(self.const, ensure_ascii=False))
        if self.kind is FieldKind.CHOICE:
            return UNSET if self.choice is None else self.choices[self.choice]
        if self.kind is FieldKind.BOOLEAN:
            return UNSET if self.flag is None else json.dumps(self.flag)
        return self.text

    def value(self) -> tuple[bool, Any]:
        """``(present, value)``: whether the field goes into the result, and its JSON value."""
        if self.kind is FieldKind.CONST:
            return True, self.const
        if self.kind is FieldKind.CHOICE:
            return self.choice is not None, None if self.choice is None else self.choices[
                self.choice
            ]
        if self.kind is FieldKind.BOOLEAN:
            return self.flag is not None, self.flag
        if self.kind is FieldKind.STRING:
            return bool(self.text) or self.required, self.text
        if not self.text.strip():
            return False, None  # an empty number is left out (required: the schema says so)
        return True, _number(self)


def _number(item: FormField) -> int | float:
    text = item.text.strip()
    if item.kind is FieldKind.INTEGER:
        if not INTEGER_TEXT.fullmatch(text):
            raise FormError(ENTER_INTEGER.format(field=item.name))
        return int(text)
    if not NUMBER_TEXT.fullmatch(text):
        raise FormError(ENTER_NUMBER.format(field=item.name))
    number = float(text)
    if number != number or number in (float("inf"), float("-inf")):
        raise FormError(ENTER_NUMBER.format(field=item.name))
    return int(text) if INTEGER_TEXT.fullmatch(text) else number


@dataclass
class VerdictForm:
    """The fields of one verdict's form, the focused field, and the last error shown."""

    verdict: str
    fields: list[FormField]
    focus: int = 0
    error: str | None = None

    @property
    def focused(self) -> FormField | None:
        return self.fields[self.focus] if self.fields else None

    def move(self, step: int) -> None:
        if self.fields:
            self.focus = (self.focus + step) % len(self.fields)

    def result(self) -> dict[str, Any]:
        """``{"verdict": …, …fields}``; raises FormError for a value that is not JSON-able."""
        result: dict[str, Any] = {VERDICT_FIELD: self.verdict}
        for item in self.fields:
            present, value = item.value()
            if present:
                result[item.name] = value
        return result


def flat_form(verdict: str, branch_schema: Mapping[str, Any]) -> VerdictForm | None:
    """The form of a flat branch schema, or None when the schema needs the JSON editor."""
    if not set(branch_schema) <= TOP_LEVEL_KEYS:
        return None
    properties = branch_schema.get("properties")
    required = branch_schema.get("required") or []
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return None
    fields: list[FormField] = []
    for name, schema in properties.items():
        if name == VERDICT_FIELD:
            continue
        item = _field(str(name), schema, name in required)
        if item is None:
            return None
        fields.append(item)
    return VerdictForm(verdict, fields)


def _field(name: str, schema: Any, required: bool) -> FormField | None:
    if not isinstance(schema, Mapping):
        return None
    keys = set(schema)
    kind_name = schema.get("type")
    about = _about(schema)
    if "const" in schema:
        if not keys <= CONST_KEYS:
            return None
        return FormField(
            name, FieldKind.CONST, required, _hint("fixed", about), const=schema["const"]
        )
    if "enum" in schema:
        choices = schema["enum"]
        if not keys <= CHOICE_KEYS or kind_name not in (None, "string"):
            return None
        if not isinstance(choices, list) or not choices:
            return None
        if not all(isinstance(choice, str) for choice in choices):
            return None
        hint = _hint("one of: " + ", ".join(choices), about)
        first = 0 if required else None
        return FormField(
            name, FieldKind.CHOICE, required, hint, choices=tuple(choices), choice=first
        )
    if kind_name == "boolean" and keys <= BOOLEAN_KEYS:
        return FormField(name, FieldKind.BOOLEAN, required, _hint("true or false", about))
    if kind_name == "string" and keys <= STRING_KEYS:
        return FormField(name, FieldKind.STRING, required, _hint(_string_rule(schema), about))
    if kind_name in ("integer", "number") and keys <= NUMBER_KEYS:
        kind = FieldKind.INTEGER if kind_name == "integer" else FieldKind.NUMBER
        return FormField(name, kind, required, _hint(_number_rule(kind_name, schema), about))
    return None


def _about(schema: Mapping[str, Any]) -> str:
    parts = [str(schema[key]) for key in ("title", "description") if schema.get(key)]
    return " — ".join(parts)


def _hint(rule: str, about: str) -> str:
    return f"{rule} · {about}" if about else rule


def _string_rule(schema: Mapping[str, Any]) -> str:
    low, high = schema.get("minLength"), schema.get("maxLength")
    if low is not None and high is not None:
        return f"text, {low}-{high} characters"
    if low is not None:
        return f"text, at least {_characters(low)}"
    if high is not None:
        return f"text, at most {_characters(high)}"
    return "text"


def _characters(count: Any) -> str:
    return f"{count} character" if count == 1 else f"{count} characters"


def _number_rule(kind_name: str, schema: Mapping[str, Any]) -> str:
    bounds = [f"{BOUND_SYMBOLS[key]} {schema[key]}" for key in NUMBER_BOUNDS if key in schema]
    return ", ".join([kind_name, *bounds])


def editor_template(branch_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The owner fields to start a JSON edit from: constants and the first choice filled,
    strings empty, everything else ``null`` (the verdict itself is not part of it)."""
    template: dict[str, Any] = {}
    properties = branch_schema.get("properties")
    if not isinstance(properties, Mapping):
        return template
    for name, schema in properties.items():
        if name == VERDICT_FIELD:
            continue
        template[str(name)] = _template_value(schema)
    return template


def _template_value(schema: Any) -> Any:
    if not isinstance(schema, Mapping):
        return None
    if "const" in schema:
        return schema["const"]
    choices = schema.get("enum")
    if isinstance(choices, list) and choices:
        return choices[0]
    return "" if schema.get("type") == "string" else None
