"""Pure helpers of the reviewer: the tool list, command lines and the waiting list."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from artifactize.entrypoints.review_tui.tool_list import (
    command_key,
    is_resolved,
    recorded_tools,
    resolved_line,
    shell_quote,
)
from artifactize.entrypoints.review_tui.waiting import (
    WaitingRow,
    age_text,
    claim_text,
    read_only_reason,
    table,
)

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
REQUEST = {
    "humanDefinition": {
        "repo": "/r",
        "artifacts": {
            "doc": {
                "declaration": {
                    "humanTools": [
                        {
                            "name": "show",
                            "description": "Show {artifactName}.",
                            "kind": "output",
                            "command": "cat",
                            "args": ["{artifactPath}/notes.txt", "it's"],
                            "timeoutMs": 120000,
                        },
                        {
                            "name": "peek",
                            "builtin": "read",
                            "args": ["notes.txt"],
                            "description": None,
                            "kind": "output",
                        },
                    ]
                }
            },
            "app": {"declaration": {"humanTools": []}},
        },
    }
}


def test_shell_quote_leaves_safe_words_and_quotes_the_rest() -> None:
    assert shell_quote(["cat", "{artifactPath}/a.txt", "--x=1,2"]) == (
        "cat {artifactPath}/a.txt --x=1,2"
    )
    assert shell_quote(["echo", "two words", "it's", ""]) == ("echo 'two words' 'it'\"'\"'s' ''")


def test_recorded_tools_are_named_published_and_sorted() -> None:
    tools = recorded_tools(REQUEST)
    assert [tool.name for tool in tools] == ["peek_doc", "show_doc"]
    peek, show = tools
    assert show.operation == "show" and show.artifact == "doc" and not show.builtin
    assert show.description == "Show doc."
    assert show.declared == "cat {artifactPath}/notes.txt 'it'\"'\"'s'"
    assert peek.builtin and peek.declared == "read notes.txt"
    assert peek.description == "Built-in read notes.txt"
    assert recorded_tools({"humanDefinition": None}) == []


def test_resolved_command_lines() -> None:
    command = {"repository": "/r", "program": "/bin/cat", "argv": ["a b"], "cwd": "/r/doc"}
    assert resolved_line(command) == "/bin/cat 'a b'"
    assert is_resolved(command) and not is_resolved({"error": "gone"}) and not is_resolved(None)
    assert command_key(command) == command_key(dict(command))
    assert command_key(command) != command_key({**command, "cwd": "/elsewhere"})


@pytest.mark.parametrize(
    ("created", "age"),
    [
        ("2026-01-02T03:04:00.000000000Z", "5s"),
        ("2026-01-02T02:50:05.123456789Z", "13m"),  # 13m59.9s: whole units
        ("2026-01-02T02:50:05.000000000Z", "14m"),
        ("2026-01-01T23:04:05.000000000Z", "4h"),
        ("2025-12-30T03:04:05.000000000Z", "3d"),
        ("2026-01-02T03:04:05.000000000Z", "0s"),
        ("soon", "?"),
        (None, "?"),
    ],
)
def test_age_text(created: str | None, age: str) -> None:
    assert age_text(created, NOW) == age


def test_claims_and_read_only_reasons() -> None:
    waiting = {"status": "WAITING_HUMAN", "claim": None}
    mine = {"status": "WAITING_HUMAN", "claim": {"reviewer": "alice"}}
    theirs = {"status": "WAITING_HUMAN", "claim": {"reviewer": "bob"}}
    assert claim_text(waiting, "alice") == "-"
    assert claim_text(mine, "alice") == "alice (you)"
    assert claim_text(theirs, "alice") == "bob"
    assert read_only_reason(waiting, "alice") is None
    assert read_only_reason(mine, "alice") is None
    assert read_only_reason(theirs, "alice") == "Claimed by bob; read-only for alice."
    settled = {"status": "GREEN", "claim": None}
    assert read_only_reason(settled, "alice") == (
        "The request is GREEN; there is nothing to review."
    )


def test_the_table_aligns_columns() -> None:
    rows = [
        WaitingRow("run-a-1", "doc/signoff", "-", "5s", "/r"),
        WaitingRow("run-b-10", "x/y", "alice (you)", "3h", "/repo"),
    ]
    assert table(rows) == [
        "EVAL         REQUEST   CLAIM        WAITING  REPO",
        "doc/signoff  run-a-1   -            5s       /r",
        "x/y          run-b-10  alice (you)  3h       /repo",
    ]
