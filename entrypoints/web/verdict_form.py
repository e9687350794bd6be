"""The verdict form of the browser reviewer: fields from the eval's schemas, values posted
back, and the validator's messages put at the field they name.

The fields are the terminal reviewer's (``review_tui.form_model.flat_form``): a constant,
a choice, a boolean, a string, an integer or a number per property of a flat branch
schema. Any other schema gets a JSON editor (a textarea of the owner fields), as the
terminal reviewer hands such a schema to ``$EDITOR``. A boolean and a choice are a select
whose first option, ``(unset)``, leaves the field out, so "missing" can be said.

The form is ``novalidate``: the lifecycle's validator (``HumanReviews.submit``) decides, and
each of its detail lines (``- instancePath "/name": …``, ``- field "name" is not declared.``)
shows at the field it names; what names no field shows above the form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from artifactize.domain.reviews.verdicts import VERDICT_FIELD, VerdictValidator
from artifactize.entrypoints.review_tui.form_model import (
    ANNOTATIONS,
    FieldKind,
    FormError,
    FormField,
    VerdictForm,
    editor_template,
    flat_form,
)
from artifactize.ports.statuses import VERDICTS, Verdict

JSON_FIELD = "json"  # the JSON editor's field name in a verdict's group
UNSET_OPTION = ""
INSTANCE_LINE = re.compile(r'^- instancePath "(?P<path>[^"]*)": (?P<message>.*)$')
UNDECLARED_LINE = re.compile(r'^- field "(?P<name>[^"]*)" is not declared\.$')
REQUIRED_NAMES = re.compile(r"must have the required properties (?P<names>\[.*\])$")
NOT_JSON = "{field}: not JSON ({problem})."
NOT_AN_OBJECT = "{field}: the owner fields must be one JSON object."
CHOOSE_VERDICT = "Choose GREEN or RED."
ARRAY_KEYS = ANNOTATIONS | {"type", "items", "minItems", "maxItems", "uniqueItems"}
ARRAY_BOUNDS = (("minItems", "at least"), ("maxItems", "at most"))
ONE_A_LINE = "a list, one item a line"
ITEM_NAME = "{field}, line {line}"
NOT_AN_ITEM = "{field}: enter {hint}."


def input_name(verdict: str, name: str) -> str:
    """The HTML name (and id stem) of a field of ``verdict``'s group."""
    return f"{verdict}-{name}"


@dataclass
class ArrayField:
    """A list of strings, numbers, booleans or choices: one item a line (blank lines are
    skipped), each checked as the form checks a field of the item's schema."""

    name: str
    required: bool
    hint: str
    item: FormField
    text: str = ""

    def value(self) -> tuple[bool, list[Any]]:
        """``(present, items)``; an empty list is left out unless required."""
        items: list[Any] = []
        for number, line in enumerate(self.text.splitlines(), start=1):
            word = line.strip()
            if not word:
                continue
            item = self.item
            item.name = ITEM_NAME.format(field=self.name, line=number)
            if item.kind is FieldKind.CHOICE:
                item.choice = item.choices.index(word) if word in item.choices else None
            elif item.kind is FieldKind.BOOLEAN:
                item.flag = {"true": True, "false": False}.get(word)
            else:
                item.text = word
            present, value = item.value()
            if not present:
                raise FormError(NOT_AN_ITEM.format(field=item.name, hint=item.hint))
            items.append(value)
        return bool(items) or self.required, items


@dataclass
class VerdictChoice:
    """The form of one verdict: its fields (None: the JSON editor) and what was posted."""

    verdict: str
    form: VerdictForm | None
    json_text: str = ""
    errors: dict[str, str] = field(default_factory=dict)  # field name -> message
    arrays: dict[str, ArrayField] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # the schema's property order

    def names(self) -> set[str]:
        if self.form is None:
            return {JSON_FIELD}
        return {item.name for item in self.form.fields} | set(self.arrays)


def branch_schema(view: Mapping[str, Any], verdict: str) -> dict[str, Any]:
    """The recorded eval's branch schema for ``verdict``, as the lifecycle validates it."""
    definition = (view.get("humanDefinition") or {}).get("eval") or {}
    validator = VerdictValidator(definition.get("passSchema"), definition.get("failSchema"))
    green = verdict == Verdict.GREEN
    return validator.branch_schema(Verdict.GREEN if green else Verdict.RED)


def choices(view: Mapping[str, Any]) -> dict[str, VerdictChoice]:
    """Both verdicts' forms, empty."""
    found: dict[str, VerdictChoice] = {}
    for verdict in VERDICTS:
        schema = branch_schema(view, verdict)
        found[str(verdict)] = _choice(str(verdict), schema)
    return found


