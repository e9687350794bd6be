"""Rows to port records and back: the ``data`` column is compact JSON of the record.

Since state revision 6 a Run's ``definitions`` and the shared part of a settled request's
document live once per content in ``run_definitions`` and ``request_bodies``, named by the
row's ``definitions`` and ``body`` digest: ``select_runs`` and ``select_requests`` read a
row with its part, ``run_record`` and ``request_record`` put the document together, and
``run_parts`` and ``request_row`` take it apart for a write. A row whose digest column is
NULL holds its whole document, as every row written before revision 6 does.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa

from artifactize.adapters.sqlite.schema import (
    ACTIVE_REQUEST_STATUSES,
    IDS_PER_STATEMENT,
    executions,
    request_bodies,
    requests,
    run_definitions,
    runs,
)
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


# --- the parts Runs share (state revision 6) ------------------------------------------

DEFINITIONS_TEXT = run_definitions.c.data.label("definitions_text")
BODY_TEXT = request_bodies.c.data.label("body_text")
RUNS_WITH_DEFINITIONS = runs.outerjoin(
    run_definitions, runs.c.definitions == run_definitions.c.digest
)
REQUESTS_WITH_BODIES = requests.outerjoin(
    request_bodies, requests.c.body == request_bodies.c.digest
)


def select_runs() -> sa.Select[Any]:
    """Whole Runs: every column of ``runs`` and the text of the definitions a row names."""
    return sa.select(runs, DEFINITIONS_TEXT).select_from(RUNS_WITH_DEFINITIONS)


def select_requests(joined: sa.FromClause | None = None) -> sa.Select[Any]:
    """Whole requests: every column of ``requests`` and the text of the body a row names;
    ``joined``: ``REQUESTS_WITH_BODIES`` joined with more tables, for an order by them."""
    return sa.select(requests, BODY_TEXT).select_from(
        REQUESTS_WITH_BODIES if joined is None else joined
    )


def shared_digest(text: str) -> str:
    """The name a shared part is kept by: the SHA-256 of its text, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _part(digest: object, text: object, table: str, row_id: object) -> dict[str, Any]:
    """The shared part named ``digest`` by ``table``'s row ``row_id``, as read with it."""
    if not isinstance(text, str):
        raise StateError(
            f"Corrupt state: {table} row {row_id} names a shared part ({digest}) the state "
            "does not hold."
        )
    return load_data(text, f"{table} shared part of", row_id)


def run_document(row: sa.Row[Any]) -> dict[str, Any]:
    """A Run's saved document, its definitions put back when the row names them (a row
    read without them, by a list, has neither column)."""
    data = load_data(row.data, "runs", row.id)
    # ``_fields``: a Row's public names of its columns (the ``_`` only avoids a clash)
    if "definitions_text" in row._fields and row.definitions is not None:
        data[DEFINITIONS] = _part(row.definitions, row.definitions_text, "runs", row.id)
    return data


def request_document(row: sa.Row[Any]) -> dict[str, Any]:
    """A request's saved document: its row's part over the shared part the row names."""
    data = load_data(row.data, "requests", row.id)
    if row.body is None:
        return data
    return {**_part(row.body, row.body_text, "requests", row.id), **data}


def run_record(row: sa.Row[Any]) -> RunRecord:
    data = run_document(row)
    status = _status(row.status, data, RunStatus, "runs", row.id)
    run = _decoded(run_from_json, data, "runs", row.id)
    return RunRecord(id=row.id, repo=row.repo, status=status, data=run)


def request_record(row: sa.Row[Any]) -> RequestRecord:
    data = request_document(row)
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


# A Run's recorded declarations (``definitions``: every eval and Artifact it covers) are
# most of its document (14 of 14 MB at 10,000 Artifacts), set when it is created, never
# changed, and the same from one Run to the next while the declarations are: kept once in
# ``run_definitions``, and encoded once per object (a Run is written created, then ended).
DEFINITIONS = "definitions"


@dataclass(frozen=True)
class SharedText:
    """A shared part's text and digest, and the object encoded (documents are frozen: the
    same object has the same text)."""

    of: object
    text: str
    digest: str


