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
    FieldKind,
    FormError,
    VerdictForm,
    editor_template,
    flat_form,
)
from artifactize.ports.statuses import VERDICTS, ReviewStatus

JSON_FIELD = "json"  # the JSON editor's field name in a verdict's group
UNSET_OPTION = ""
INSTANCE_LINE = re.compile(r'^- instancePath "(?P<path>[^"]*)": (?P<message>.*)$')
UNDECLARED_LINE = re.compile(r'^- field "(?P<name>[^"]*)" is not declared\.$')
REQUIRED_NAMES = re.compile(r"must have the required properties (?P<names>\[.*\])$")
NOT_JSON = "{field}: not JSON ({problem})."
NOT_AN_OBJECT = "{field}: the owner fields must be one JSON object."
CHOOSE_VERDICT = "Choose GREEN or RED."


def input_name(verdict: str, name: str) -> str:
    """The HTML name (and id stem) of a field of ``verdict``'s group."""
    return f"{verdict}-{name}"


@dataclass
class VerdictChoice:
    """The form of one verdict: its fields (None: the JSON editor) and what was posted."""

    verdict: str
    form: VerdictForm | None
    json_text: str = ""
    errors: dict[str, str] = field(default_factory=dict)  # field name -> message


def branch_schema(view: Mapping[str, Any], verdict: str) -> dict[str, Any]:
    """The recorded eval's branch schema for ``verdict``, as the lifecycle validates it."""
    definition = (view.get("humanDefinition") or {}).get("eval") or {}
    validator = VerdictValidator(definition.get("passSchema"), definition.get("failSchema"))
    green = verdict == ReviewStatus.GREEN
    return validator.branch_schema(ReviewStatus.GREEN if green else ReviewStatus.RED)


def choices(view: Mapping[str, Any]) -> dict[str, VerdictChoice]:
    """Both verdicts' forms, empty."""
    found: dict[str, VerdictChoice] = {}
    for verdict in VERDICTS:
        schema = branch_schema(view, verdict)
        form = flat_form(verdict, schema)
        text = "" if form is not None else json.dumps(editor_template(schema), indent=2)
        found[str(verdict)] = VerdictChoice(str(verdict), form, text)
    return found


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
    if choice.errors:
        return None
    return choice.form.result()


def place_errors(choice: VerdictChoice, message: str) -> list[str]:
    """File the validator's detail lines under the fields they name; the lines that name no
    field of the form (the first line included), to show above it."""
    names = {item.name for item in choice.form.fields} if choice.form is not None else {JSON_FIELD}
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
