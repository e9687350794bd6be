"""The SQLite state schema as SQLAlchemy Core tables: what the code reads and writes.

The database itself is made by the Alembic revisions in ``adapters/sqlite/migrations``; a
test checks that the head revision and these tables agree. A change here needs a revision.

Ten tables; every row of the first four keeps its camelCase JSON document in ``data``
and duplicates a few fields as columns so they can be indexed and constrained:

``runs``
    One row per Run; since revision 6 its ``definitions`` are kept in ``run_definitions``
    and named by the column of that name.
``requests``
    One row per eval of a Run (unique per Run by eval and by ordinal); since revision 6 a
    request created settled keeps the part of its document other Runs' requests share in
    ``request_bodies``, named by ``body``.
``executions``
    One row per execution. ``bytes`` and ``last_used`` are the *history columns*: both set
    exactly while the record is part of its key's reuse history (a CHECK keeps them
    together and allows them only on a completed GREEN/RED keyed record). Garbage
    collection and ``remove_key`` clear them; rows are never deleted.
``state_meta``
    Named values; row ``id`` is the random UUID of this state.
``mcp_sessions`` (revision 2)
    One row per ``artifactize mcp`` server run: ``id``, ``repo``, ``started_at``,
    ``ended_at`` and the full camelCase document (scope, pins, transport) in ``data``.
``mcp_calls`` (revision 2)
    One row per tools/call, keyed by (``session_id``, ``ordinal``); written before the
    call runs, completed after it (``adapters/sqlite/mcp_audit.py``).
``history_stamp`` (revision 5)
    One row: a random value that triggers on ``executions`` set anew on every write that
    could change what a Run reuses (``last_used`` alone does not); a replayed Run checks it.
``run_definitions``, ``request_bodies`` (revision 6)
    The parts Runs share, each kept once by the SHA-256 digest of its text.
``record_uses`` (revision 7)
    The reuses of history records since they were last folded into ``last_used``: a
    touch writes this narrow row instead of rewriting the record (``adapters.sqlite.history``).

The partial unique index ``active_key`` is what makes a claim exclusive: at most one
RUNNING or WAITING_HUMAN execution per key, whatever the callers do.
"""

from __future__ import annotations

import sqlalchemy as sa

from artifactize.ports.state import ACTIVE_STATUSES
from artifactize.ports.statuses import VERDICTS, RequestStatus

STATE_ID_NAME = "id"

ACTIVE_EXECUTION_STATUSES: tuple[str, ...] = ACTIVE_STATUSES
RECORDED_VERDICTS: tuple[str, ...] = VERDICTS
EXECUTION_STATUSES = (*ACTIVE_EXECUTION_STATUSES, *RECORDED_VERDICTS, RequestStatus.ERROR)
# Requests in these states may still read the execution they point at: GC keeps it.
ACTIVE_REQUEST_STATUSES = (RequestStatus.QUEUED, RequestStatus.RUNNING, RequestStatus.WAITING_HUMAN)


def _in(column: str, values: tuple[str, ...]) -> str:
    """``column IN ('a', 'b')`` for a CHECK or a partial index (fixed literals only)."""
    return f"{column} IN ({', '.join(repr(str(value)) for value in values)})"


IDS_PER_STATEMENT = 500  # bound parameters per IN (...), well under SQLite's limit


def fixed_in(column: sa.ColumnElement[str], values: tuple[str, ...]) -> sa.ColumnElement[bool]:
    """``column IN ('a', 'b')`` with the fixed ``values`` written into the statement, not
    bound: SQLite uses a partial index (``active_key``, ``active_request_execution``) only
    when the query's terms imply the index's own ``IN`` list, which bound parameters never
    do (the active-holder lookup scanned the whole table), and a literal list is not
    expanded again at every execution."""
    return column.in_([sa.literal_column(repr(str(value))) for value in values])


metadata = sa.MetaData()

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("repo", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    # the saved ``createdAt`` again (revision 3): Runs are listed newest first, and
    # ``json_extract`` of ``data`` parsed a whole Run (its definitions) per row sorted
    sa.Column("created_at", sa.Text, nullable=True),
    # revision 6: the digest of its ``definitions`` in ``run_definitions`` (then ``data``
    # holds none), or NULL (``data`` holds the whole document)
    sa.Column("definitions", sa.Text, sa.ForeignKey("run_definitions.digest"), nullable=True),
    sa.Index("runs_repo", "repo"),
    sa.Index("runs_created_at", "created_at"),
    sa.Index("runs_definitions", "definitions"),
)

