"""Revision 6: the parts Runs share, written once.

An all-reused ``verify`` at 10,000 Artifacts wrote ~42 MB: its Run's 14 MB of
``definitions`` (every eval and Artifact it covers, written again at its end) and 14,362
request documents of ~2 KB each, every one the same as the previous Run's but for the
request's own ID, Run, ordinal and times. Now a Run's definitions are kept once per
content in ``run_definitions`` and the Run's row names them (``runs.definitions``); a
request created settled (reused, derived) keeps the part another Run's request may share
(everything but its own identity, times, summary, status and reviewer) once per content in
``request_bodies``, and its row names it (``requests.body``) and holds the rest. A row whose
column is NULL holds its whole document, as before: rows written before this revision are
read as they are (``adapters.sqlite.rows``).

Frozen: later changes are new revisions, never edits here.
"""

from __future__ import annotations

from alembic import op

revision = "state_0006"
down_revision = "state_0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("run_definitions", "request_bodies"):
        op.execute(f"CREATE TABLE {table} (digest TEXT NOT NULL PRIMARY KEY, data TEXT NOT NULL)")
    # SQLite adds a column with a reference only while its default is NULL (it is)
    op.execute("ALTER TABLE runs ADD COLUMN definitions TEXT REFERENCES run_definitions (digest)")
    # prune's sweep of the definitions no Run names, and SQLite's check of each it deletes
    op.create_index("runs_definitions", "runs", ["definitions"])
    # No reference and no index for a request's body: the digests are spread at random, so
    # each Run's 14,000 requests would rewrite nearly every page of an index as large as
    # every request ever kept (27 MB of 26 Runs at 10,000 Artifacts, per Run); a Run
    # writes its bodies before its requests and a replay checks they are held
    # (``replay_run``), a reader names a row whose body is missing, and ``prune`` sweeps
    # the bodies no request names in one pass.
    op.execute("ALTER TABLE requests ADD COLUMN body TEXT")


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
