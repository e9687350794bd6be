"""Alembic migrations, run by the program itself when it opens a database.

The local state (``state.sqlite``) and the review store (SQLite or PostgreSQL) each have a
folder of Alembic revisions (``adapters/sqlite/migrations/versions``,
``adapters/review_store/migrations/versions``); their first revision is the schema that
artifactize wrote before migrations existed (``PRAGMA user_version = 1``, no version
table). There is no ``env.py`` and no ``alembic`` command to run: ``upgrade`` is called
with a connection that is already inside the opener's transaction, so a migration either
completes with the rest of the open or leaves the database as it was.

Version rules, the same for both databases:

* the ``alembic_version`` table names the revision; a revision this program does not know
  was written by a newer artifactize: the database is refused and left untouched;
* on SQLite, ``PRAGMA user_version`` is kept at the revision's ordinal (1, 2, …), so an
  artifactize from before migrations refuses a migrated file instead of misreading it, and
  a file with ``user_version`` 1 and no version table is revision 1 (it is stamped, then
  upgraded).

Alembic is imported only here, when a database is opened.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

VERSION_TABLE = "alembic_version"


class SchemaVersionError(Exception):
    """The database's schema cannot be used by this program (newer, or not ours)."""


@dataclass(frozen=True)
class Migrations:
    """One database kind's revisions; ``label`` names it in messages.

    ``revisions`` lists the revision ids oldest first, written out in the migrations
    package (a test checks it against the revision files), so an open that finds the head
    revision never imports Alembic (over a second of CPU on a busy machine)."""

    location: Path
    label: str
    revisions: tuple[str, ...]

    @functools.cached_property
    def script(self) -> ScriptDirectory:
        from alembic.script import ScriptDirectory

        return ScriptDirectory(str(self.location))

    @property
    def order(self) -> tuple[str, ...]:
        """Revision ids from the first to the head (the history is one straight line)."""
        return self.revisions

    def script_order(self) -> tuple[str, ...]:
        """The order the revision files themselves give (what ``revisions`` must equal)."""
        revisions = [script.revision for script in self.script.walk_revisions("base", "heads")]
        return tuple(reversed(revisions))

    @property
    def head(self) -> str:
        return self.order[-1]

    @property
    def first(self) -> str:
        return self.order[0]

    def ordinal(self, revision: str) -> int:
        """1 for the first revision; what SQLite's ``user_version`` holds at ``revision``."""
        return self.order.index(revision) + 1

    def current(self, connection: sa.Connection) -> str | None:
        """The revision recorded in the version table, or None without one."""
        if not sa.inspect(connection).has_table(VERSION_TABLE):
            return None
        rows = connection.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").all()
        if len(rows) != 1:
            raise SchemaVersionError(
                f"The {self.label} has {len(rows)} rows in {VERSION_TABLE}; expected one."
            )
        return str(rows[0][0])

    def check_known(self, revision: str, database: str) -> None:
        if revision not in self.order:
            raise SchemaVersionError(
                f"The {self.label} {database} has schema revision {revision}, which this "
                f"artifactize does not know (its newest is {self.head}): a newer artifactize "
                "migrated it. Upgrade artifactize; the database was left unchanged."
            )

    def upgrade(self, connection: sa.Connection, current: str | None) -> bool:
        """Upgrade to the head inside the caller's transaction (``current`` None: an empty
        database, every revision runs); whether anything ran."""
        if current == self.head:
            return False
        from alembic.operations import Operations
        from alembic.runtime.migration import MigrationContext

        script = self.script

        def steps(revision: Any, _context: Any) -> Any:
            return script._upgrade_revs("head", revision)

        context = MigrationContext.configure(
            connection, opts={"fn": steps, "version_table": VERSION_TABLE}
        )
        with Operations.context(context):
            context.run_migrations()
        return True

    def stamp(self, connection: sa.Connection, revision: str) -> None:
        """Record ``revision`` in the version table without running anything (a database
        made before migrations existed)."""
        from alembic.runtime.migration import MigrationContext

        context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        context.stamp(self.script, revision)