def run_parts(run: RunRecord, known: SharedText | None) -> tuple[str, SharedText | None]:
    """The ``data`` column of ``run`` without its definitions, and the definitions' shared
    text (``known`` again when the Run holds that very object); its whole document and None
    when it has no definitions."""
    data = run_json(run.data)
    definitions = data.get(DEFINITIONS)
    if not isinstance(definitions, Mapping):
        return dump_data(data), None
    if known is None or known.of is not definitions:
        text = dump_data(definitions)
        known = SharedText(definitions, text, shared_digest(text))
    # ``null`` where they stand: read back, they take their place again (the order of a
    # Run's members is the order ``run show`` prints them in)
    return dump_data({**data, DEFINITIONS: None}), known


def request_data(request: RequestRecord) -> str:
    """The whole saved JSON of ``request``, compact: the ``data`` of a row with no body."""
    return dump_data(request_json(request.data))


# The members of a request's document that are its own: its identity, times and summary
# (the request of the next Run for the same eval differs there), and what may change after
# it was saved (``request_lines_query`` reads the reviewer out of the row). The rest of a
# request saved settled is its body, kept once in ``request_bodies``.
REQUEST_OWN_MEMBERS = frozenset(
    {
        "id",
        "runId",
        "ordinal",
        "status",
        "createdAt",
        "startedAt",
        "completedAt",
        "summary",
        "reviewer",
    }
)

# A request row's columns, in the order of ``request_row``'s values: the columns a Run's
# creation writes (a claim's columns stay NULL until a claim).
REQUEST_COLUMNS = ("id", "run_id", "eval_id", "ordinal", "execution_id", "status", "data", "body")


def request_row(request: RequestRecord) -> tuple[tuple[Any, ...], SharedText | None]:
    """The values of ``request``'s row for ``REQUEST_COLUMNS``, in their order (what the
    driver binds: no column of these converts a value on its way in), and its body. A
    request still to be settled (it will be written again) or whose body names its own
    Run (no other Run's could share it) keeps its whole document in its row."""
    data = request_json(request.data)
    body = None
    if request.status not in ACTIVE_REQUEST_STATUSES:
        # its own members ``null`` where they stand: read back, the row's take their places
        # (a document keeps the order of its members, and prints in it)
        shared = {key: None if key in REQUEST_OWN_MEMBERS else value for key, value in data.items()}
        text = dump_data(shared)
        if request.run_id not in text:
            body = SharedText(None, text, shared_digest(text))
            data = {key: value for key, value in data.items() if key in REQUEST_OWN_MEMBERS}
    row = (
        request.id,
        request.run_id,
        request.eval_id,
        request.ordinal,
        request.execution_id,
        request.status,
        dump_data(data),
        None if body is None else body.digest,
    )
    return row, body


def request_rows(
    requests: Iterable[RequestRecord],
) -> tuple[list[tuple[Any, ...]], dict[str, str]]:
    """``request_row`` of each of ``requests``, and the bodies they name (digest: text)."""
    rows: list[tuple[Any, ...]] = []
    bodies: dict[str, str] = {}
    for request in requests:
        row, body = request_row(request)
        rows.append(row)
        if body is not None:
            bodies[body.digest] = body.text
    return rows, bodies


def save_definitions(connection: sa.Connection, definitions: SharedText | None) -> None:
    """Keep ``definitions`` unless the state holds them (asked first: their text is most
    of a Run, and most Runs name the previous one's)."""
    if definitions is None:
        return
    digest = run_definitions.c.digest
    if connection.execute(sa.select(digest).where(digest == definitions.digest)).first() is None:
        connection.execute(
            sa.insert(run_definitions).values(digest=definitions.digest, data=definitions.text)
        )


def holds_all(connection: sa.Connection, table: sa.Table, digests: Collection[str]) -> bool:
    """Whether ``table`` (a table of shared parts) holds every one of ``digests``."""
    wanted = list(digests)
    for start in range(0, len(wanted), IDS_PER_STATEMENT):
        part = wanted[start : start + IDS_PER_STATEMENT]
        query = sa.select(sa.func.count()).where(table.c.digest.in_(part))
        if connection.execute(query).scalar_one() != len(part):
            return False
    return True


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
