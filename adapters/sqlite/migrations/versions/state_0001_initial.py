"""Revision 1: the state schema artifactize wrote before migrations (``user_version`` 1).

Frozen: later schema changes are new revisions, never edits here, so a database made by
any release upgrades through the same steps. The literals below are the status names of
that release (``ports/statuses.py``) written out, for the same reason.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "state_0001"
down_revision = None
branch_labels = None
depends_on = None

_ACTIVE = ("RUNNING", "WAITING_HUMAN")
_VERDICTS = ("GREEN", "RED")
_EXECUTION_STATUSES = (*_ACTIVE, *_VERDICTS, "ERROR")
_ACTIVE_REQUESTS = ("QUEUED", "RUNNING", "WAITING_HUMAN")


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(value) for value in values)})"


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("repo", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_index("runs_repo", "runs", ["repo"])
    op.create_table(
        "executions",
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
        sa.CheckConstraint(_in("status", _EXECUTION_STATUSES), name="execution_status"),
        sa.CheckConstraint(
            "(bytes IS NULL) = (last_used IS NULL)", name="history_columns_together"
        ),
        sa.CheckConstraint(
            "last_used IS NULL OR (key IS NOT NULL AND completed_at IS NOT NULL AND "
            f"{_in('status', _VERDICTS)})",
            name="history_only_completed_verdicts",
        ),
    )
    history = sa.text("last_used IS NOT NULL")
    op.create_index(
        "active_key",
        "executions",
        ["key"],
        unique=True,
        sqlite_where=sa.text(f"{_in('status', _ACTIVE)} AND key IS NOT NULL"),
    )
    op.create_index("history_by_key", "executions", ["key", "completed_at"], sqlite_where=history)
    op.create_index(
        "history_by_last_use",
        "executions",
        ["last_used", "key", "completed_at"],
        sqlite_where=history,
    )
    op.create_table(
        "requests",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("eval_id", sa.Text, nullable=False),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("execution_id", sa.Text, sa.ForeignKey("executions.id"), nullable=True),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("claimed_by", sa.Text, nullable=True),
        sa.Column("claimed_at", sa.Text, nullable=True),
        sa.Column("data", sa.Text, nullable=False),
        sa.UniqueConstraint("run_id", "ordinal", name="request_run_ordinal"),
        sa.UniqueConstraint("run_id", "eval_id", name="request_run_eval"),
    )
    op.create_index(
        "active_request_execution",
        "requests",
        ["execution_id"],
        sqlite_where=sa.text(_in("status", _ACTIVE_REQUESTS)),
    )
    op.create_table(
        "state_meta",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
