"""What changed since the last verdict (domain/reviews/human/viewing.py), and the verdict
form's placing of the validator's messages (entrypoints/web/verdict_form.py)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from artifactize.domain.reviews.human.viewing import (
    ADDED,
    MODIFIED,
    REMOVED,
    changed_files,
    since_last_verdict,
)
from artifactize.domain.reviews.verdicts import InvalidVerdict, VerdictValidator
from artifactize.entrypoints.web import verdict_form
from artifactize.kernel.document_codec import (
    execution_from_json,
    request_from_json,
)
from artifactize.ports.ids import EvalId, ExecutionId, RequestId, ReuseKey, RunId
from artifactize.ports.state import ExecutionRecord, RequestRecord
from artifactize.ports.statuses import ExecutionStatus, RequestStatus


def test_changed_files_names_added_changed_and_removed_paths_in_order() -> None:
    before = {"a.txt": "01", "b.txt": "02", "c.txt": "03"}
    after = {"a.txt": "01", "b.txt": "09", "d.txt": "04"}
    assert changed_files(before, after) == (
        ("b.txt", MODIFIED),
        ("c.txt", REMOVED),
        ("d.txt", ADDED),
    )
    assert changed_files(before, before) == ()
    assert changed_files(None, after) is None and changed_files(before, None) is None


def _record(ident: str, status: str, data: dict[str, Any]) -> ExecutionRecord:
    return ExecutionRecord(
        id=ExecutionId(ident),
        key=ReuseKey(f"key-{ident}"),
        eval_def_hash="h",
        status=ExecutionStatus(status),
        owner_pid=0,
        owner_start_time=0.0,
        backend=None,
        completed_at="2026-01-01T00:00:00.000000000Z",
        data=execution_from_json({"evalId": "doc/signoff", **data}),
    )


class _State:
    def __init__(self, records: list[ExecutionRecord]) -> None:
        self.records = records
        self.asked: list[list[str]] = []

    def latest_records_of(self, eval_ids: Collection[str]) -> list[ExecutionRecord]:
        """Every record, whatever was asked (the caller must still pick its eval's)."""
        self.asked.append(sorted(eval_ids))
        return list(self.records)


def _request(manifest: dict[str, str] | None, execution: str = "mine") -> RequestRecord:
    data: dict[str, Any] = {"fileManifest": manifest}
    return RequestRecord(
        id=RequestId("r"),
        run_id=RunId("run"),
        eval_id=EvalId("doc/signoff"),
        ordinal=1,
        execution_id=ExecutionId(execution),
        status=RequestStatus.WAITING_HUMAN,
        data=request_from_json(data),
    )


def test_an_older_record_without_a_manifest_is_not_recorded() -> None:
    old = _record("old", "GREEN", {})  # saved before manifests were
    since = since_last_verdict(_State([old]), _request({"a.txt": "01"}))  # type: ignore[arg-type]
    assert since.verdict is old and since.changes is None


def test_the_last_verdict_skips_errors_other_evals_and_the_request_itself() -> None:
    records = [
        _record("mine", "GREEN", {"fileManifest": {}}),
        _record("error", "ERROR", {"fileManifest": {}}),
        _record("other", "GREEN", {"evalId": "doc/other", "fileManifest": {}}),
        _record("last", "RED", {"fileManifest": {"a.txt": "00"}}),
    ]
    state = _State(records)
    since = since_last_verdict(state, _request({"a.txt": "01"}))  # type: ignore[arg-type]
    assert since.verdict is records[3] and since.changes == (("a.txt", MODIFIED),)
    assert state.asked == [["doc/signoff"]]  # its eval's records only, not every key's
    none = since_last_verdict(_State([]), _request({}))  # type: ignore[arg-type]
    assert none.verdict is None


def _message(schema: dict[str, Any], value: dict[str, Any]) -> str:
    try:
        VerdictValidator(schema, None).validate(value)
    except InvalidVerdict as exc:
        return exc.message
    raise AssertionError("valid")


def test_the_validator_lines_land_at_the_fields_they_name() -> None:
    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer", "minimum": 1}, "note": {"type": "string"}},
        "required": ["score", "note"],
    }
    view = {"humanDefinition": {"eval": {"passSchema": schema}}}
    choice = verdict_form.choices(view)["GREEN"]
    message = _message(schema, {"verdict": "GREEN", "score": 0, "extra": 1})
    general = verdict_form.place_errors(choice, message)
    assert choice.errors["score"] == "must be >= 1"
    assert "note" in choice.errors and "required properties" in choice.errors["note"]
    assert general[0].startswith("schema_mismatch") and any('"extra"' in g for g in general)


