"""The reviewer app's JSON fields edited in ``$VISUAL``/``$EDITOR``: a real editor process (a
shell script), so these live here and not with the rest of the app's tests in
tests/unit/test_review_tui_app.py, whose fake session and paced screen they reuse."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from artifactize.entrypoints.review_tui.app import ReviewApp
from tests.unit.test_review_tui_app import FakeSession, Step, request_view, run_app
from tests.unit.test_review_tui_app import session as session  # the fixture

pytestmark = pytest.mark.process


def test_fields_of_other_schemas_are_edited_as_json(session: FakeSession, tmp_path: Any) -> None:
    nested = {
        "type": "object",
        "properties": {"reason": {"type": "object"}},
        "required": ["reason"],
    }
    session.requests = {"run-a-1": request_view("run-a-1", fail_schema=nested)}
    seen = tmp_path / "template.json"
    script = f'cp "$0" {seen}; printf \'%s\' \'{{"reason": "see {{x}}"}}\' > "$0"'
    app = ReviewApp(
        session,
        "run-a-1",
        clock_text=lambda: "t",
        environment={"EDITOR": shlex.join(["sh", "-c", script])},
    )
    run_app(app, [Step(["s", "r"]), Step(["q"])])
    assert json.loads(seen.read_text()) == {"reason": None}
    assert session.submitted == [{"verdict": "RED", "reason": "see {x}"}]


def test_an_empty_edit_submits_nothing(session: FakeSession) -> None:
    nested = {"type": "object", "properties": {"reason": {"type": "array"}}}
    session.requests["run-a-1"] = request_view("run-a-1", fail_schema=nested)
    app = ReviewApp(
        session,
        "run-a-1",
        clock_text=lambda: "t",
        environment={"VISUAL": "sh -c ': > \"$0\"'", "EDITOR": "false"},
    )
    screen = run_app(app, [Step(["s", "r"]), Step(["q"])])
    assert screen.seen("The edited file was empty; nothing was submitted.")
    assert session.submitted == []
