"""The verdict form: which schemas get a form, what keys do, and the result it builds."""

from __future__ import annotations

from typing import Any

import pytest

from artifactize.domain.reviews.verdicts import VerdictValidator
from artifactize.entrypoints.review_tui.form_keys import apply_key
from artifactize.entrypoints.review_tui.form_model import (
    FieldKind,
    FormError,
    VerdictForm,
    editor_template,
    flat_form,
)

OWNER: dict[str, Any] = {
    "type": "object",
    "title": "Sign-off",
    "properties": {
        "approved": {"const": True},
        "mood": {"enum": ["calm", "tense"], "description": "How it felt."},
        "checked": {"type": "boolean"},
        "note": {"type": "string", "maxLength": 80},
        "count": {"type": "integer", "minimum": 0},
        "score": {"type": "number", "exclusiveMaximum": 10},
    },
    "required": ["approved", "mood", "count"],
    "additionalProperties": False,
}


def green_form(owner: dict[str, Any] | None = OWNER) -> VerdictForm:
    schema = VerdictValidator(owner, None).branch_schema("GREEN")
    form = flat_form("GREEN", schema)
    assert form is not None
    return form


def field_named(form: VerdictForm, name: str) -> int:
    return [item.name for item in form.fields].index(name)


def test_a_flat_schema_gets_one_field_per_property_without_the_verdict() -> None:
    form = green_form()
    kinds = {item.name: item.kind for item in form.fields}
    assert kinds == {
        "approved": FieldKind.CONST,
        "mood": FieldKind.CHOICE,
        "checked": FieldKind.BOOLEAN,
        "note": FieldKind.STRING,
        "count": FieldKind.INTEGER,
        "score": FieldKind.NUMBER,
    }
    required = {item.name for item in form.fields if item.required}
    assert required == {"approved", "mood", "count"}
    hints = {item.name: item.hint for item in form.fields}
    assert hints["mood"] == "one of: calm, tense · How it felt."
    assert hints["count"] == "integer, ≥ 0" and hints["score"] == "number, < 10"
    assert hints["note"] == "text, at most 80 characters"
    assert form.fields[0].shown() == "true (fixed)"


def test_no_owner_schema_is_an_empty_form_that_submits_the_verdict() -> None:
    form = green_form(None)
    assert form.fields == [] and form.result() == {"verdict": "GREEN"}


@pytest.mark.parametrize(
    "owner",
    [
        {"type": "object", "properties": {"nested": {"type": "object"}}},
        {"type": "object", "properties": {"list": {"type": "array", "items": {"type": "string"}}}},
        {"type": "object", "properties": {"either": {"type": ["string", "null"]}}},
        {"type": "object", "properties": {"ref": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}}},
        {"type": "object", "properties": {"n": {"enum": [1, 2]}}},
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}}},
        {"type": "object", "properties": {"s": {"type": "string"}}, "minProperties": 1},
    ],
)
def test_anything_else_has_no_form(owner: dict[str, Any]) -> None:
    schema = VerdictValidator(owner, None).branch_schema("GREEN")
    assert flat_form("GREEN", schema) is None


def test_the_result_leaves_out_unset_and_empty_optional_fields() -> None:
    form = green_form()
    form.fields[field_named(form, "count")].text = "3"
    assert form.result() == {"verdict": "GREEN", "approved": True, "mood": "calm", "count": 3}


def test_numbers_are_parsed_or_refused_with_the_field_name() -> None:
    form = green_form()
    count = form.fields[field_named(form, "count")]
    score = form.fields[field_named(form, "score")]
    count.text = "2.5"
    with pytest.raises(FormError, match=r"^count: enter an integer\.$"):
        form.result()
    count.text = "-4"
    score.text = "nan"
    with pytest.raises(FormError, match=r"^score: enter a number\.$"):
        form.result()
    score.text = "2.5e1"
    assert form.result()["score"] == 25.0 and form.result()["count"] == -4
    score.text = "7"
    assert form.result()["score"] == 7 and isinstance(form.result()["score"], int)


def test_keys_move_between_fields_and_wrap() -> None:
    form = green_form()
    assert apply_key(form, "tab") and form.focus == 1
    assert apply_key(form, "up") and apply_key(form, "shift tab")
    assert form.focus == len(form.fields) - 1
    assert apply_key(form, "down") and form.focus == 0
    assert not apply_key(form, "x")  # a constant takes no keys
    assert not apply_key(form, "enter")


def test_booleans_cycle_through_unset_when_optional() -> None:
    form = green_form()
    form.focus = field_named(form, "checked")
    item = form.fields[form.focus]
    seen = []
    for _ in range(4):
        apply_key(form, " ")
        seen.append(item.flag)
    assert seen == [True, False, None, True]
    apply_key(form, "left")
    assert item.flag is None
    apply_key(form, "n")
    assert item.flag is False
    apply_key(form, "y")
    assert item.flag is True


def test_a_required_boolean_never_goes_back_to_unset() -> None:
    owner = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    form = green_form(owner)
    item = form.fields[0]
    assert item.flag is None
    values: list[bool | None] = []
    for _ in range(3):
        apply_key(form, "right")
        values.append(item.flag)
    assert values == [True, False, True]


def test_choices_cycle_and_an_optional_one_can_be_unset() -> None:
    form = green_form()
    form.focus = field_named(form, "mood")
    item = form.fields[form.focus]
    apply_key(form, "right")
    assert item.shown() == "tense"
    apply_key(form, " ")
    assert item.shown() == "calm"  # required: no unset state
    owner = {"type": "object", "properties": {"c": {"type": "string", "enum": ["a", "b"]}}}
    optional = green_form(owner)
    choice = optional.fields[0]
    assert choice.shown() == "(unset)"
    apply_key(optional, "left")
    assert choice.shown() == "b"
    apply_key(optional, "right")
    assert choice.shown() == "(unset)"
    assert optional.result() == {"verdict": "GREEN"}


def test_text_fields_take_typing_and_backspace() -> None:
    form = green_form()
    form.focus = field_named(form, "note")
    for key in ["h", "i", " ", "t", "f", "backspace"]:
        assert apply_key(form, key)
    assert form.fields[form.focus].text == "hi t"
    assert not apply_key(form, "ctrl x")


def test_the_editor_template_fills_constants_and_first_choices() -> None:
    schema = VerdictValidator(OWNER, None).branch_schema("GREEN")
    assert editor_template(schema) == {
        "approved": True,
        "mood": "calm",
        "checked": None,
        "note": "",
        "count": None,
        "score": None,
    }


def test_a_minimum_of_one_character_is_singular() -> None:
    """Issue 12: the hint said "at least 1 characters"."""

    def schema(low: int) -> dict[str, Any]:
        reason = {"type": "string", "minLength": low}
        return {"type": "object", "properties": {"reason": reason}}

    form = flat_form("RED", schema(1))
    assert form is not None and form.fields[0].hint == "text, at least 1 character"
    form = flat_form("RED", schema(2))
    assert form is not None and form.fields[0].hint == "text, at least 2 characters"
