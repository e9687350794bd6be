"""What a person types for a Human action: reviewer IDs and ``request submit``'s fields."""

from __future__ import annotations

import json

import pytest

from artifactize.domain.reviews.human.reviewers import (
    INVALID_REVIEWER,
    NO_DEFAULT_REVIEWER,
    NO_DEFAULT_REVIEWER_WINDOWS,
    REVIEWER_MAX_BYTES,
    ReviewerError,
    check_reviewer,
    default_reviewer,
)
from artifactize.domain.reviews.human.submission import (
    FIELDS_NOT_OBJECT,
    FIELDS_NOT_UTF8,
    FIELDS_TOO_LARGE,
    HUMAN_FIELDS_MAX_BYTES,
    VERDICT_IN_FIELDS,
    FieldsError,
    human_result,
)

# --- reviewers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["alice", "a", "x" * REVIEWER_MAX_BYTES, "é" * (REVIEWER_MAX_BYTES // 2), " bob "]
)
def test_valid_reviewer_ids(name: str) -> None:
    assert check_reviewer(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        "   ",
        "x" * (REVIEWER_MAX_BYTES + 1),
        "é" * (REVIEWER_MAX_BYTES // 2) + "x",  # 201 bytes, 101 characters
        "a\tb",
        "a\nb",
        "bell\x07",
        "del\x7f",
        "c1\x85",
    ],
)
def test_invalid_reviewer_ids(name: str) -> None:
    with pytest.raises(ReviewerError) as info:
        check_reviewer(name)
    assert info.value.message == INVALID_REVIEWER


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({"USER": "alice", "USERNAME": "win"}, "alice"),
        ({"USERNAME": "win"}, "win"),
        ({"USER": "", "USERNAME": "win"}, "win"),
    ],
)
def test_default_reviewer_on_windows_falls_back_to_username(
    environment: dict[str, str], expected: str
) -> None:
    assert default_reviewer(environment, windows=True) == expected


def test_default_reviewer_elsewhere_is_user_only() -> None:
    assert default_reviewer({"USER": "alice", "USERNAME": "win"}) == "alice"
    with pytest.raises(ReviewerError) as info:
        default_reviewer({"USERNAME": "win"})
    assert info.value.message == NO_DEFAULT_REVIEWER


def test_no_default_reviewer() -> None:
    with pytest.raises(ReviewerError) as info:
        default_reviewer({"USER": "", "HOME": "/home/x"})
    assert info.value.message == NO_DEFAULT_REVIEWER
    with pytest.raises(ReviewerError) as info:
        default_reviewer({"USER": "", "USERNAME": ""}, windows=True)
    assert info.value.message == NO_DEFAULT_REVIEWER_WINDOWS


def test_an_invalid_user_variable_is_refused() -> None:
    with pytest.raises(ReviewerError, match="reviewer id of 1–200 bytes"):
        default_reviewer({"USER": "a\x1bb"})


# --- submitted fields ----------------------------------------------------------------------


def fields_of_size(size: int) -> str:
    """A JSON object of exactly ``size`` UTF-8 bytes."""
    empty = len('{"note":""}')
    return json.dumps({"note": "n" * (size - empty)}, separators=(",", ":"))


def refusal(verdict: str, fields: str | bytes | None) -> str:
    with pytest.raises(FieldsError) as info:
        human_result(verdict, fields)
    return info.value.message


def test_the_verdict_is_inserted_and_fields_default_to_none() -> None:
    assert human_result("RED", '{"reason": "typo"}') == {"verdict": "RED", "reason": "typo"}
    assert human_result("GREEN", None) == {"verdict": "GREEN"}


def test_fields_at_the_limit_and_one_past() -> None:
    at_limit = fields_of_size(HUMAN_FIELDS_MAX_BYTES)
    assert len(at_limit.encode()) == HUMAN_FIELDS_MAX_BYTES
    assert human_result("GREEN", at_limit)["verdict"] == "GREEN"
    past = fields_of_size(HUMAN_FIELDS_MAX_BYTES + 1)
    assert refusal("GREEN", past) == FIELDS_TOO_LARGE
    assert refusal("GREEN", past.encode()) == FIELDS_TOO_LARGE
    assert FIELDS_TOO_LARGE == "Human fields exceed 256000 bytes."


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("[1]", FIELDS_NOT_OBJECT),
        ('"text"', FIELDS_NOT_OBJECT),
        ("null", FIELDS_NOT_OBJECT),
        ('{"verdict": "GREEN"}', VERDICT_IN_FIELDS),
        (b"\xff{}", FIELDS_NOT_UTF8),
    ],
)
def test_fields_must_be_an_object_without_a_verdict(fields: str | bytes, message: str) -> None:
    assert refusal("GREEN", fields) == message


@pytest.mark.parametrize("fields", ["{", '{"a": NaN}', "{} {}"])
def test_fields_must_be_json(fields: str) -> None:
    assert refusal("GREEN", fields).startswith("Human fields are not valid JSON: ")


@pytest.mark.parametrize("verdict", ["gren", "BLUE", ""])
def test_the_verdict_is_green_or_red(verdict: str) -> None:
    assert refusal(verdict, None) == f"--verdict must be GREEN or RED, got {json.dumps(verdict)}."


@pytest.mark.parametrize(("verdict", "saved"), [("green", "GREEN"), ("Red", "RED")])
def test_the_verdict_is_read_in_any_case(verdict: str, saved: str) -> None:
    """Issue 12 changed this: `--verdict green` used to be refused for its case."""
    assert human_result(verdict, None) == {"verdict": saved}
