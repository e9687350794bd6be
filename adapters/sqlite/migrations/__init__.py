"""Alembic revisions of the local state database (run by ``adapters.sqlite.connection``)."""
