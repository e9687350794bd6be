"""Fixtures the hostile suite borrows from the suites it attacks (the store's ``api`` runs
on each engine, so its engine fixtures come along)."""

from tests.integration.test_review_store_server import (
    api,
    engine_database,
    postgresql_server,
    postgresql_url,
)
from tests.integration.test_tools_check_cli import env
from tests.support.fake_review_store import fake_store

__all__ = ["api", "engine_database", "env", "fake_store", "postgresql_server", "postgresql_url"]
