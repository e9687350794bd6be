"""A Run's row is written without its definitions, which are kept once by digest and
encoded once per object (``rows.run_parts``); a settled request's row without its body
(``rows.request_row``). Put back together (``run_document``, ``request_document``), each is
the document the record encodes to, whatever its members hold and in whatever order."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from artifactize.adapters.sqlite.rows import (
    REQUEST_OWN_MEMBERS,
    dump_data,
    request_data,
    request_row,
    run_parts,
    shared_digest,
)
from artifactize.kernel.document_codec import (
    request_from_json,
    request_json,
    run_changed,
    run_from_json,
    run_json,
)
from artifactize.ports.ids import EvalId, ExecutionId, RequestId, RunId
from artifactize.ports.state import RequestRecord, RunRecord
from artifactize.ports.statuses import RequestStatus, RunStatus

_TEXT = st.text(max_size=8)  # any code point but a lone surrogate (SQLite stores UTF-8)
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=12,
)
_MEMBERS = st.dictionaries(
    st.sampled_from(["error", "comment", "selection", "evidence", "unknownKey", "x"]),
    _VALUES,
    max_size=5,
)


def _record(members: dict[str, Any], definitions: Any, at: int) -> RunRecord:
    items = list({"id": "run-abc", "status": "GREEN", **members}.items())
    items.insert(min(at, len(items)), ("definitions", definitions))
    run = run_from_json(dict(items))
    return RunRecord(RunId("run-abc"), "/repo", RunStatus.GREEN, run)


@given(_MEMBERS, st.dictionaries(_TEXT, _VALUES, max_size=4), st.integers(0, 8))
def test_a_run_is_its_data_and_its_definitions(
    members: dict[str, Any], definitions: Any, at: int
) -> None:
    record = _record(members, definitions, at)
    data, known = run_parts(record, None)
    assert known is not None and known.of is record.data.definitions
    assert known.digest == shared_digest(known.text)
    whole = {**json.loads(data), "definitions": json.loads(known.text)}
    assert list(whole.items()) == list(run_json(record.data).items())  # in order
    # The Run ended: other members changed, the same definitions, their JSON remembered.
    ended = dataclasses.replace(
        record, data=run_changed(record.data, error="ended\u2028", completed_at="2026-12-06")
    )
    again, remembered = run_parts(ended, known)
    assert remembered is known
    whole = {**json.loads(again), "definitions": json.loads(known.text)}
    assert list(whole.items()) == list(run_json(ended.data).items())


def test_other_definitions_are_encoded_again() -> None:
    first = _record({}, {"evals": {"a/b": {"title": "one"}}}, 1)
    second = _record({}, {"evals": {"a/b": {"title": "two"}}}, 1)
    _, known = run_parts(first, None)
    _, other = run_parts(second, known)
    assert known is not None and other is not None
    assert other.digest != known.digest and '"two"' in other.text


def test_a_run_without_definitions_is_written_whole() -> None:
    record = _record({"error": "x"}, None, 0)
    assert run_parts(record, None) == (dump_data(run_json(record.data)), None)


def _request(status: RequestStatus, **members: Any) -> RequestRecord:
    document = {
        "id": "run-abc-3",
        "runId": "run-abc",
        "evalId": "app/check",
        "ordinal": 3,
        "status": str(status),
        "createdAt": "2026-12-07T10:00:00.000000000Z",
        "completedAt": "2026-12-07T10:00:01.000000000Z",
        "summary": {"wallMs": 1000},
        "key": "k" * 64,
        "executionId": "execution-run-old-3",
        **members,
    }
    return RequestRecord(
        RequestId("run-abc-3"),
        RunId("run-abc"),
        EvalId("app/check"),
        3,
        ExecutionId("execution-run-old-3"),
        status,
        request_from_json(document),
    )


@given(st.dictionaries(st.sampled_from(["title", "payload", "x", "reviewer"]), _VALUES))
def test_a_settled_request_is_its_row_over_its_body(members: dict[str, Any]) -> None:
    request = _request(RequestStatus.GREEN, **members)
    row, body = request_row(request)
    assert body is not None and row[-1] == body.digest == shared_digest(body.text)
    own, shared = json.loads(row[6]), json.loads(body.text)
    assert set(own) <= REQUEST_OWN_MEMBERS
    assert all(shared[member] is None for member in REQUEST_OWN_MEMBERS & set(shared))
    assert list({**shared, **own}.items()) == list(request_json(request.data).items())
    assert request_from_json({**shared, **own}) == request.data  # its order of members too
    # the same eval's request of another Run, reused the same way, shares the body
    other = _request(RequestStatus.GREEN, **members, id="run-xyz-9", runId="run-xyz", ordinal=9)
    assert request_row(other)[1] == body


def test_a_request_to_be_written_again_or_naming_its_own_run_is_kept_whole() -> None:
    for request in (
        _request(RequestStatus.QUEUED),
        _request(RequestStatus.WAITING_HUMAN),
        _request(RequestStatus.BLOCKED, blockedBy=["run-abc-1"]),
    ):
        row, body = request_row(request)
        assert body is None and row[-1] is None and row[6] == request_data(request)
