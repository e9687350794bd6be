"""Work grows linearly with the repository: counts of the expensive steps, not timings.

The same generated repository (``bench/scale.py``'s generator) at 100 and at 1,000
Artifacts, its state filled by one ``verify --all``; then ``status`` and an all-reused
``verify --all`` each run under ``cProfile`` in a fresh interpreter, and the profile's call
counts say how often each expensive step ran: the relation map built, files looked at,
SQL statements executed, transactions committed, Python calls in all. Ten times the
Artifacts may cost at most about ten times each count (``LINEAR_MAX``); the relation map
and the commits do not grow at all. A quadratic step (a relations scan per Artifact, a
query per eval over every record) shows as a ratio near 100.
"""

from __future__ import annotations

import os
import pstats
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.scale import ENV, REUSE_ONLY, cli, generate, let_settle
from tests.support.profiled_cli import PROFILED_CLI

SMALL, LARGE = 100, 1000
GROWTH = LARGE / SMALL
# Ten times the Artifacts: a linear count grows ~10x; allow for the fixed start-up calls
# below it and the generator's rounding above it.
LINEAR_MAX = GROWTH * 1.2
RUNTIME_EVERY = 10  # runtime evals on every tenth module keep the state fill short

# (file name ending, function name) -> what the count stands for
RELATION_MAPS = ("domain/project/workspace.py", "inputs")
# A file a fingerprint covers is stat-ed once (a no-follow stat: its identity), whether it
# is then hashed, taken from the file index, or checked by a kept walk (which hashes
# nothing, and stats its files and folders in one ``identity_keys_below`` call); declarations
# and folders are stat-ed the same way by discovery (a kept one lists nothing).
FILES_LOOKED_AT = ("adapters/posix/filesystem.py", "_lstat_entry")
STATEMENTS = ("~", "<method 'execute' of 'sqlite3.Cursor' objects>")
ROWS_UPDATED = ("adapters/sqlite/state.py", "_write_request")  # one request row rewritten
COMPONENTS_SETTLED = ("domain/reviews/run/gates.py", "_settle_component")  # gates computed
PARKED = ("domain/use_cases/verify.py", "_park")  # a waiting request looked at again
EVALS_SETTLED = ("domain/use_cases/verify.py", "_settle_request")  # dispatched to a slot
DERIVED = ("domain/reviews/run/derived.py", "settle_derived")  # a dependency eval settled
HISTORY_COUNTED = ("adapters/sqlite/history.py", "retained")  # the GC's whole-history count
COMMITS = ("~", "<method 'commit' of 'sqlite3.Connection' objects>")


# A built-in's name may hold its type's address (``__new__ of type object at 0x7f...``),
# which differs from process to process.
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
# A step counted fewer times than this at 1,000 Artifacts is start-up or per-command work,
# not per-Artifact work: its growth says nothing.
STEP_FLOOR = 2000

Counts = dict[tuple[str, str], int]
Profiles = dict[int, dict[str, Counts]]


def _profile(repo: Path, state: Path, out: Path, *args: str) -> dict[tuple[str, str], int]:
    """Call counts of one CLI command run under cProfile: (file, function) -> calls."""
    command = [sys.executable, "-c", PROFILED_CLI, str(out), *cli(repo, state, *args)[3:]]
    done = subprocess.run(command, cwd=repo, env=ENV, capture_output=True, check=False)
    assert done.returncode in (0, 1, 4), done.stderr.decode(errors="replace")[-2000:]
    counts: dict[tuple[str, str], int] = {}
    stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    for (filename, _line, name), (_primitive, calls, *_rest) in stats.items():
        key = (filename.replace(os.sep, "/"), _ADDRESS.sub("", name))
        counts[key] = counts.get(key, 0) + calls
    return counts


def _count(counts: dict[tuple[str, str], int], step: tuple[str, str]) -> int:
    suffix, name = step
    return sum(n for (file, func), n in counts.items() if func == name and file.endswith(suffix))


def _total(counts: dict[tuple[str, str], int]) -> int:
    return sum(counts.values())


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Profiles]:
    found: Profiles = {}
    for size in (SMALL, LARGE):
        root = tmp_path_factory.mktemp(f"scale-{size}")
        repo, state = root / "repo", root / "state"
        generate(repo, size, runtime_every=RUNTIME_EVERY)
        let_settle(repo)
        fill = ("verify", "--all", "--jobs", "2", *REUSE_ONLY)
        reused = ("verify", "--all", *REUSE_ONLY)
        filled = _profile(repo, state, root / "fill.prof", "--json", *fill)
        let_settle(state)  # each `status` below keeps its answer, at every size
        found[size] = {
            "fill": filled,
            "status": _profile(repo, state, root / "status.prof", "--json", "status"),
            "verify": _profile(repo, state, root / "verify.prof", "--json", *reused),
        }
        # The text answers are rendered by other code than the JSON ones (a text verify's
        # request lines once matched every request's head per line). The verify above wrote
        # the state: settled again, so what each text command does follows the size, not
        # how soon after that write it started (a state younger than the racy margin is
        # not trusted; under a loaded CI it was so at one size and not the other).
        let_settle(state)
        found[size]["status-text"] = _profile(repo, state, root / "status-text.prof", "status")
        let_settle(state)
        found[size]["verify-text"] = _profile(repo, state, root / "verify-text.prof", *reused)
    yield found


