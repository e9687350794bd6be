"""TOML parsing: non-JSON values, syntax error positions and the key locator."""

from __future__ import annotations

import pytest

from artifactize.domain.declarations.diagnostics import KeyProblems
from artifactize.domain.declarations.toml_source import (
    KeyLocator,
    TomlSyntaxError,
    parse_toml,
    reject_non_json_values,
)

DATE_MESSAGE = "TOML date/time values are not allowed (JSON has no equivalent); quote the value"
NON_FINITE_MESSAGE = "inf and nan are not allowed (JSON has no equivalent)"


def problems_of(text: str) -> list[tuple[str, str]]:
    problems = KeyProblems()
    reject_non_json_values(parse_toml(text), "", problems)
    return problems.items


# --- values without a JSON form -------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "1979-05-27T07:32:00Z",
        "1979-05-27T00:32:00-07:00",
        "1979-05-27T07:32:00",
        "1979-05-27 07:32:00",
        "1979-05-27",
        "07:32:00",
        "07:32:00.999",
    ],
)
def test_dates_and_times_are_refused_at_top_level(value: str) -> None:
    assert problems_of(f"when = {value}") == [("when", DATE_MESSAGE)]


@pytest.mark.parametrize("value", ["inf", "+inf", "-inf", "nan", "+nan", "-nan"])
def test_non_finite_floats_are_refused_at_top_level(value: str) -> None:
    assert problems_of(f"x = {value}") == [("x", NON_FINITE_MESSAGE)]


def test_values_in_arrays_carry_their_index() -> None:
    text = "a = [1, 1979-05-27, 2.5, nan]\nb = [[1], [inf]]"
    assert problems_of(text) == [
        ("a[1]", DATE_MESSAGE),
        ("a[3]", NON_FINITE_MESSAGE),
        ("b[1][0]", NON_FINITE_MESSAGE),
    ]


def test_values_in_a_nested_payload() -> None:
    text = """
[evals.review.payload]
instruction = "Check it."
due = 2024-01-01
limits = { low = -inf, items = [{ at = 12:00:00 }] }
"""
    assert problems_of(text) == [
        ("evals.review.payload.due", DATE_MESSAGE),
        ("evals.review.payload.limits.low", NON_FINITE_MESSAGE),
        ("evals.review.payload.limits.items[0].at", DATE_MESSAGE),
    ]


def test_values_in_a_schema() -> None:
    text = """
[evals.review.pass_schema]
type = "object"
properties.score = { type = "number", maximum = inf }
properties.when = { const = 1979-05-27 }
"""
    assert problems_of(text) == [
        ("evals.review.pass_schema.properties.score.maximum", NON_FINITE_MESSAGE),
        ("evals.review.pass_schema.properties.when.const", DATE_MESSAGE),
    ]


def test_values_in_arrays_of_tables_and_quoted_keys() -> None:
    text = '[[items]]\nx = 1\n[[items]]\n"odd key" = nan'
    assert problems_of(text) == [('items[1]."odd key"', NON_FINITE_MESSAGE)]


def test_ordinary_values_pass() -> None:
    text = 'a = 1.5\nb = "1979-05-27"\nc = "inf"\nd = [true, 0, -0.0, 1e308]\n[t]\ne = {}'
    assert problems_of(text) == []


def test_the_key_path_prefix_is_kept() -> None:
    problems = KeyProblems()
    reject_non_json_values({"x": float("nan")}, "evals.review.payload", problems)
    assert problems.items == [("evals.review.payload.x", NON_FINITE_MESSAGE)]


# --- syntax errors --------------------------------------------------------------------


def syntax_error(text: str) -> TomlSyntaxError:
    with pytest.raises(TomlSyntaxError) as info:
        parse_toml(text)
    return info.value


def test_syntax_error_carries_line_and_column() -> None:
    error = syntax_error('name = "x"\nb = @')
    assert (error.line, error.column) == (2, 5)
    assert error.message == "Invalid value"


def test_duplicate_table_error_has_a_position() -> None:
    error = syntax_error("[t]\nx = 1\n[t]")
    assert error.line == 3
    assert error.column is not None


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("a = ", 1, 5),
        ('name = "x"\nb = [1,', 2, 8),
        ('a = 1\ns = """abc\nde', 3, 3),
        ("a=1\na=2", 2, 4),
    ],
)
def test_errors_at_the_end_of_the_document_still_have_a_position(
    text: str, line: int, column: int
) -> None:
    error = syntax_error(text)
    assert (error.line, error.column) == (line, column)
    assert "end of document" not in error.message


