"""Alembic revisions of the local state database (run by ``adapters.sqlite.connection``).

``REVISIONS`` lists them oldest first; add a new revision's id here too.
"""

REVISIONS = (
    "state_0001",
    "state_0002",
    "state_0003",
    "state_0004",
    "state_0005",
    "state_0006",
    "state_0007",
)