def test_a_schema_without_a_form_takes_json_and_its_errors() -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array"}}}
    view = {"humanDefinition": {"eval": {"passSchema": schema}}}
    choice = verdict_form.choices(view)["GREEN"]
    assert choice.form is None and '"items": null' in choice.json_text
    verdict_form.fill(choice, {"GREEN-json": "[1"})
    assert verdict_form.result(choice) is None and "not JSON" in choice.errors["json"]
    verdict_form.fill(choice, {"GREEN-json": '{"items": [1]}'})
    choice.errors.clear()
    assert verdict_form.result(choice) == {"items": [1], "verdict": "GREEN"}


ARRAYS = {
    "type": "object",
    "properties": {
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "scores": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "flags": {"type": "array", "items": {"type": "boolean"}},
        "kinds": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True},
        "note": {"type": "string"},
    },
    "required": ["tags"],
}


def _arrays() -> verdict_form.VerdictChoice:
    view = {"humanDefinition": {"eval": {"passSchema": ARRAYS}}}
    return verdict_form.choices(view)["GREEN"]


def test_arrays_of_strings_numbers_booleans_and_choices_are_one_item_a_line() -> None:
    choice = _arrays()
    assert choice.form is not None and choice.order == ["tags", "scores", "flags", "kinds", "note"]
    assert set(choice.arrays) == {"tags", "scores", "flags", "kinds"}
    assert choice.arrays["tags"].hint.startswith("a list, one item a line, at most 2")
    assert "no repeats" in choice.arrays["kinds"].hint
    posted = {
        "GREEN-tags": "first\n\n  second  \n",
        "GREEN-scores": "1\n-2",
        "GREEN-flags": "true\nfalse",
        "GREEN-kinds": "",
        "GREEN-note": "ok",
    }
    verdict_form.fill(choice, posted)
    assert verdict_form.result(choice) == {
        "verdict": "GREEN",
        "tags": ["first", "second"],
        "scores": [1, -2],
        "flags": [True, False],
        "note": "ok",
    }  # an empty list that is not required is left out


def test_an_array_item_the_form_cannot_read_names_its_line() -> None:
    choice = _arrays()
    verdict_form.fill(choice, {"GREEN-scores": "1\nx", "GREEN-flags": "yes", "GREEN-kinds": "c"})
    assert verdict_form.result(choice) is None
    assert choice.errors["scores"] == "scores, line 2: enter an integer."
    assert choice.errors["flags"] == "flags, line 1: enter true or false."
    assert choice.errors["kinds"] == "kinds, line 1: enter one of: a, b."


def test_a_required_empty_array_is_sent_and_the_validator_speaks_at_it() -> None:
    choice = _arrays()
    verdict_form.fill(choice, {"GREEN-tags": "a\nb\nc"})
    result = verdict_form.result(choice)
    assert result == {"verdict": "GREEN", "tags": ["a", "b", "c"]}
    general = verdict_form.place_errors(choice, _message(ARRAYS, result))
    assert "tags" in choice.errors and general == [general[0]]
    empty = _arrays()
    verdict_form.fill(empty, {})
    assert verdict_form.result(empty) == {"verdict": "GREEN", "tags": []}


def test_an_array_of_objects_needs_the_json_editor() -> None:
    schema = {"type": "object", "properties": {"rows": {"type": "array", "items": {}}}}
    view = {"humanDefinition": {"eval": {"passSchema": schema}}}
    assert verdict_form.choices(view)["GREEN"].form is None
