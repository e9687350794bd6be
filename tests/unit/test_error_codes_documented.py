"""Every error code a review can end with is documented: ``docs/error-codes.md`` has one row
per ``ErrorCode`` member and no other, so a new code cannot ship unlisted (a review once
ended ``AGENT_ERROR``, which the docs did not name)."""

from __future__ import annotations

import re
from pathlib import Path

from artifactize.ports.statuses import ErrorCode

DOC = Path(__file__).resolve().parents[2] / "docs" / "error-codes.md"
ROW = re.compile(r"^\| `([A-Z_]+)` \|", re.MULTILINE)


def documented() -> list[str]:
    return ROW.findall(DOC.read_text(encoding="utf-8"))


def test_every_error_code_has_exactly_one_row() -> None:
    rows = documented()
    assert len(rows) == len(set(rows)), "a code has two rows"
    unlisted = {code.value for code in ErrorCode} - set(rows)
    assert not unlisted, f"error codes missing from {DOC.name}: {sorted(unlisted)}"


def test_the_row_pattern_reads_the_table() -> None:
    # The check above is only as good as the parse: the table's first and last rows.
    rows = documented()
    assert rows[0] == "AUTHENTICATION" and rows[-1] == "SUPERSEDED"
    assert len(rows) >= len(ErrorCode)
