"""Rows to port records and back: the ``data`` column is compact JSON of the record."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import sqlalchemy as sa

from artifactize.adapters.sqlite.schema import executions
from artifactize.kernel.document_codec import (
    DocumentError,
    execution_from_json,
    execution_json,
    request_from_json,
    request_json,
    run_from_json,
    run_json,
)
from artifactize.ports.state import ExecutionRecord, RequestRecord, RunRecord, StateError
from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus

Status = TypeVar("Status", RunStatus, RequestStatus, ExecutionStatus)
Decoded = TypeVar("Decoded")


def _jsonable(value: object) -> object:
    """Let any Mapping (a frozen view, say) serialize as an object."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dump_data(data: Mapping[str, Any]) -> str:
    """Compact JSON, UTF-8 kept as is (``ensure_ascii=False``); NaN/Infinity refused."""
    return json.dumps(
        data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_jsonable
    )


def data_bytes(text: str) -> int:
    """The size the reuse caps count: UTF-8 bytes of the serialized document."""
    return len(text.encode("utf-8"))


class ReadWhole(Exception):
    """A part of a saved row that SQLite's JSON functions cannot give (the row is no JSON,
    or a key no quoted JSON-path label can hold): the caller reads the row whole, and
    ``load_data`` names the row and the rule when it is damaged."""


def json_at(column: sa.ColumnElement[str], path: str) -> sa.ColumnElement[str]:
    """The value at ``path`` of a row's saved JSON, taken out by SQLite (its own parser: a
    10,000-Artifact Run is 14 MB, ~0.5 s for Python to decode whole) in a one-element JSON
    array, so that ``json_value`` gets it with its JSON type."""
    return sa.func.json_array(sa.func.json_extract(column, path))


def json_value(text: str) -> Any:
    """The value ``json_at`` took out."""
    return json.loads(text)[0]


def json_parts(connection: sa.Connection, query: sa.Select[Any]) -> sa.CursorResult[Any]:
    """``query``, which reads parts of saved rows through SQLite's JSON functions; ReadWhole
    when one of those rows is no JSON (SQLite says only "malformed JSON")."""
    try:
        return connection.execute(query)
    except sa.exc.OperationalError as error:
        if "malformed JSON" in str(error):
            raise ReadWhole from None
        raise


def load_data(text: object, table: str, row_id: object) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise StateError(f"Corrupt state: {table} row {row_id} holds no JSON object.")
    return value


def _status(
    column: object, data: dict[str, Any], statuses: type[Status], table: str, row_id: object
) -> Status:
    """The row's status as its enum member; the document's own ``status`` (when it has one:
    a RUNNING execution's does not yet) becomes the member too, so the document and the
    record agree. An unknown word is corrupt state, not a crash later."""
    try:
        if "status" in data:
            data["status"] = statuses(data["status"])
        return statuses(str(column))
    except ValueError:
        raise StateError(f"Corrupt state: {table} row {row_id} has no known status.") from None


def _decoded(
    read: Callable[[dict[str, Any]], Decoded], data: dict[str, Any], table: str, row_id: object
) -> Decoded:
    """The frozen document ``read`` makes of a row's JSON; corrupt state when it cannot."""
    try:
        return read(data)
    except DocumentError as error:
        raise StateError(f"Corrupt state: {table} row {row_id}: {error}") from None


def run_record(row: sa.Row[Any]) -> RunRecord:
    data = load_data(row.data, "runs", row.id)
    status = _status(row.status, data, RunStatus, "runs", row.id)
    run = _decoded(run_from_json, data, "runs", row.id)
    return RunRecord(id=row.id, repo=row.repo, status=status, data=run)


def request_record(row: sa.Row[Any]) -> RequestRecord:
    data = load_data(row.data, "requests", row.id)
    status = _status(row.status, data, RequestStatus, "requests", row.id)
    return RequestRecord(
        id=row.id,
        run_id=row.run_id,
        eval_id=row.eval_id,
        ordinal=row.ordinal,
        execution_id=row.execution_id,
        status=status,
        data=_decoded(request_from_json, data, "requests", row.id),
    )


# The columns ``execution_values`` gives (an inserted execution's ``bytes`` and ``last_used``
# stay NULL until its settlement records it), in the table's order but for those two.
EXECUTION_COLUMNS = (
    "id",
    "key",
    "eval_def_hash",
    "status",
    "owner_pid",
    "owner_start_time",
    "backend",
    "completed_at",
    "data",
)


