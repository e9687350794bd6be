"""The template languages of a declaration: descriptions, instructions, operands, plain argv."""

from __future__ import annotations

import pytest

from artifactize.domain.declarations.templates import (
    ARTIFACT_NAME_PLACEHOLDER,
    DESCRIPTION_MAX_UTF16,
    Operand,
    PlainPart,
    TemplateError,
    description_problem,
    instruction_references,
    parse_human_operand,
    parse_operand,
    parse_plain_template,
    render_description,
)

ASTRAL = "\N{GRINNING FACE}"

# --- descriptions ---------------------------------------------------------------------


def test_description_limit_constant() -> None:
    assert DESCRIPTION_MAX_UTF16 == 4000


@pytest.mark.parametrize("text", ["", " ", "\n\t ", "\u3000"])
def test_description_must_not_be_blank(text: str) -> None:
    assert description_problem(text) == "must not be blank"


def test_description_at_the_limit_passes() -> None:
    assert description_problem("a" * DESCRIPTION_MAX_UTF16) is None


def test_description_one_past_the_limit_fails() -> None:
    problem = description_problem("a" * (DESCRIPTION_MAX_UTF16 + 1))
    assert problem == (
        f"is {DESCRIPTION_MAX_UTF16 + 1} UTF-16 code units long; "
        f"the limit is {DESCRIPTION_MAX_UTF16}"
    )


