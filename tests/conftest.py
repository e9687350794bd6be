"""The order test files are handed to xdist workers: the longest first.

``make test`` distributes whole files (``--dist loadfile``), in collection order, to workers
as they free up. A long file collected last (the ``test_verify_*`` files sort last) starts
when the other worker is nearly done, and the run waits for it alone. Handing the longest
files out first and the many short ones last evens the workers' ends (longest processing
time first). The list is a hint measured with ``--durations``: a file missing from it only
runs in its collected place, and every test runs whatever the order.
"""

from __future__ import annotations

import pytest

# Longest first, as measured on the 2-core machine (seconds of one worker, rounded).
LONGEST_FILES = (
    "tests/integration/test_mcp_server.py",  # 110
    "tests/integration/test_verify_ci.py",  # 105
    "tests/integration/test_verify_cli.py",  # 60
    "tests/integration/test_readme_tour.py",  # 35
    "tests/integration/hostile/test_kill9.py",  # 32
    "tests/integration/test_config_check_cli.py",  # 30
    "tests/integration/test_review_store_server.py",  # 30
    "tests/integration/test_verify_runtime.py",  # 27
    "tests/integration/test_init_cli.py",  # 24
    "tests/integration/test_verify_remote.py",  # 22
    "tests/integration/test_models_doctor_cli.py",  # 22
    "tests/integration/test_model_backends.py",  # 20
    "tests/integration/test_status_cli.py",  # 19
    "tests/integration/test_verify_leases.py",  # 18
    "tests/integration/test_tool_sessions.py",  # 18
    "tests/integration/test_fingerprint_scripts.py",  # 17
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(LONGEST_FILES)}
    # A stable sort on the file alone: tests keep their order within a file.
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