def _choice(verdict: str, schema: dict[str, Any]) -> VerdictChoice:
    """The terminal reviewer's flat form, plus the array properties it has no field for."""
    properties = schema.get("properties")
    required = schema.get("required") or []
    arrays: dict[str, ArrayField] = {}
    if isinstance(properties, Mapping) and isinstance(required, list):
        for name, item_schema in properties.items():
            array = _array(str(name), item_schema, name in required)
            if array is not None:
                arrays[str(name)] = array
    rest = {
        **schema,
        "properties": {k: v for k, v in (properties or {}).items() if k not in arrays},
    }
    form = flat_form(verdict, rest)
    if form is None:
        return VerdictChoice(verdict, None, json.dumps(editor_template(schema), indent=2))
    order = [str(name) for name in properties or {} if name != VERDICT_FIELD]
    return VerdictChoice(verdict, form, arrays=arrays, order=order)


def _array(name: str, schema: Any, required: bool) -> ArrayField | None:
    if not isinstance(schema, Mapping) or schema.get("type") != "array":
        return None
    if not set(schema) <= ARRAY_KEYS or not isinstance(schema.get("items"), Mapping):
        return None
    items = flat_form("", {"type": "object", "properties": {"item": schema["items"]}})
    if items is None or items.fields[0].kind is FieldKind.CONST:
        return None
    bounds = [
        f"{label} {schema[key]}" for key, label in ARRAY_BOUNDS if schema.get(key) is not None
    ]
    if schema.get("uniqueItems"):
        bounds.append("no repeats")
    rule = ", ".join([ONE_A_LINE, *bounds])
    return ArrayField(name, required, f"{rule} · {items.fields[0].hint}", items.fields[0])


def fill(choice: VerdictChoice, posted: Mapping[str, str]) -> None:
    """Put the posted values into the form (to show them again, and to build the result)."""
    if choice.form is None:
        choice.json_text = posted.get(input_name(choice.verdict, JSON_FIELD), "")
        return
    for item in choice.form.fields:
        value = posted.get(input_name(choice.verdict, item.name), "")
        if item.kind is FieldKind.CHOICE:
            item.choice = item.choices.index(value) if value in item.choices else None
        elif item.kind is FieldKind.BOOLEAN:
            item.flag = {"true": True, "false": False}.get(value)
        elif item.kind is not FieldKind.CONST:
            item.text = value
    for array in choice.arrays.values():
        array.text = posted.get(input_name(choice.verdict, array.name), "")


def result(choice: VerdictChoice) -> dict[str, Any] | None:
    """The result to submit, or None with ``choice.errors`` saying what the form could not
    turn into JSON."""
    if choice.form is None:
        try:
            owner = json.loads(choice.json_text or "{}")
        except ValueError as exc:
            choice.errors[JSON_FIELD] = NOT_JSON.format(field=JSON_FIELD, problem=exc)
            return None
        if not isinstance(owner, dict):
            choice.errors[JSON_FIELD] = NOT_AN_OBJECT.format(field=JSON_FIELD)
            return None
        return {**owner, VERDICT_FIELD: choice.verdict}
    for item in choice.form.fields:
        try:
            item.value()
        except FormError as exc:
            choice.errors[item.name] = exc.message
    values: dict[str, list[Any]] = {}
    for array in choice.arrays.values():
        try:
            present, items = array.value()
        except FormError as exc:
            choice.errors[array.name] = exc.message
            continue
        if present:
            values[array.name] = items
    if choice.errors:
        return None
    return {**choice.form.result(), **values}


def place_errors(choice: VerdictChoice, message: str) -> list[str]:
    """File the validator's detail lines under the fields they name; the lines that name no
    field of the form (the first line included), to show above it."""
    names = choice.names()
    general: list[str] = []
    for line in message.splitlines():
        targets, text = _targets(line)
        if choice.form is None and targets:
            targets = [JSON_FIELD]
        placed = [target for target in targets if target in names]
        for target in placed:
            previous = choice.errors.get(target)
            choice.errors[target] = f"{previous} {text}" if previous else text
        if not placed:
            general.append(line)
    return general


def _targets(line: str) -> tuple[list[str], str]:
    """The fields a detail line is about, and what to say at them."""
    undeclared = UNDECLARED_LINE.match(line)
    if undeclared:
        return [undeclared["name"]], line.removeprefix("- ")
    instance = INSTANCE_LINE.match(line)
    if instance is None:
        return [], line
    path, text = instance["path"], instance["message"]
    if path:
        return [path.split("/")[1].replace("~1", "/").replace("~0", "~")], text
    required = REQUIRED_NAMES.search(text)
    if required:
        try:
            missing = json.loads(required["names"])
        except ValueError:
            return [], line
        if isinstance(missing, list):
            return [str(name) for name in missing], text
    return [], line
