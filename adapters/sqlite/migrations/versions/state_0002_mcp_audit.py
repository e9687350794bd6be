"""Revision 2: the audit of ``artifactize mcp`` (one row per server run, one per call).

``mcp_sessions`` holds a server run (scope, repository, pins, start, end); ``mcp_calls``
one ordered entry per tools/call, written before the call runs and completed after it.

``if_not_exists``: the first builds of ``artifactize mcp`` created these same two tables
beside a revision-1 state (``CREATE TABLE IF NOT EXISTS``); such a state upgrades in place
and keeps its audit.

Frozen: later changes are new revisions, never edits here.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "state_0002"
down_revision = "state_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcp_sessions",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("repo", sa.Text, nullable=False),
        sa.Column("started_at", sa.Text, nullable=False),
        sa.Column("ended_at", sa.Text, nullable=True),
        sa.Column("data", sa.Text, nullable=False),
        if_not_exists=True,
    )
    op.create_table(
        "mcp_calls",
        sa.Column("session_id", sa.Text, sa.ForeignKey("mcp_sessions.id"), primary_key=True),
        sa.Column("ordinal", sa.Integer, primary_key=True),
        sa.Column("tool", sa.Text, nullable=False),
        sa.Column("argument_bytes", sa.Integer, nullable=False),
        sa.Column("started_at", sa.Text, nullable=False),
        sa.Column("completed_at", sa.Text, nullable=True),
        sa.Column("is_error", sa.Boolean, nullable=True),
        sa.Column("duration_ms", sa.Integer, nullable=True),
        sa.Column("summary", sa.Text, nullable=True),
        if_not_exists=True,
    )


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
