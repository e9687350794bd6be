"""The one codec between the frozen documents and their saved JSON (kernel/document_codec.py):
a document read and written again is the same bytes, for every execution the golden
recordings hold (the old state file's and the recorded run's), and what the domain changes
with ``dataclasses.replace`` is written where the saved JSON would have it."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from artifactize.kernel.document_codec import (
    _EXECUTIONS,
    _REQUESTS,
    _RUNS,
    DocumentError,
    _rebuildable,
    execution_changed,
    execution_from_json,
    execution_json,
    json_copy,
    request_changed,
    request_from_json,
    request_holds,
    request_json,
    request_merged,
    request_summarized,
    run_changed,
    run_from_json,
    run_json,
    with_keys,
)
from artifactize.ports.documents import Execution, Request, Run
from artifactize.ports.ids import ExecutionId
from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus

GOLDEN = Path(__file__).resolve().parents[1] / "integration" / "fixtures" / "golden"


def compact(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def stored(table: str) -> list[str]:
    """The ``data`` column of every row of ``table`` in the recorded (old) state file."""
    connection = sqlite3.connect(f"file:{GOLDEN / 'state' / 'state.sqlite'}?mode=ro", uri=True)
    try:
        return [row[0] for row in connection.execute(f"SELECT data FROM {table} ORDER BY rowid")]
    finally:
        connection.close()


def recorded(name: str) -> list[dict[str, Any]]:
    """The documents of a recording that holds them one after another, pretty-printed."""
    decoder, text, found, at = json.JSONDecoder(), (GOLDEN / name).read_text("utf-8"), [], 0
    while at < len(text.rstrip()):
        document, at = decoder.raw_decode(text, at)
        found.append(document)
        while at < len(text) and text[at].isspace():
            at += 1
    return found


CODECS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], dict[str, Any]], type[Any]]] = {
    "runs": (run_from_json, run_json, RunStatus),
    "requests": (request_from_json, request_json, RequestStatus),
    "executions": (execution_from_json, execution_json, ExecutionStatus),
}


@pytest.mark.parametrize("table", list(CODECS))
def test_every_stored_document_of_the_old_state_is_written_back_byte_for_byte(table: str) -> None:
    read, write, statuses = CODECS[table]
    texts = stored(table)
    # the recording's Run, its requests and its runtime, Agent and Human executions
    assert len(texts) >= {"runs": 1, "requests": 3, "executions": 5}[table]
    for text in texts:
        document = read(json.loads(text))
        assert isinstance(document.status, statuses) and document.id
        assert compact(write(document)) == text


@pytest.mark.parametrize("table", list(CODECS))
def test_every_recorded_document_is_written_back_with_its_key_order(table: str) -> None:
    read, write, _ = CODECS[table]
    documents = recorded(f"stored-{table}.json")
    assert documents
    for document in documents:
        again = write(read(json.loads(json.dumps(document))))
        assert json.dumps(again, indent=2) == json.dumps(document, indent=2)


def test_a_field_set_by_replace_is_written_after_the_saved_keys() -> None:
    claimed = execution_from_json({"id": "execution-r-1", "requestId": "r-1"})
    assert claimed.status is None and claimed.keys == ("id", "requestId")
    waiting = dataclasses.replace(claimed, status=ExecutionStatus.WAITING_HUMAN, error=None)
    assert list(execution_json(waiting)) == ["id", "requestId", "status"]  # None: not written
    settled = dataclasses.replace(waiting, keys=with_keys(waiting, "status", "error"))
    assert compact(execution_json(settled)) == (
        '{"id":"execution-r-1","requestId":"r-1","status":"WAITING_HUMAN","error":null}'
    )


def test_a_saved_null_and_an_unknown_key_keep_their_place() -> None:
    text = '{"id":"x","future":{"a":1},"error":null,"status":"GREEN","completedAt":"t"}'
    execution = execution_from_json(json.loads(text))
    assert execution.extra == {"future": {"a": 1}} and execution.error is None
    assert compact(execution_json(execution)) == text
    later = dataclasses.replace(execution, reviewer="alice")
    assert compact(execution_json(later)).endswith('"completedAt":"t","reviewer":"alice"}')


def test_an_execution_is_frozen() -> None:
    execution = Execution(id=ExecutionId("x"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        execution.status = ExecutionStatus.GREEN  # type: ignore[misc]


@pytest.mark.parametrize("status", ["DONE", "QUEUED", 3])
def test_a_status_no_execution_has_is_refused_by_name(status: object) -> None:
    with pytest.raises(DocumentError, match=f"execution x has no known status: {status!r}"):
        execution_from_json({"id": "x", "status": status})


def test_changed_fields_keep_their_place_and_new_ones_follow_with_their_nulls() -> None:
    waiting = execution_from_json({"id": "x", "status": "WAITING_HUMAN", "kinds": {}})
    settled = execution_changed(
        waiting, {"status": "GREEN", "error": None, "future": 1, "reviewer": "alice"}
    )
    assert (
        settled.status is ExecutionStatus.GREEN and waiting.status is ExecutionStatus.WAITING_HUMAN
    )
    assert compact(execution_json(settled)) == (
        '{"id":"x","status":"GREEN","kinds":{},"error":null,"future":1,"reviewer":"alice"}'
    )
    with pytest.raises(DocumentError, match="execution x has no known status: 'QUEUED'"):
        execution_changed(waiting, {"status": "QUEUED"})


def test_a_built_execution_is_written_in_the_order_of_its_keys() -> None:
    built = Execution(
        id=ExecutionId("x"), status=ExecutionStatus.RUNNING, error=None, keys=("status", "id")
    )
    assert compact(execution_json(built)) == '{"status":"RUNNING","id":"x"}'
    assert compact(execution_json(Execution(id=ExecutionId("x")))) == '{"id":"x"}'


@pytest.mark.parametrize("table", list(CODECS))
def test_a_change_writes_the_documents_keys_then_the_new_ones_as_a_dict_update(
    table: str,
) -> None:
    """Every stored document, also with a field set outside its saved keys (by ``replace``)
    and an unknown key: a change keeps what ``write`` wrote, in its order, then adds its
    own keys (a change computes the keys without writing the document)."""
    read, write, _ = CODECS[table]
    change = {"runs": run_changed, "requests": request_changed, "executions": None}[table]
    merge = {"runs": None, "requests": request_merged, "executions": execution_changed}[table]
    for text in stored(table):
        saved = read(json.loads(text))
        outside = dataclasses.replace(saved, extra={**saved.extra, "zUnknown": 1}, status=None)
        for document in (saved, outside):
            before = list(write(document))
            if change is not None:
                changed = change(document, error="boom")
                assert list(write(changed)) == list(dict.fromkeys([*before, "error"]))
            if merge is not None:
                merged = merge(document, {"error": "boom", "zNew": 2, "id": document.id})
                assert list(write(merged)) == list(dict.fromkeys([*before, "error", "zNew"]))


# --- the Run ---------------------------------------------------------------------------


def test_a_run_without_its_optional_keys_reads_defaults_and_writes_none_of_them() -> None:
    text = (
        '{"id":"run-a","repoPath":"/r","stateDir":"/s","status":"RUNNING","createdAt":"t",'
        '"completedAt":null,"selection":[],"recursive":false,"ignoreGates":false,"force":false,'
        '"jobs":1,"definitions":{"evals":{},"artifacts":{}},"executionsStarted":0,'
        '"waitTimeoutMs":null,"waitTimedOut":false,"evidence":{},"validation":null,"error":null}'
    )
    run = run_from_json(json.loads(text))
    assert (run.summary, run.owner, run.comment, run.error_code, run.reuse_only) == (None,) * 5
    assert compact(run_json(run)) == text
    minimal = run_from_json({"createdAt": "t"})  # a store test's document
    assert (minimal.status, minimal.evidence, minimal.executions_started) == ("RUNNING", {}, 0)
    assert compact(run_json(minimal)) == '{"createdAt":"t"}'


def test_a_runs_unknown_keys_and_saved_nulls_keep_their_place() -> None:
    text = '{"id":"run-a","future":{"a":[1]},"status":"GREEN","owner":null,"later":true}'
    run = run_from_json(json.loads(text))
    assert run.extra == {"future": {"a": [1]}, "later": True} and run.owner is None
    assert compact(run_json(run)) == text
    ended = run_changed(run, status=RunStatus.ERROR, error_code="OWNER_DIED", owner=None)
    assert compact(run_json(ended)) == (
        '{"id":"run-a","future":{"a":[1]},"status":"ERROR","owner":null,"later":true,'
        '"errorCode":"OWNER_DIED"}'
    )
    assert run.status is RunStatus.GREEN  # the Run changed is a new one


def test_run_changed_writes_as_a_dict_update_would() -> None:
    document = {"id": "run-a", "status": "RUNNING", "error": None, "jobs": 1}
    run = run_from_json(dict(document))
    changes = {"jobs": 4, "reuseOnly": ["human"], "comment": "why", "error": None}
    changed = run_changed(run, jobs=4, reuse_only=["human"], comment="why", error=None)
    assert compact(run_json(changed)) == compact({**document, **changes})
    with pytest.raises(TypeError):
        run_changed(run, no_such_field=1)  # type: ignore[call-arg]


def test_a_run_is_frozen_and_its_status_is_checked() -> None:
    run = run_from_json({"id": "run-a", "status": "INCOMPLETE"})
    assert run.status is RunStatus.INCOMPLETE
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = RunStatus.GREEN  # type: ignore[misc]
    with pytest.raises(DocumentError, match="Run run-a has no known status: 'QUEUED'"):
        run_from_json({"id": "run-a", "status": "QUEUED"})
    with pytest.raises(DocumentError, match="Run run-a has no known status: 'DONE'"):
        run_changed(run, status="DONE")  # type: ignore[arg-type]


# --- the request -----------------------------------------------------------------------


def test_a_request_without_its_optional_keys_writes_none_of_them() -> None:
    document = {
        "id": "run-a-1", "runId": "run-a", "evalId": "a/e", "ordinal": 1, "selected": False,
        "target": "a", "title": None, "profile": {"kind": "human"},
        "requestedProfile": {"kind": "human"}, "evalDefHash": "h", "payload": {}, "key": None,
        "fingerprints": {}, "unkeyedReason": "none", "force": False, "executionId": None,
        "source": None, "provenance": None, "usage": None, "reusedUsage": None,
        "toolCalls": [], "status": "QUEUED", "createdAt": "t", "startedAt": None,
        "completedAt": None, "result": None, "error": None, "errorCode": None,
        "blockedReason": None, "blockedBy": None, "producer": None, "sessionId": None,
        "cwd": None, "argv": None, "child": None,
    }  # fmt: skip
    request = request_from_json(dict(document))
    assert (request.program, request.agent, request.summary, request.file_manifest) == (None,) * 4
    assert (request.human_definition, request.run_dir, request.selected) == (None, None, False)
    assert compact(request_json(request)) == compact(document)
    minimal = request_from_json({"id": "r", "status": "GREEN"})  # a store test's document
    assert (minimal.status, minimal.tool_calls, minimal.profile) == ("GREEN", [], {"kind": ""})
    assert compact(request_json(minimal)) == '{"id":"r","status":"GREEN"}'


def test_a_requests_unknown_keys_keep_their_place_and_changes_follow_as_a_dict_update() -> None:
    text = '{"id":"r","status":"WAITING_HUMAN","future":[1],"reviewer":null}'
    request = request_from_json(json.loads(text))
    assert request.extra == {"future": [1]} and request.reviewer is None
    assert compact(request_json(request)) == text
    changes = {"status": "GREEN", "reviewer": "alice", "completedAt": "t", "error": None}
    settled = request_changed(
        request, status=RequestStatus.GREEN, reviewer="alice", completed_at="t", error=None
    )
    assert compact(request_json(settled)) == compact({**json.loads(text), **changes})
    assert request.status is RequestStatus.WAITING_HUMAN  # the request changed is a new one
    with pytest.raises(dataclasses.FrozenInstanceError):
        settled.status = RequestStatus.RED  # type: ignore[misc]
    with pytest.raises(DocumentError, match="request r has no known status: 'INCOMPLETE'"):
        request_changed(request, status="INCOMPLETE")  # type: ignore[arg-type]
    with pytest.raises(DocumentError, match="request r has no known status: None"):
        request_from_json({"id": "r", "status": None})


def test_request_holds_answers_as_comparing_the_changed_request_would() -> None:
    """``request_holds`` (``finish_run``: is this request saved with its summary already?)
    says what ``request_changed(request, **changes) == request`` says, building nothing."""
    summary: Any = {"status": "GREEN", "wallMs": 5}  # a summary's shape is not the point
    read = request_from_json({"id": "r", "status": "GREEN", "summary": None, "title": "t"})
    summarized = request_changed(read, summary=summary)
    # keys only the ones read: a summary not yet written moves its key to the end
    out_of_order = request_from_json({"id": "r", "status": "GREEN", "title": "t"})
    out_of_order = dataclasses.replace(out_of_order, summary=summary)
    other: Any = {"status": "GREEN", "wallMs": 6}
    cases = [
        (read, summary),  # a different value
        (summarized, summary),  # the same value, saved as the change would write it
        (summarized, other),
        (out_of_order, summary),  # the same value, but the change would write new keys
    ]
    for request, value in cases:
        expected = request_changed(request, summary=value) == request
        assert request_holds(request, summary=value) is expected
    assert [request_holds(r, summary=v) for r, v in cases] == [False, True, False, False]


# A change builds the document again positionally (``_Codec._replaced``), not through
# ``dataclasses.replace``: the two must build equal documents, field for field.
@pytest.mark.parametrize("kind", [Execution, Request, Run])
def test_a_change_builds_what_dataclasses_replace_builds(kind: type[Any]) -> None:
    codecs: dict[type[Any], Any] = {Execution: _EXECUTIONS, Request: _REQUESTS, Run: _RUNS}
    codec = codecs[kind]
    document = kind()
    for index, item in enumerate(dataclasses.fields(kind)):
        value: object = f"value-{index}" if item.name != "status" else document.status
        changes = {item.name: value, "keys": ("id",)}
        rebuilt = codec._replaced(document, changes)
        assert rebuilt == dataclasses.replace(document, **changes), item.name
        assert type(rebuilt) is kind


def test_a_change_of_no_field_is_refused_as_replace_refuses_it() -> None:
    with pytest.raises(TypeError, match="no field 'colour'"):
        _REQUESTS._replaced(Request(), {"colour": "red"})
    with pytest.raises(TypeError):
        dataclasses.replace(Request(), colour="red")  # type: ignore[call-arg]


def test_a_class_with_post_init_is_changed_by_replace() -> None:
    @dataclasses.dataclass(frozen=True)
    class Checked:
        value: int = 0

        def __post_init__(self) -> None:
            if self.value < 0:
                raise ValueError("negative")

    assert not _rebuildable(Checked)
    assert _rebuildable(Request) and _rebuildable(Run) and _rebuildable(Execution)


def _summary_of(request: Request) -> Any:
    """A summary read from the changed request's fields (as ``request_summary`` reads it)."""
    return {"status": request.status, "completedAt": request.completed_at}


