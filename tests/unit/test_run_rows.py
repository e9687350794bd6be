"""A Run's row is written with its definitions encoded once (``rows.run_data_reusing``):
the text is ``run_data``'s, byte for byte, wherever the definitions sit among the Run's
keys, whatever the other members hold, and whether their JSON is new or remembered."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from artifactize.adapters.sqlite.rows import run_data, run_data_reusing
from artifactize.kernel.document_codec import run_changed, run_from_json
from artifactize.ports.ids import RunId
from artifactize.ports.state import RunRecord
from artifactize.ports.statuses import RunStatus

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
def test_the_same_bytes_as_run_data(members: dict[str, Any], definitions: Any, at: int) -> None:
    record = _record(members, definitions, at)
    text, known = run_data_reusing(record, None)
    assert text == run_data(record)
    assert known is not None and known[0] is record.data.definitions
    # The Run ended: other members changed, the same definitions, their JSON remembered.
    ended = dataclasses.replace(
        record, data=run_changed(record.data, error="ended\u2028", completed_at="2026-12-06")
    )
    again, remembered = run_data_reusing(ended, known)
    assert remembered is known
    assert again == run_data(ended)


def test_other_definitions_are_encoded_again() -> None:
    first = _record({}, {"evals": {"a/b": {"title": "one"}}}, 1)
    second = _record({}, {"evals": {"a/b": {"title": "two"}}}, 1)
    _, known = run_data_reusing(first, None)
    text, _ = run_data_reusing(second, known)
    assert text == run_data(second)
    assert '"two"' in text


def test_a_run_without_definitions_is_written_whole() -> None:
    record = _record({"error": "x"}, None, 0)
    assert run_data_reusing(record, None) == (run_data(record), None)
