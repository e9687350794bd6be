"""A real SQLite state store opened for a test, at ``<state_dir>/state.sqlite``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from artifactize.adapters.sqlite.state import SqliteStateStore, SqliteStateStores


@contextmanager
def opened_sqlite_store(state_dir: Path) -> Iterator[SqliteStateStore]:
    """The store, created if need be, and closed on the way out."""
    opened = SqliteStateStores().open(str(state_dir), create=True)
    assert opened is not None  # create=True always opens
    try:
        yield opened
    finally:
        opened.close()
