"""Messages that help, and list filters, through the real CLI (issue 12, Build 8 and 9).

Each message a first-hour user met is checked as they would meet it: claiming first, an
unknown tool, no ``USER``, an unclosed TOML array, a minimum of one character, the usage
line of ``request submit``, usage errors, ``--verdict green`` and a sidecar named without
its extension. Then ``request list --status/--waiting/--limit`` and ``run list``'s header.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from artifactize.domain.reviews.schema_messages import describe
from tests.integration.test_human_reviews import (  # noqa: F401  (an autouse fixture)
    GREEN_FIELDS,
    Fixture,
    no_process_left_behind,
)


@pytest.fixture
def fx(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Fixture:
    """Fixture F of test_human_reviews, without artifactize settings."""
    for key in [k for k in os.environ if k.startswith("ARTIFACTIZE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ARTIFACTIZE_REMOTE", "off")
    monkeypatch.setenv("USER", "alice")
    return Fixture(tmp_path, capsys)


# --- Build 8: messages ----------------------------------------------------------------------


def test_acting_before_claiming_names_the_claim_command(fx: Fixture) -> None:
    request_id = fx.waiting()
    outcome = fx.cli("request", "tool", request_id, "show_doc")
    assert (outcome.code, outcome.error) == (
        2,
        f"Request {request_id} is not claimed: claim it first with "
        f"`artifactize request claim {request_id}`.",
    )


def test_an_unknown_tool_lists_the_valid_ones(fx: Fixture) -> None:
    request_id = fx.claimed()
    outcome = fx.cli("request", "tool", request_id, "shw_doc")
    assert outcome.code == 2
    assert outcome.error == (
        "Unknown Human tool `shw_doc`; this request's Human tools: fail_doc, show_doc."
    )


def test_without_user_the_message_names_reviewer(
    fx: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    request_id = fx.waiting()
    monkeypatch.delenv("USER")
    monkeypatch.delenv("USERNAME", raising=False)
    outcome = fx.cli("request", "claim", request_id)
    assert (outcome.code, outcome.error) == (
        2,
        "No reviewer id: set USER or pass --reviewer NAME.",
    )
    assert fx.cli("request", "claim", request_id, "--reviewer", "alice").code == 0


def test_an_unclosed_array_is_reported_where_it_opens(fx: Fixture) -> None:
    (fx.repo / "app" / "index.artf").write_text(
        'name = "app"\ntags = ["a"]\nextra_tags = ["b",\n\n[evals.check]\ntitle = "x"\n',
        encoding="utf-8",
    )
    outcome = fx.cli("config", "check", json_output=False)
    assert outcome.code == 2
    assert (
        "error: app/index.artf:3: invalid TOML at column 14: Unclosed array or inline table "
        "(a table or key follows at line 5)"
    ) in outcome.err


def test_a_minimum_of_one_is_singular() -> None:
    class Failure:  # the fields of a jsonschema ValidationError that describe() reads
        validator = "minLength"
        validator_value = 1

    assert describe(Failure()) == "must be at least 1 character long"
    Failure.validator_value = 2
    assert describe(Failure()) == "must be at least 2 characters long"
    Failure.validator, Failure.validator_value = "minItems", 1
    assert describe(Failure()) == "must have at least 1 item"


def test_usage_lines_name_arguments_in_upper_case_and_are_not_errors(fx: Fixture) -> None:
    helped = fx.cli("request", "submit", "--help", json_output=False)
    assert helped.code == 0
    assert "Usage: artifactize request submit [OPTIONS] REQUEST_ID\n" in helped.out
    assert "{request_id}" not in helped.out
    missing = fx.cli("request", "submit", json_output=False)
    assert missing.code == 2
    assert missing.err == (
        "error: Missing argument 'REQUEST_ID'.\n"
        "Usage: artifactize request submit [OPTIONS] REQUEST_ID\n"
        "Try 'artifactize request submit --help' for help.\n"
    )
    assert "error: Usage" not in fx.cli("request", "frob", json_output=False).err


def test_verdict_is_accepted_in_any_case(fx: Fixture) -> None:
    request_id = fx.claimed()
    outcome = fx.submit(request_id, "--verdict", "green", "--fields", GREEN_FIELDS)
    assert outcome.code == 0, outcome
    assert outcome.data["status"] == "GREEN" and outcome.data["result"]["verdict"] == "GREEN"
    refused = fx.submit(request_id, "--verdict", "yellow")
    assert (refused.code, refused.error) == (2, '--verdict must be GREEN or RED, got "yellow".')


def test_a_sidecar_without_the_extension_suggests_the_whole_name(fx: Fixture) -> None:
    (fx.repo / "doc" / "diagram.png").write_bytes(b"\x89PNG")
    (fx.repo / "doc" / "diagram.artf").write_text('name = "diagram"\n', encoding="utf-8")
    outcome = fx.cli("config", "check", json_output=False)
    assert outcome.code == 2
    assert (
        "doc/diagram.artf: declares the file 'diagram', which does not exist; a sidecar is "
        "named after the whole file name: rename diagram.artf to diagram.png.artf"
    ) in outcome.err


# --- Build 9: filters -----------------------------------------------------------------------


def test_request_list_filters_by_status_waiting_and_limit(fx: Fixture) -> None:
    first = fx.waiting()  # doc/signoff waits; app/check waits on it (WAIT_DEPENDENCY)
    fx.cli("verify", "--all")  # a second Run: its sign-off follows the first
    everything = fx.cli("request", "list").data
    assert len(everything) == 4
    waiting = fx.cli("request", "list", "--waiting").data
    assert [r["status"] for r in waiting] == ["WAITING_HUMAN", "WAITING_HUMAN"]
    assert fx.cli("request", "list", "--status", "WAITING_HUMAN").data == waiting
    both = fx.cli("request", "list", "--status", "wait_dependency,WAITING_HUMAN").data
    assert len(both) == 4
    limited = fx.cli("request", "list", "--waiting", "--limit", "1").data
    assert [r["id"] for r in limited] == [waiting[0]["id"]] and first != limited[0]["id"]
    assert len(fx.cli("request", "list", "--limit", "4").data) == 4  # at the count
    assert fx.cli("request", "list", "--limit", "0").code == 2
    unknown = fx.cli("request", "list", "--status", "DONE")
    assert unknown.code == 2 and unknown.error.startswith("--status: unknown status DONE; one of")
    both_given = fx.cli("request", "list", "--status", "GREEN", "--waiting")
    assert both_given.code == 2 and "not both" in both_given.error
    text = fx.cli("request", "list", "--status", "GREEN", json_output=False)
    assert (text.code, text.out) == (0, "No requests.\n")


def test_run_list_has_a_header_row_and_a_limit(fx: Fixture) -> None:
    fx.waiting()
    fx.cli("verify", "--all")
    text = fx.cli("run", "list", json_output=False)
    header, *rows = text.out.splitlines()
    assert header.split() == ["RUN", "STATUS", "CREATED", "COUNTS"] and len(rows) == 2
    assert header.index("STATUS") == rows[0].index("INCOMPLETE")
    limited = fx.cli("run", "list", "--limit", "1", json_output=False).out.splitlines()
    assert limited[0] == header and len(limited) == 2


def test_request_list_prints_runs_page_by_page_as_one_list(fx: Fixture) -> None:
    """Written a Run at a time, the answers are still one list: one header, every Run's rows
    newest Run first, a limit that crosses a Run, ``--json`` one array."""
    fx.waiting()
    fx.cli("verify", "--all")
    everything = fx.cli("request", "list").data
    runs = list(dict.fromkeys(r["runId"] for r in everything))
    assert len(runs) == 2 and len(everything) == 4
    text = fx.cli("request", "list", json_output=False).out.splitlines()
    assert text[0].split() == ["REQUEST", "RUN", "EVAL", "STATUS", "REVIEWER"]
    assert [line.split("\t")[0] for line in text[1:]] == [r["id"] for r in everything]
    crossing = fx.cli("request", "list", "--limit", "3").data
    assert crossing == everything[:3] and {r["runId"] for r in crossing} == set(runs)
    ids = fx.cli("request", "list", "--ids", json_output=False).out
    assert ids == "".join(f"{r['id']}\n" for r in everything)


def test_request_list_ids_prints_only_ids_for_scripts(fx: Fixture) -> None:
    request_id = fx.waiting()
    assert fx.cli("request", "list", "--waiting", "--ids", json_output=False).out == (
        f"{request_id}\n"
    )
    assert fx.cli("request", "list", "--status", "GREEN", "--ids", json_output=False).out == ""