# The columns an execution record is read from, by position in a row that selects the
# ``executions`` table first (every query of executions does): one C-level call per row, not
# one attribute lookup per column (the newest record of every key is read on each
# ``status``: 10,000 rows at 10,000 Artifacts).
_EXECUTION_COLUMNS = operator.itemgetter(
    *([column.name for column in executions.columns].index(name) for name in EXECUTION_COLUMNS)
)


def execution_record(row: sa.Row[Any]) -> ExecutionRecord:
    """The record of a row whose first columns are the ``executions`` table's, in order."""
    row_id, key, def_hash, status_column, pid, start_time, backend, completed_at, text = (
        _EXECUTION_COLUMNS(row)
    )
    data = load_data(text, "executions", row_id)
    status = _status(status_column, data, ExecutionStatus, "executions", row_id)
    execution = _decoded(execution_from_json, data, "executions", row_id)
    return ExecutionRecord(
        id=row_id,
        key=key,
        eval_def_hash=def_hash,
        status=status,
        owner_pid=pid,
        owner_start_time=start_time,
        backend=backend,
        completed_at=completed_at,
        data=execution,
    )


def run_data(run: RunRecord) -> str:
    """The ``data`` column of ``run``: its saved JSON (``kernel.document_codec``), compact."""
    return dump_data(run_json(run.data))


# A Run's recorded declarations (``definitions``: every eval and Artifact it covers) are
# most of its row (1.4 of 1.4 MB at 1,000 Artifacts), set when it is created and never
# changed: a Run is written twice (created, ended) and its definitions encoded once.
DEFINITIONS = "definitions"
KnownText = tuple[object, str]  # a definitions object, and its compact JSON


def run_data_reusing(run: RunRecord, known: KnownText | None) -> tuple[str, KnownText | None]:
    """``run_data(run)``, byte for byte, with the definitions' JSON taken from ``known``
    when the Run holds that very object (documents are frozen: never changed in place);
    and what to pass next time. Compact JSON of an object is ``{`` + its members joined by
    ``,`` + ``}``, each member's text independent of the others', so the members before
    and after the definitions are encoded on their own and the text is joined."""
    data = run_json(run.data)
    definitions = data.get(DEFINITIONS)
    if not isinstance(definitions, Mapping):
        return dump_data(data), None
    if known is None or known[0] is not definitions:
        known = (definitions, dump_data(definitions))
    keys = list(data)
    at = keys.index(DEFINITIONS)
    head = dump_data({key: data[key] for key in keys[:at]})[:-1]  # "{...", unclosed
    tail = dump_data({key: data[key] for key in keys[at + 1 :]})[1:]  # "...}"
    member = dump_data({DEFINITIONS: None})[1 : -len("null}")] + known[1]  # '"definitions":'
    text = "".join((head, "," if at else "", member, "," if len(tail) > 1 else "", tail))
    return text, known


def request_data(request: RequestRecord) -> str:
    """The ``data`` column of ``request``: its saved JSON, compact."""
    return dump_data(request_json(request.data))


# A request row's columns, in the order of ``request_row``'s values: the columns a Run's
# creation writes (a claim's columns stay NULL until a claim).
REQUEST_COLUMNS = ("id", "run_id", "eval_id", "ordinal", "execution_id", "status", "data")


def request_row(request: RequestRecord) -> tuple[Any, ...]:
    """The values of ``request``'s row for ``REQUEST_COLUMNS``, in their order: what the
    driver binds (no column of these has a type that converts a value on its way in)."""
    return (
        request.id,
        request.run_id,
        request.eval_id,
        request.ordinal,
        request.execution_id,
        request.status,
        request_data(request),
    )


def execution_values(
    execution: ExecutionRecord, *, key: str | None, data: str | None = None
) -> dict[str, Any]:
    """Insert values; ``key`` is what the row holds (None for an execution holding none);
    ``data``: the document's stored text when the caller has made it already."""
    return {
        "id": execution.id,
        "key": key,
        "eval_def_hash": execution.eval_def_hash,
        "status": execution.status,
        "owner_pid": execution.owner_pid,
        "owner_start_time": execution.owner_start_time,
        "backend": execution.backend,
        "completed_at": execution.completed_at,
        "data": dump_data(execution_json(execution.data)) if data is None else data,
    }