@pytest.mark.parametrize("command", ["status", "verify"])
def test_the_relation_map_is_built_once_whatever_the_size(profiles: Profiles, command: str) -> None:
    small = _count(profiles[SMALL][command], RELATION_MAPS)
    large = _count(profiles[LARGE][command], RELATION_MAPS)
    assert 1 <= small == large <= 2


@pytest.mark.parametrize("command", ["status", "verify"])
def test_files_looked_at_grow_with_the_files(profiles: Profiles, command: str) -> None:
    small = _count(profiles[SMALL][command], FILES_LOOKED_AT)
    large = _count(profiles[LARGE][command], FILES_LOOKED_AT)
    assert small > 0
    assert GROWTH * 0.8 <= large / small <= LINEAR_MAX


@pytest.mark.parametrize("command", ["status", "verify"])
def test_sql_statements_grow_at_most_linearly(profiles: Profiles, command: str) -> None:
    small = _count(profiles[SMALL][command], STATEMENTS)
    large = _count(profiles[LARGE][command], STATEMENTS)
    assert small > 0
    assert large / small <= LINEAR_MAX


def test_an_all_reused_verify_commits_a_fixed_number_of_times(
    profiles: Profiles,
) -> None:
    """One transaction per Run phase: creating the Run, the reuse phase, the finish."""
    small = _count(profiles[SMALL]["verify"], COMMITS)
    large = _count(profiles[LARGE]["verify"], COMMITS)
    assert small == large
    assert large <= 8


@pytest.mark.parametrize("command", ["status", "verify", "status-text", "verify-text"])
def test_python_calls_grow_at_most_linearly(profiles: Profiles, command: str) -> None:
    small = _total(profiles[SMALL][command])
    large = _total(profiles[LARGE][command])
    assert large / small <= LINEAR_MAX


@pytest.mark.parametrize("command", ["status", "verify", "status-text", "verify-text"])
def test_no_single_step_grows_faster_than_the_repository(profiles: Profiles, command: str) -> None:
    """Each function (and built-in) on its own, not only the total: a quadratic step small
    at 1,000 Artifacts hides in the total (the text verify's request heads, matched by a
    scan of every head per output line, were 21x here and 10 s of CPU at 10,000)."""
    small, large = profiles[SMALL][command], profiles[LARGE][command]
    grown = {
        step: (small.get(step, 0), calls)
        for step, calls in large.items()
        if calls >= STEP_FLOOR and calls > LINEAR_MAX * small.get(step, 0)
    }
    assert not grown, grown


def test_the_first_verify_schedules_each_eval_a_bounded_number_of_times(
    profiles: Profiles,
) -> None:
    """The fill: every eval is dispatched once, its gates settled and its parked request
    looked at again only when an input of it settled (not after every result), and the
    history counted once, not after every recorded verdict."""
    for step in (EVALS_SETTLED, COMPONENTS_SETTLED, PARKED, ROWS_UPDATED):
        small = _count(profiles[SMALL]["fill"], step)
        large = _count(profiles[LARGE]["fill"], step)
        assert small > 0, step
        assert GROWTH * 0.8 <= large / small <= LINEAR_MAX, (step, small, large)
    assert _count(profiles[SMALL]["fill"], HISTORY_COUNTED) == 1
    assert _count(profiles[LARGE]["fill"], HISTORY_COUNTED) == 1


def test_an_all_reused_verify_writes_each_request_row_once(profiles: Profiles) -> None:
    """Reused requests are written once, by the Run's creation, already settled with their
    summaries: none is rewritten (the reuse phase and the Run's end used to rewrite each,
    twice). The dependency evals, settled by the scheduler once their targets' verdicts are
    attached, are written once each, with their summaries too (the Run's end rewrote each
    again to add it): so rows rewritten == dependency evals, and the SQL statements beyond
    that do not grow with the reused evals (a few queries per 500 keys aside)."""
    statements = {}
    for size in (SMALL, LARGE):
        verify = profiles[size]["verify"]
        assert _count(verify, EVALS_SETTLED) == 0  # everything reused or reuse-only
        derived = _count(verify, DERIVED)
        assert derived > 0
        assert _count(verify, ROWS_UPDATED) == derived
        statements[size] = _count(verify, STATEMENTS) - derived
    # Reading the newest records and touching them: one query each per 500 keys.
    assert statements[LARGE] - statements[SMALL] <= 2 * (LARGE // 500 + 1)
