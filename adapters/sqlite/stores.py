"""``StateStores`` that imports SQLAlchemy only when there is a state to open.

``status``, ``run list``, ``request list`` and the other readers never create a state; before
the first ``verify`` there is none, and their answer ("nothing yet") needs no database
library. SQLAlchemy and the store's modules are a fifth of such a command's start, so the
composition root hands out this opener: it checks the files itself (the same refusals) and
builds the real ``SqliteStateStores`` on the first open that finds or creates a database.
``mcp log`` reads the MCP audit (in the same state file) the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from artifactize.adapters.sqlite.state_files import check_state_files, state_file
from artifactize.ports.clock import Clock
from artifactize.ports.state import StateStore

if TYPE_CHECKING:
    from artifactize.adapters.sqlite.mcp_audit import SqliteMcpAuditStores
    from artifactize.adapters.sqlite.state import SqliteStateStores
    from artifactize.ports.mcp_audit import McpAuditStore


class SqliteStatesOnDemand:
    """The ``StateStores`` port; see the module docstring."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock
        self._stores: SqliteStateStores | None = None

    def open(self, state_dir: str, *, create: bool, read_only: bool = False) -> StateStore | None:
        if (not create or read_only) and not check_state_files(state_file(state_dir)):
            return None
        if self._stores is None:
            from artifactize.adapters.sqlite.state import SqliteStateStores

            self._stores = SqliteStateStores(clock=self._clock)
        return self._stores.open(state_dir, create=create, read_only=read_only)


class SqliteMcpAuditOnDemand:
    """The ``McpAuditStores`` port, with the same check before SQLAlchemy is imported."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock
        self._stores: SqliteMcpAuditStores | None = None

    def open(self, state_dir: str, *, create: bool) -> McpAuditStore | None:
        if not create and not check_state_files(state_file(state_dir)):
            return None
        if self._stores is None:
            from artifactize.adapters.sqlite.mcp_audit import SqliteMcpAuditStores

            self._stores = SqliteMcpAuditStores(clock=self._clock)
        return self._stores.open(state_dir, create=create)
