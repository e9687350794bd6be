"""Alembic revisions of the review store database (run by ``adapters.review_store.database``)."""
