"""Fixtures the hostile suite borrows from the suites it attacks."""

from tests.integration.test_review_store_server import api
from tests.integration.test_tools_check_cli import env
from tests.support.fake_review_store import fake_store

__all__ = ["api", "env", "fake_store"]