@pytest.mark.parametrize(
    "text",
    [
        '{"id":"r","status":"QUEUED","title":"t"}',  # no summary yet: its key follows
        '{"id":"r","status":"QUEUED","summary":null,"title":"t"}',  # a saved null keeps its place
        '{"id":"r","status":"QUEUED","future":[1],"completedAt":null}',  # an unknown key
    ],
)
def test_a_summarized_change_is_the_change_then_its_summary_in_one_build(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``request_summarized`` (a reused request, a reuse-only miss, a derived verdict):
    equal, field for field and byte for byte, to the change then ``summary=`` of it, with
    one request built instead of two; the summary is not a change of its own."""
    request = request_from_json(json.loads(text))
    changes: dict[str, Any] = {"status": RequestStatus.GREEN, "completed_at": "t", "error": None}
    changed = request_changed(request, **changes)
    expected = request_changed(changed, summary=_summary_of(changed))
    built: list[object] = []
    constructor = Request.__init__

    def counted(self: Request, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        constructor(self, *args, **kwargs)

    monkeypatch.setattr(Request, "__init__", counted)
    once = request_summarized(request, _summary_of, **changes)
    monkeypatch.undo()
    assert len(built) == 1  # two on the base: the change, then its summary
    assert once == expected and once.keys == expected.keys
    assert compact(request_json(once)) == compact(request_json(expected))
    with pytest.raises(dataclasses.FrozenInstanceError):
        once.summary = None  # type: ignore[misc]
    with pytest.raises(TypeError, match="'summary' is derived"):
        request_summarized(request, _summary_of, summary=None)


def test_json_copy_copies_containers_and_shares_immutable_values() -> None:
    """``json_copy`` gives what ``copy.deepcopy`` gives a JSON value: equal, no dict or list
    shared with the original; strings and numbers shared; any other value deep-copied."""
    argv = ["/usr/bin/true"]
    inner: dict[str, Any] = {"argv": argv, "exitCode": 0, "ok": True, "ratio": 0.5}
    inner.update(none=None, status=RequestStatus.GREEN)
    odd = ({"in": "tuple"},)
    empty: list[Any] = []
    value: dict[str, Any] = {"result": inner, "usage": [inner, empty], "odd": odd}
    copied = json_copy(value)
    assert copied == value
    assert copied["result"] is not inner and copied["result"]["argv"] is not inner["argv"]
    assert copied["usage"][0] is not inner and copied["usage"][1] is not empty
    assert copied["result"]["argv"][0] is inner["argv"][0]
    assert copied["result"]["status"] is RequestStatus.GREEN
    assert copied["odd"] == odd and copied["odd"][0] is not odd[0]
    copied["result"]["argv"].append("changed")
    assert argv == ["/usr/bin/true"]