executions = sa.Table(
    "executions",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("key", sa.Text, nullable=True),
    sa.Column("eval_def_hash", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("owner_pid", sa.Integer, nullable=False),
    sa.Column("owner_start_time", sa.Float, nullable=False),
    sa.Column("backend", sa.Text, nullable=True),
    sa.Column("completed_at", sa.Text, nullable=True),
    sa.Column("bytes", sa.Integer, nullable=True),
    sa.Column("last_used", sa.Text, nullable=True),
    sa.Column("data", sa.Text, nullable=False),
    sa.CheckConstraint(_in("status", EXECUTION_STATUSES), name="execution_status"),
    sa.CheckConstraint("(bytes IS NULL) = (last_used IS NULL)", name="history_columns_together"),
    sa.CheckConstraint(
        "last_used IS NULL OR (key IS NOT NULL AND completed_at IS NOT NULL AND "
        f"{_in('status', RECORDED_VERDICTS)})",
        name="history_only_completed_verdicts",
    ),
)

ACTIVE_KEY_WHERE = sa.text(f"{_in('status', ACTIVE_EXECUTION_STATUSES)} AND key IS NOT NULL")
HISTORY_WHERE = sa.text("last_used IS NOT NULL")

sa.Index("active_key", executions.c.key, unique=True, sqlite_where=ACTIVE_KEY_WHERE)
sa.Index(
    "history_by_key",
    executions.c.key,
    executions.c.completed_at,
    sqlite_where=HISTORY_WHERE,
)
sa.Index(
    "history_by_last_use",
    executions.c.last_used,
    executions.c.key,
    executions.c.completed_at,
    sqlite_where=HISTORY_WHERE,
)

requests = sa.Table(
    "requests",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("eval_id", sa.Text, nullable=False),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("execution_id", sa.Text, sa.ForeignKey("executions.id"), nullable=True),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("claimed_by", sa.Text, nullable=True),
    sa.Column("claimed_at", sa.Text, nullable=True),
    sa.Column("data", sa.Text, nullable=False),
    # revision 6: the digest of the part of its document kept in ``request_bodies`` (then
    # ``data`` holds the rest), or NULL (``data`` holds the whole document); neither a
    # reference nor an index (the revision says why)
    sa.Column("body", sa.Text, nullable=True),
    sa.UniqueConstraint("run_id", "ordinal", name="request_run_ordinal"),
    sa.UniqueConstraint("run_id", "eval_id", name="request_run_eval"),
)

# the claims held (revision 3): few, read whole by a list of every request
sa.Index(
    "requests_claimed",
    requests.c.claimed_by,
    requests.c.claimed_at,
    requests.c.id,
    sqlite_where=requests.c.claimed_by.is_not(None),
)

# the requests of an execution (revision 4): prune's sweep of the executions nothing points
# at, the foreign key check of each one it deletes, a Human settlement's followers
sa.Index("requests_execution", requests.c.execution_id)
sa.Index(
    "active_request_execution",
    requests.c.execution_id,
    sqlite_where=sa.text(_in("status", ACTIVE_REQUEST_STATUSES)),
)
# The same condition as a query term (qualified: ``runs`` has a ``status`` too). A query
# that holds it word for word may read the partial index above, which has only the active
# requests, instead of every request of every Run (SQLite proves a partial index usable
# only from the same literals, never from bound parameters).
IN_ACTIVE_REQUEST_INDEX = sa.text(_in("requests.status", ACTIVE_REQUEST_STATUSES))


# The parts Runs share (revision 6), each kept once by the SHA-256 of its text: a Run's
# ``definitions``, and the part of a settled request's document that is not its own
# identity (``adapters.sqlite.rows``). ``prune`` removes those no row names any more.
def _shared_parts(name: str) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        sa.Column("digest", sa.Text, primary_key=True),
        sa.Column("data", sa.Text, nullable=False),
    )


run_definitions = _shared_parts("run_definitions")
request_bodies = _shared_parts("request_bodies")

# A record's last use since the last fold (revision 7): when it has a row here, that row's
# ``used`` is its last use, else its ``last_used``; folded into ``last_used`` before the
# least-recently-used record is looked for. No reference to ``executions``: a record
# leaving the history removes its row.
record_uses = sa.Table(
    "record_uses",
    metadata,
    sa.Column("execution_id", sa.Text, primary_key=True),
    sa.Column("used", sa.Text, nullable=False),
)

state_meta = sa.Table(
    "state_meta",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

# One row (id 1): a random value each write to ``executions`` that could change a reuse sets
# anew (triggers of revision 5; ``last_used`` alone does not). A replayed Run's plan holds
# the value it was made at (``StateStore.history_stamp``).
history_stamp = sa.Table(
    "history_stamp",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("value", sa.Text, nullable=False),
)

mcp_sessions = sa.Table(
    "mcp_sessions",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("repo", sa.Text, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("ended_at", sa.Text, nullable=True),
    sa.Column("data", sa.Text, nullable=False),
)

mcp_calls = sa.Table(
    "mcp_calls",
    metadata,
    sa.Column("session_id", sa.Text, sa.ForeignKey("mcp_sessions.id"), primary_key=True),
    sa.Column("ordinal", sa.Integer, primary_key=True),
    sa.Column("tool", sa.Text, nullable=False),
    sa.Column("argument_bytes", sa.Integer, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("completed_at", sa.Text, nullable=True),
    sa.Column("is_error", sa.Boolean, nullable=True),
    sa.Column("duration_ms", sa.Integer, nullable=True),
    sa.Column("summary", sa.Text, nullable=True),
)
