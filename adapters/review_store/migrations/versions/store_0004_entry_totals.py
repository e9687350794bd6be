"""Revision 4: how many records the store keeps, and their bytes, kept in one row.

Every stored record asks whether the store is over its caps (100,000 records, 4 GiB).
That was ``count(*)`` and ``sum(bytes)`` over every record, read whole: a PUT's time grew
with the store (1.7 ms at the first of 10,000 records, 5.1 ms at the last; a store at its
caps would read 4 GiB per PUT). ``entry_totals`` holds both sums, changed in the same
transaction as every insert and delete of a record, so the check reads one row. Filled
here from the records already stored.

Frozen: later changes are new revisions, never edits here.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "store_0004"
down_revision = "store_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "entry_totals",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("records", sa.BigInteger, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.CheckConstraint("id = 1", name="entry_totals_one_row"),
    )
    op.execute(
        "INSERT INTO entry_totals (id, records, bytes) "
        "SELECT 1, count(*), coalesce(sum(bytes), 0) FROM entries"
    )


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
