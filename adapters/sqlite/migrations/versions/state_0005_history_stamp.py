"""Revision 5: a stamp of the history, changed by every write that could change a reuse.

An all-reused ``verify`` may write its Run again from the plan the previous one kept
(``domain.reviews.run.replay``) only while every verdict it reused, and every miss it
recorded, would be found the same. Those are all in ``executions``: so a trigger sets
``history_stamp`` to a new random value on every insert and delete there, and on every
update that sets a column other than ``last_used`` (a reuse touches that one alone, and
a Run that reuses must not change the stamp it was planned at). A random value, not a
counter: a database recovered by copying its rows (``adapters.sqlite.recovery``) or made
again from nothing can never come back to a value an older plan holds.

Frozen: later changes are new revisions, never edits here.
"""

from __future__ import annotations

from alembic import op

revision = "state_0005"
down_revision = "state_0004"
branch_labels = None
depends_on = None

_NEW_STAMP = "UPDATE history_stamp SET value = lower(hex(randomblob(16))) WHERE id = 1;"
# Every column of ``executions`` but ``last_used`` (tests/integration/test_history_stamp.py
# fails when a column is added and not named here).
_CHANGING_COLUMNS = (
    'id, "key", eval_def_hash, status, owner_pid, owner_start_time, backend, '
    "completed_at, bytes, data"
)


def upgrade() -> None:
    op.execute(
        "CREATE TABLE history_stamp (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),"
        " value TEXT NOT NULL)"
    )
    op.execute("INSERT INTO history_stamp (id, value) VALUES (1, lower(hex(randomblob(16))))")
    for name, event in (
        ("history_stamp_insert", "INSERT"),
        ("history_stamp_delete", "DELETE"),
        ("history_stamp_update", f"UPDATE OF {_CHANGING_COLUMNS}"),
    ):
        op.execute(f"CREATE TRIGGER {name} AFTER {event} ON executions BEGIN {_NEW_STAMP} END")


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
