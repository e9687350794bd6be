"""Alembic revisions of the review store database (run by ``adapters.review_store.database``).

``REVISIONS`` lists them oldest first; add a new revision's id here too.
"""

REVISIONS = ("store_0001", "store_0002", "store_0003", "store_0004")
