"""What changed since the last verdict (domain/reviews/human/viewing.py), and the verdict
form's placing of the validator's messages (entrypoints/web/verdict_form.py)."""

from __future__ import annotations

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
from artifactize.ports.state import ExecutionRecord, RequestRecord


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
        id=ident,
        key=f"key-{ident}",
        eval_def_hash="h",
        status=status,
        owner_pid=0,
        owner_start_time=0.0,
        backend=None,
        completed_at="2026-01-01T00:00:00.000000000Z",
        data={"evalId": "doc/signoff", **data},  # type: ignore[typeddict-item]
    )


class _State:
    def __init__(self, records: list[ExecutionRecord]) -> None:
        self.records = records

    def latest_records(self) -> list[tuple[ExecutionRecord, int]]:
        return [(record, 1) for record in self.records]


def _request(manifest: dict[str, str] | None, execution: str = "mine") -> RequestRecord:
    data: dict[str, Any] = {"fileManifest": manifest}
    return RequestRecord(
        id="r",
        run_id="run",
        eval_id="doc/signoff",
        ordinal=1,
        execution_id=execution,
        status="x",
        data=data,  # type: ignore[arg-type]
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
    since = since_last_verdict(_State(records), _request({"a.txt": "01"}))  # type: ignore[arg-type]
    assert since.verdict is records[3] and since.changes == (("a.txt", MODIFIED),)
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