def test_description_built_from_astral_characters_counts_utf16_units() -> None:
    text = ASTRAL * (DESCRIPTION_MAX_UTF16 // 2)
    assert description_problem(text) is None
    assert description_problem(text + "a") is not None


def test_description_limit_applies_to_the_template_not_the_rendering() -> None:
    text = ARTIFACT_NAME_PLACEHOLDER + "a" * (
        DESCRIPTION_MAX_UTF16 - len(ARTIFACT_NAME_PLACEHOLDER)
    )
    assert description_problem(text) is None
    assert description_problem(text + "a") is not None


def test_description_supports_artifact_name_only() -> None:
    assert description_problem("Search {artifactName}.") is None
    assert description_problem("{artifactName} and {artifactName}") is None
    problem = description_problem("Search {other}.")
    assert problem == "supports only the {artifactName} placeholder, found `{other}`"
    problem = description_problem("Search {artifactPath}.")
    assert problem is not None and "`{artifactPath}`" in problem


@pytest.mark.parametrize(
    "text", ["a { b", "a } b", "{", "}", "{artifactName", "artifactName}", "{{artifactName}}"]
)
def test_description_refuses_stray_braces(text: str) -> None:
    problem = description_problem(text)
    assert problem is not None and problem.startswith("supports only the {artifactName}")


def test_description_placeholder_is_case_sensitive() -> None:
    assert description_problem("{artifactname}") is not None
    assert description_problem("{ artifactName }") is not None


def test_render_description_replaces_every_placeholder() -> None:
    assert render_description("Read {artifactName}: {artifactName}.", "spec") == "Read spec: spec."
    assert render_description("No placeholder.", "spec") == "No placeholder."


# --- instruction references -----------------------------------------------------------


def test_instruction_references_are_found_in_order() -> None:
    text = "Compare {api-guide} with {glossary}, then {api-guide} again."
    assert instruction_references(text) == ["api-guide", "glossary", "api-guide"]


def test_instruction_reference_at_the_edges_and_adjacent() -> None:
    assert instruction_references("{a}") == ["a"]
    assert instruction_references("{a}{b}") == ["a", "b"]
    assert instruction_references("x{a}y") == ["a"]


@pytest.mark.parametrize(
    "text",
    [
        "${VAR}",
        "\\{x}",
        "{{x}}",
        '{"a":1}',
        "{not valid}",
        "{}",
        "{-x}",
        "{a.b}",
        "{ a }",
        "{a",
        "a}",
        "{{x}",
        "{x}}",
        "{'x'}",
        "{" + "a" * 65 + "}",
    ],
)
def test_literal_braces_stay_literal(text: str) -> None:
    assert instruction_references(text) == []


def test_identifier_of_64_characters_is_a_reference() -> None:
    name = "a" * 64
    assert instruction_references("{" + name + "}") == [name]


def test_literal_forms_do_not_hide_real_references() -> None:
    text = 'Use ${HOME}, {{literal}}, {"k": 1} and {spec}.'
    assert instruction_references(text) == ["spec"]


# --- operands -------------------------------------------------------------------------


def test_whole_operand() -> None:
    assert parse_operand("{spec}") == Operand(name="spec", flag="", suffix="")


def test_operand_with_a_suffix() -> None:
    assert parse_operand("{spec}/a/b") == Operand(name="spec", flag="", suffix="a/b")


def test_operand_with_a_flag() -> None:
    assert parse_operand("--flag={spec}/x") == Operand(name="spec", flag="--flag=", suffix="x")
    assert parse_operand("--out={spec}") == Operand(name="spec", flag="--out=", suffix="")
    assert parse_operand("-f={spec}") == Operand(name="spec", flag="-f=", suffix="")


@pytest.mark.parametrize(
    "arg",
    ["html", "", "--all", "--x=1", "x{a}", "{a}x", "a/{b}", "{{a}}", "{a}{b}", "--={a}", "$HOME"],
)
def test_literal_arguments(arg: str) -> None:
    assert parse_operand(arg) is None


@pytest.mark.parametrize("arg", ["{}", "{not valid}", "{-a}", "{a.b}", "--f={_x}", "{é}"])
def test_invalid_reference_names_are_errors_not_literals(arg: str) -> None:
    with pytest.raises(TemplateError, match="is not a valid reference name"):
        parse_operand(arg)


@pytest.mark.parametrize(
    "arg", ["{a}/..", "{a}/../x", "{a}/x/..", "{a}/.", "{a}//x", "{a}/x/", "{a}/c:x", "{a}/x\\y"]
)
def test_bad_suffixes_are_refused(arg: str) -> None:
    with pytest.raises(TemplateError, match="safe relative logical path"):
        parse_operand(arg)


def test_empty_suffix_is_refused() -> None:
    with pytest.raises(TemplateError, match="safe relative logical path"):
        parse_operand("{a}/")


@pytest.mark.parametrize("arg", ["{a}/{b}", "{a}/x}", "{a}/x{", "--f={a}/{b}/c"])
def test_braces_in_a_suffix_are_refused(arg: str) -> None:
    with pytest.raises(TemplateError):
        parse_operand(arg)


# --- Human operands -------------------------------------------------------------------


def test_human_artifact_path_placeholder() -> None:
    assert parse_human_operand("{artifactPath}") == Operand("artifactPath", "", "")
    assert parse_human_operand("{artifactPath}/pages/index.md") == Operand(
        "artifactPath", "", "pages/index.md"
    )
    assert parse_human_operand("--file={artifactPath}") == Operand("artifactPath", "--file=", "")


def test_human_name_operand() -> None:
    assert parse_human_operand("{glossary}/terms.csv") == Operand("glossary", "", "terms.csv")


@pytest.mark.parametrize("arg", ["html", "--verbose", "a/b", ""])
def test_human_literal_arguments(arg: str) -> None:
    assert parse_human_operand(arg) is None


@pytest.mark.parametrize(
    "arg",
    [
        "{a}{b}",
        "{a}/{b}",
        "{artifactPath}/{artifactPath}",
        "{",
        "}",
        "a}",
        "{{a}}",
        "x{a}",
        "{a}x",
        "{artifactPath}/x}",
        "{not valid}",
        "{}",
        "{a}/..",
    ],
)
def test_human_arguments_refuse_other_braces(arg: str) -> None:
    with pytest.raises(TemplateError) as info:
        parse_human_operand(arg)
    assert str(info.value) == (
        "Human arguments support only {artifactPath} or {name}[/path] scope placeholders "
        "(optionally --flag=)"
    )


# --- plain templates ------------------------------------------------------------------


def test_whole_token_placeholder() -> None:
    assert parse_plain_template("{q}") == (PlainPart("q", True),)


def test_embedded_placeholder() -> None:
    assert parse_plain_template("--q={q}") == (PlainPart("--q=", False), PlainPart("q", True))


def test_several_placeholders_in_one_token() -> None:
    assert parse_plain_template("x{a}y{b}") == (
        PlainPart("x", False),
        PlainPart("a", True),
        PlainPart("y", False),
        PlainPart("b", True),
    )


def test_literal_token() -> None:
    assert parse_plain_template("--all") == (PlainPart("--all", False),)
    assert parse_plain_template("") == ()


def test_doubled_braces_are_escapes() -> None:
    assert parse_plain_template("{{") == (PlainPart("{", False),)
    assert parse_plain_template("}}") == (PlainPart("}", False),)
    assert parse_plain_template("{{q}}") == (PlainPart("{q}", False),)
    assert parse_plain_template("a{{{q}}}b") == (
        PlainPart("a{", False),
        PlainPart("q", True),
        PlainPart("}b", False),
    )


def test_placeholder_names_are_taken_verbatim() -> None:
    # Placeholder names are checked against input_schema.properties, not the identifier rule.
    assert parse_plain_template("{a b}") == (PlainPart("a b", True),)


@pytest.mark.parametrize("arg", ["{", "{q", "x{q", "{{{q"])
def test_unclosed_placeholder(arg: str) -> None:
    with pytest.raises(TemplateError) as info:
        parse_plain_template(arg)
    assert str(info.value) == "Unclosed plain tool placeholder."


@pytest.mark.parametrize("arg", ["{}", "x{}y", "{a{b}"])
def test_invalid_placeholder(arg: str) -> None:
    with pytest.raises(TemplateError) as info:
        parse_plain_template(arg)
    assert str(info.value) == "Invalid plain tool placeholder."


@pytest.mark.parametrize("arg", ["}", "a}", "{q}}", "}}}"])
def test_unmatched_closing_brace(arg: str) -> None:
    with pytest.raises(TemplateError) as info:
        parse_plain_template(arg)
    assert str(info.value) == "Unmatched plain tool closing brace."
