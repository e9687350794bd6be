"""The order test files are handed to xdist workers (the longest first), and how hypothesis
picks its examples (the same ones on every CI run; new ones under ``make soak``).

``make test`` distributes whole files (``--dist loadfile``), in collection order, to workers
as they free up. A long file collected last (the ``test_verify_*`` files sort last) starts
when the other worker is nearly done, and the run waits for it alone. Handing the longest
files out first and the many short ones last evens the workers' ends (longest processing
time first). The list is a hint measured with ``--durations``: a file missing from it only
runs in its collected place, and every test runs whatever the order.

Hypothesis draws its examples from a seed fixed by each test in CI, and at random under
``make soak``, which runs the hostile suite at ten times its counts.
"""

from __future__ import annotations

import pytest

from tests.support.hostile import scale

try:
    from hypothesis import settings
except ModuleNotFoundError:  # the Windows lane installs only what its own tests import
    pass
else:
    # CI draws the same examples on every run, so a failure belongs to the change that shows
    # it and reproduces; `make soak` (HOSTILE_SCALE above 1) draws new ones each time, to
    # explore. A CI run once failed on a bug no change had touched, found by a fresh draw.
    settings.register_profile("ci", derandomize=True, database=None)
    settings.register_profile("soak", derandomize=False, database=None)
    settings.load_profile("soak" if scale() > 1 else "ci")

# Longest first, as measured on the 2-core machine (seconds of one worker, rounded;
# `--durations=0` of a four-worker run, 2026-12-04).
LONGEST_FILES = (
    "tests/integration/test_verify_ci.py",  # 132
    "tests/integration/test_mcp_server.py",  # 100
    "tests/integration/test_verify_cli.py",  # 73
    "tests/integration/test_web.py",  # 60 (one server process a test; measured alone, loaded)
    "tests/integration/test_readme_tour.py",  # 54
    "tests/integration/test_verify_backends.py",  # 39
    "tests/windows/test_cli_end_to_end.py",  # 34
    "tests/integration/test_verify_runtime.py",  # 34
    "tests/integration/hostile/test_kill9.py",  # 33
    "tests/integration/test_config_check_cli.py",  # 32
    "tests/integration/test_init_cli.py",  # 31
    "tests/integration/test_verify_remote.py",  # 28
    "tests/integration/test_fingerprint_scripts.py",  # 27
    "tests/integration/test_review_store_server.py",  # 25
    "tests/integration/test_status_cli.py",  # 23
    "tests/integration/test_tool_sessions.py",  # 22
    "tests/integration/test_verify_progress.py",  # 21
    "tests/integration/test_models_doctor_cli.py",  # 20
    "tests/integration/hostile/test_fuzz.py",  # 19
)


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, as artifactize does (anyio would add trio too)."""
    return "asyncio"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(LONGEST_FILES)}
    # A stable sort on the file alone: tests keep their order within a file.
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
