"""The order test files are handed to xdist workers (the longest first), and how hypothesis
picks its examples (the same ones on every CI run; new ones under ``make soak``).

``make test`` distributes whole files (``--dist loadfile``), in collection order, to workers
as they free up. In collection order only with ``--no-loadscope-reorder``, which the
Makefile passes: by default xdist re-sorts the files by their number of tests, most first,
which handed out the one-test tour and the five-test installed tool last. A long file collected last (the ``test_verify_*`` files sort last) starts
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


# Longest first, as measured on the 2-core machine (seconds of one worker, rounded; a
# four-worker `make test` under a load of about 8 from other work, 2026-12-06: slower than an
# idle machine's). Only the order matters.
LONGEST_FILES = (
    "tests/integration/test_scale_counts.py",  # 112
    "tests/integration/test_file_index_status.py",  # 91
    "tests/integration/test_installed_tool.py",  # 113 -> ~85 (pip without compiling all)
    "tests/integration/test_readme_tour.py",  # 143 -> ~70 (the tool caches its bytecode)
    "tests/integration/faults/test_tui_hangups.py",  # 66
    "tests/integration/faults/test_state_repair.py",  # 65
    "tests/integration/test_init_cli.py",  # 64
    "tests/integration/test_mcp_server.py",  # 59
    "tests/integration/test_mcp_control.py",  # 58
    "tests/integration/test_human_reviews.py",  # 58
    "tests/integration/faults/test_stream_bounds.py",  # 58
    "tests/windows/test_cli_end_to_end.py",  # 52
    "tests/integration/hostile/test_kill9.py",  # 51
    "tests/integration/test_review_store_server.py",  # 49
    "tests/integration/faults/test_hangups.py",  # 49
    "tests/integration/faults/test_full_disk.py",  # 48
    "tests/integration/test_saved_keys_cli.py",  # 46
    "tests/integration/test_web_team_store.py",  # 44
    "tests/integration/test_web.py",  # 41
    "tests/integration/test_tool_sessions.py",  # 27
    "tests/integration/faults/test_damaged_state.py",  # 23
    "tests/integration/test_verify_progress.py",  # 21
    "tests/integration/test_verify_leases.py",  # 19
    "tests/integration/faults/test_damaged_conversation.py",  # 19
    "tests/integration/test_web_security.py",  # 15
    "tests/integration/test_review_store_db.py",  # 14
)


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, as artifactize does (anyio would add trio too)."""
    return "asyncio"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(LONGEST_FILES)}
    # A stable sort on the file alone: tests keep their order within a file.
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