def test_valid_toml_parses() -> None:
    assert parse_toml('name = "x"\n[evals.a]\ntitle = "t"') == {
        "name": "x",
        "evals": {"a": {"title": "t"}},
    }


# --- key locator ----------------------------------------------------------------------

SOURCE = """\
name = "x"
tags = ["a",
  "b"]

[views.agent_tools.lint]
description = \"\"\"
multi
line\"\"\"
protocol = "json"
input_schema = { type = "object", properties = { page = { type = "string" } } }
"quoted.key" = 1
'literal key' = 2

[evals.review]
profile.kind = "agent"
profile.timeout_ms = 5
payload.instruction = \"\"\"\\
Line one \\
line two.\"\"\"
title = "t \\" # not a comment"

[[items]]
x = 1
[[items]]
y = 2

[ spaced . "header" ]
z = '''
a ''' # trailing
w = [
  # comment
  { deep = 1 },
]
"""


@pytest.fixture(scope="module")
def locator() -> KeyLocator:
    parse_toml(SOURCE)  # the scanner only ever sees documents tomllib accepted
    return KeyLocator(SOURCE)


@pytest.mark.parametrize(
    ("key_path", "line"),
    [
        ("name", 1),
        ("tags", 2),
        ("tags[1]", 2),
        ("views.agent_tools.lint", 5),
        ("views.agent_tools.lint.description", 6),
        ("views.agent_tools.lint.protocol", 9),
        ("views.agent_tools.lint.input_schema", 10),
        ("views.agent_tools.lint.input_schema.properties.page.type", 10),
        ('views.agent_tools.lint."quoted.key"', 11),
        ('views.agent_tools.lint."literal key"', 12),
        ("evals.review", 14),
        ("evals.review.profile.kind", 15),
        ("evals.review.profile.timeout_ms", 16),
        ("evals.review.payload.instruction", 17),
        ("evals.review.title", 20),
        ("items", 22),
        ("items[0].x", 23),
        ("items[1].y", 25),
        ("spaced.header", 27),
        ("spaced.header.z", 28),
        ("spaced.header.w", 30),
        ("spaced.header.w[0].deep", 32),
    ],
)
def test_locator_finds_lines(locator: KeyLocator, key_path: str, line: int) -> None:
    assert locator.line_of(key_path) == line


@pytest.mark.parametrize(
    ("key_path", "line"),
    [
        ("views.agent_tools.lint.timeout_ms", 5),
        ("views.agent_tools.lint.input_schema.properties.page.minLength", 10),
        ("evals.review.pass_schema.type", 14),
        ("evals.review.payload.instruction.extra", 17),
        ("items[2].q", 22),
    ],
)
def test_locator_falls_back_to_the_longest_known_prefix(
    locator: KeyLocator, key_path: str, line: int
) -> None:
    assert locator.line_of(key_path) == line


def test_locator_returns_none_for_unknown_paths(locator: KeyLocator) -> None:
    assert locator.line_of("unknown") is None
    assert locator.line_of("unknown.deeper") is None
    assert locator.line_of("") is None


def test_locator_dotted_keys_at_top_level() -> None:
    text = 'evals.a.title = "t"\nevals.a.profile = { kind = "human" }\n'
    locator = KeyLocator(text)
    assert locator.line_of("evals.a.title") == 1
    assert locator.line_of("evals.a.profile.kind") == 2


def test_locator_counts_crlf_lines() -> None:
    text = 'a = 1\r\n[t]\r\nb = "x"\r\n'
    locator = KeyLocator(text)
    assert locator.line_of("t.b") == 3


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ('a = 1\nb = ["x",\n\n[t]\n', "Unclosed array or inline table (a table", 2, 5),
        ('a = 1\nb = ["x",\nc = 1\n', "Unclosed array or inline table (a table", 2, 5),
        ('a = "["\nb = [1, # ]\n2\n', "Unclosed array", 2, 5),
        ("[t]\nx = {a = 1\n", "Unclosed inline table", 2, 5),
        ('a = """x\n[\n"""\nb = [[1,2], [3\n', "Unclosed array", 4, 13),
        ("a = [1,\n 2,\n foo]\n", "Invalid value (inside the array or inline table opened", 3, 2),
    ],
)
def test_an_unclosed_array_is_located_where_it_opens(
    text: str, message: str, line: int, column: int
) -> None:
    """tomllib notices it later (the next table, key or the end); the opener is the mistake.
    Strings, multi-line strings and comments holding brackets are skipped."""
    error = syntax_error(text)
    assert error.message.startswith(message)
    assert (error.line, error.column) == (line, column)
