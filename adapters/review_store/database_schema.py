"""The review store schema as SQLAlchemy Core tables: what the code reads and writes.

The database itself is made by the Alembic revisions in ``adapters/review_store/migrations``
(on SQLite and PostgreSQL alike); a test checks that the head revision and these tables
agree, so a change here needs a revision.

``tokens``
    One row per token ever issued; ``hash`` is the SHA-256 of the token (never the token),
    ``scopes`` a JSON array, ``revoked_at`` set once revoked. Rows are never deleted, so a
    name is never reused.
``entries``
    Published records: the record's JSON text in ``data`` plus the columns lookups, LRU
    eviction and purges need. ``bytes`` is the UTF-8 size of ``data``; ``completed_at`` and
    ``last_used`` are fixed-width UTC text, so text order is time order.
``entry_totals`` (revision 4)
    One row (``id`` 1): how many records ``entries`` holds and the sum of their ``bytes``,
    changed in the transaction of every insert and delete of a record, so the check of
    the caps on each PUT reads one row instead of every record.
``leases``
    One row per reuse key a client is reviewing: ``holder`` (the client's opaque id),
    ``principal`` (its token's name), ``acquired_at`` and ``expires_at`` (server clock).
    A row past ``expires_at`` is free for the next client to take.
``waiting``
    One row per announced waiting Human request (``request_id``), with its repository
    label, publisher (token name), ``created_at`` (stored form), ``expires_at`` (server
    clock) and the announcement's JSON text in ``data``. A row past ``expires_at`` is
    never listed and is deleted by the next announcement.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("hash", sa.Text, nullable=False, unique=True),
    sa.Column("scopes", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("revoked_at", sa.Text, nullable=True),
)

entries = sa.Table(
    "entries",
    metadata,
    sa.Column("key", sa.Text, nullable=False),
    sa.Column("execution_id", sa.Text, nullable=False),
    sa.Column("publisher", sa.Text, nullable=False),
    sa.Column("completed_at", sa.Text, nullable=False),
    sa.Column("bytes", sa.Integer, nullable=False),
    sa.Column("last_used", sa.Text, nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.UniqueConstraint("key", "execution_id", name="entries_key_execution"),
    sa.Index("entries_by_key", "key", "completed_at"),
    sa.Index("entries_by_last_use", "last_used", "key"),
    sa.Index("entries_by_publisher", "publisher"),
)

entry_totals = sa.Table(
    "entry_totals",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("records", sa.BigInteger, nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.CheckConstraint("id = 1", name="entry_totals_one_row"),
)

leases = sa.Table(
    "leases",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("holder", sa.Text, nullable=False),
    sa.Column("principal", sa.Text, nullable=False),
    sa.Column("acquired_at", sa.Text, nullable=False),
    sa.Column("expires_at", sa.Text, nullable=False),
    sa.Index("leases_by_expiry", "expires_at"),
)

waiting = sa.Table(
    "waiting",
    metadata,
    sa.Column("request_id", sa.Text, primary_key=True),
    sa.Column("repository", sa.Text, nullable=False),
    sa.Column("publisher", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("expires_at", sa.Text, nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Index("waiting_by_repository", "repository", "request_id"),
    sa.Index("waiting_by_expiry", "expires_at"),
)

# SQLite's implicit row id (an identity column of that name on PostgreSQL): storage order,
# the tie-breaker after ``completed_at``.
entry_rowid: sa.ColumnClause[int] = sa.literal_column("entries.rowid", sa.Integer)
