"""``status`` through the CLI reads unchanged files from the file index: counts, not timings.

Each ``status`` runs in a fresh interpreter under cProfile; the call counts say how many
files were read and hashed (``artifactsum._read_digest``), how many declarations were
parsed (``discovery._Walker._parse``), how many folders the fingerprints listed
(``artifactsum._Walk._walk``: a kept walk lists none) and how many discovery listed
(``discovery._Walker.walk``: a kept discovery lists none). The tree is left ``RACY_MARGIN_NS`` old before the
runs that count (the real margin: these are the real commands), so the index may keep it.
"""

from __future__ import annotations

import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.file_index import RACY_MARGIN_NS
from artifactize.entrypoints.container import FILE_INDEX_FILE
from bench.scale import ENV, cli
from tests.support.profiled_cli import PROFILED_CLI
from tests.support.workspaces import declare, write

FILES_HASHED = ("domain/reviews/reuse/artifactsum.py", "_read_digest")
FOLDERS_LISTED = ("domain/reviews/reuse/artifactsum.py", "_walk")  # by the fingerprints
DECLARATIONS_PARSED = ("domain/project/discovery.py", "_parse")
FOLDERS_DISCOVERED = ("domain/project/discovery.py", "walk")  # listed by discovery
BATCHES = ("domain/reviews/run/fingerprint_jobs.py", "run_batch")  # worker-thread hops
IDENTITIES = ("adapters/posix/filesystem.py", "_identity_of")  # a FileIdentity built
IDENTITY_KEYS = ("adapters/posix/filesystem.py", "_identity_key_of")  # a kept walk's entry
DEFINITIONS_HASHED = ("domain/reviews/reuse/", "eval_def_hash")  # an eval's evalDefHash
GONE_CHECKED = ("adapters/file_index.py", "_gone")  # a row's file stat-ed as the index saves
MODULES = 3
FILES_PER_MODULE = 4


def _declaration(m: int) -> dict[str, object]:
    return {
        "name": f"m{m}",
        "evals": {
            "t": {
                "title": "t",
                "profile": {"kind": "human"},
                "payload": {"instruction": f"Check {{m{m}}}."},
            }
        },
    }


def _repo(root: Path) -> None:
    declare(root, {"name": "root"})
    for m in range(MODULES):
        declare(root / f"m{m}", _declaration(m))
        for f in range(FILES_PER_MODULE):
            write(root / f"m{m}" / "src" / f"f{f}.py", f"value = {f}\n")


def _wait_until_safely_old() -> None:
    time.sleep(RACY_MARGIN_NS / 1e9 + 0.1)


def _status(
    repo: Path, state: Path, out: Path, *command_args: str, codes: tuple[int, ...] = (0, 1)
) -> tuple[dict[str, object], dict[str, int]]:
    """``status --json`` (or ``command_args``) run under the profiler: its answer, and how
    many files it hashed and declarations it parsed."""
    args = command_args or ("status", "--json")
    command = [sys.executable, "-c", PROFILED_CLI, str(out), *cli(repo, state, *args)[3:]]
    done = subprocess.run(command, cwd=repo, env=ENV, capture_output=True, check=False)
    assert done.returncode in codes, done.stderr.decode(errors="replace")[-2000:]
    counts = dict.fromkeys(("hashed", "parsed", "listed", "discovered", "batches"), 0)
    counts.update(identities=0, keys=0, definitions=0, gone=0)
    stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    counted = (
        ("hashed", FILES_HASHED),
        ("parsed", DECLARATIONS_PARSED),
        ("listed", FOLDERS_LISTED),
        ("discovered", FOLDERS_DISCOVERED),
        ("batches", BATCHES),
        ("identities", IDENTITIES),
        ("keys", IDENTITY_KEYS),
        ("definitions", DEFINITIONS_HASHED),
        ("gone", GONE_CHECKED),
    )
    for (filename, _line, name), (_primitive, calls, *_rest) in stats.items():
        where = (filename.replace(os.sep, "/"), name)
        for key, (ending, function) in counted:
            if (where[0].endswith(ending) or ending in where[0]) and where[1] == function:
                counts[key] += calls
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    return report, counts


def test_a_second_status_reads_nothing_and_an_edit_reads_one_file(tmp_path: Path) -> None:
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    # each module lists its folder and src/ (the root has no eval: no key needs its sum)
    everything = {"hashed": MODULES * FILES_PER_MODULE, "parsed": MODULES + 1}
    folders = 1 + 2 * MODULES  # the root, each module and its src/
    first, counts = _status(repo, state, tmp_path / "1.prof")
    assert _without_batches(counts) == {**everything, "listed": 2 * MODULES, "discovered": folders}
    second, counts = _status(repo, state, tmp_path / "2.prof")
    # every walk is kept, and the discovery
    assert _without_batches(counts) == {"hashed": 0, "parsed": 0, "listed": 0, "discovered": 0}
    assert second == first

    write(repo / "m1" / "src" / "f2.py", "value = 'edited'\n")
    _edited, counts = _status(repo, state, tmp_path / "3.prof")
    # m1 walked again; no folder's entries changed: the discovery is still kept
    assert _without_batches(counts) == {"hashed": 1, "parsed": 0, "listed": 2, "discovered": 0}

    _wait_until_safely_old()
    _status(repo, state, tmp_path / "settle.prof")  # f2.py is kept now, if it was racy before
    declare(repo / "m2", {"name": "m2", "tags": ["edited"]})
    _redeclared, counts = _status(repo, state, tmp_path / "4.prof")
    # a declaration changed: discovery walks the tree again (and reads only that one)
    assert _without_batches(counts) == {
        "hashed": 0,
        "parsed": 1,
        "listed": 0,
        "discovered": folders,
    }


def _without_batches(counts: dict[str, int]) -> dict[str, int]:
    """The counts but the worker-thread hops (their number follows the machine's CPUs) and
    the stats (``test_a_kept_walk_checks_its_entries_as_key_text``)."""
    return {
        key: value
        for key, value in counts.items()
        if key not in ("batches", "identities", "keys", "definitions", "gone")
    }


def test_saving_after_an_edit_stats_only_the_rows_no_walk_confirmed(tmp_path: Path) -> None:
    """After a one-file edit the index saves what it learned, and drops the rows of files
    now gone: it stats only the rows that nothing this run used or confirmed. A kept walk's
    recall has just seen each of its files, so only the edited file's old row is checked
    (and dropped); before, every file of every unchanged Artifact was stat-ed again."""
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    _status(repo, state, tmp_path / "1.prof")
    _status(repo, state, tmp_path / "2.prof")
    write(repo / "m1" / "src" / "f2.py", "value = 'edited'\n")
    _wait_until_safely_old()  # the edited file is kept, so its new row is saved
    _edited, counts = _status(repo, state, tmp_path / "3.prof")
    assert (counts["hashed"], counts["gone"]) == (1, 1)
    unindexed_edit, _ = _status(repo, state, tmp_path / "4.prof")
    (state / FILE_INDEX_FILE).unlink()  # the index is an optimisation only
    unindexed, _ = _status(repo, state, tmp_path / "5.prof")
    assert unindexed == unindexed_edit


def test_a_kept_walk_checks_its_entries_as_key_text(tmp_path: Path) -> None:
    """A warm ``status`` checks each kept walk's folders and files by their identity's key
    text (one per entry: each module's src/ and its files), building no ``FileIdentity``
    for them: the identities it builds are discovery's and each walk's owner folder."""
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    _status(repo, state, tmp_path / "1.prof")
    _second, counts = _status(repo, state, tmp_path / "2.prof")
    assert counts["keys"] == MODULES * (1 + FILES_PER_MODULE)
    folders = 1 + 2 * MODULES  # the root, each module and its src/: discovery's kept check
    declarations = MODULES + 1
    assert counts["identities"] == folders + declarations + MODULES


def test_a_warm_status_hashes_no_unchanged_definition(tmp_path: Path) -> None:
    """Each eval's definition hash is kept with its declaration in the file index: the first
    ``status`` hashes each definition once (as discovery parses it), a second none, and
    after one declaration's edit only that declaration's eval; the answers are the same as
    without the index."""
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    first, counts = _status(repo, state, tmp_path / "1.prof")
    assert counts["definitions"] == MODULES  # one eval per module, none at the root
    second, counts = _status(repo, state, tmp_path / "2.prof")
    assert (counts["definitions"], counts["parsed"]) == (0, 0)
    assert second == first
    declare(repo / "m2", {**_declaration(2), "tags": ["edited"]})
    edited, counts = _status(repo, state, tmp_path / "3.prof")
    assert (counts["definitions"], counts["parsed"]) == (1, 1)
    (state / FILE_INDEX_FILE).unlink()  # the index is an optimisation only
    unindexed, counts = _status(repo, state, tmp_path / "4.prof")
    assert counts["parsed"] == MODULES + 1
    assert unindexed == edited


def test_status_computes_keys_without_a_script_on_its_own_thread(tmp_path: Path) -> None:
    """With two fingerprint jobs, keys that need no fingerprint script are computed on the
    command's own thread, kept or not (two threads running that Python only contend for
    the interpreter lock): no batch goes to a worker, whether every file is hashed (the
    first status), none (the second) or the two edited ones."""
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    args = ("status", "--json", "--fingerprint-jobs", "2")
    first, counts = _status(repo, state, tmp_path / "1.prof", *args)
    assert (counts["batches"], counts["hashed"]) == (0, MODULES * FILES_PER_MODULE)
    second, counts = _status(repo, state, tmp_path / "2.prof", *args)
    assert (counts["batches"], counts["hashed"]) == (0, 0)
    assert second == first
    write(repo / "m1" / "src" / "f2.py", "value = 'edited'\n")
    write(repo / "m2" / "src" / "f0.py", "value = 'edited'\n")
    _edited, counts = _status(repo, state, tmp_path / "3.prof", *args)
    assert (counts["batches"], counts["hashed"]) == (0, 2)


WAITING_FOR_A_PERSON = 4  # verify's exit code while Human reviews wait (docs/cli.md)


def test_verify_computes_its_keys_from_the_index_too(tmp_path: Path) -> None:
    """A ``verify`` after a ``status`` on the unchanged tree hashes no file and parses no
    declaration; after a one-file edit it hashes that one file."""
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    _status(repo, state, tmp_path / "1.prof")
    verify = ("verify", "--all", "--json")
    _run, counts = _status(repo, state, tmp_path / "2.prof", *verify, codes=(WAITING_FOR_A_PERSON,))
    assert counts["hashed"] == counts["parsed"] == 0
    write(repo / "m0" / "src" / "f1.py", "value = 'edited'\n")
    _run, counts = _status(repo, state, tmp_path / "3.prof", *verify, codes=(WAITING_FOR_A_PERSON,))
    assert counts["hashed"] == 1


def test_status_with_a_damaged_index_is_the_same_status(tmp_path: Path) -> None:
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    fresh, _ = _status(repo, state, tmp_path / "1.prof")
    (state / "file-index.sqlite").write_bytes(b"\x00garbage" * 100)
    damaged, counts = _status(repo, state, tmp_path / "2.prof")
    assert damaged == fresh
    assert counts["parsed"] == MODULES + 1  # read again, not trusted
    rebuilt, counts = _status(repo, state, tmp_path / "3.prof")
    assert rebuilt == fresh
    assert _without_batches(counts) == {"hashed": 0, "parsed": 0, "listed": 0, "discovered": 0}


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below ``root``: its bytes and its mtime."""
    return {
        str(path.relative_to(root)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_config_check_reads_the_kept_declarations_and_writes_nothing(tmp_path: Path) -> None:
    """``config check`` and ``config graph`` take the declarations ``status`` parsed from
    the file index and parse none of them again, write nothing to the state home, answer
    as without the index, and see a declaration edited since (now invalid)."""
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    _status(repo, state, tmp_path / "status.prof")  # fills the index
    kept = _tree(state)
    assert FILE_INDEX_FILE in kept
    check, counts = _status(repo, state, tmp_path / "1.prof", "--json", "config", "check")
    assert counts["parsed"] == 0
    graph, counts = _status(repo, state, tmp_path / "2.prof", "--json", "config", "graph")
    assert counts["parsed"] == 0
    assert _tree(state) == kept  # nothing written, not even a journal
    moved = tmp_path / "moved"
    (state / FILE_INDEX_FILE).rename(moved)
    assert _status(repo, state, tmp_path / "3.prof", "--json", "config", "check")[0] == check
    assert _status(repo, state, tmp_path / "4.prof", "--json", "config", "graph")[0] == graph
    moved.rename(state / FILE_INDEX_FILE)
    declare(repo / "m1", {**_declaration(1), "unknown_key": 1})
    refused, counts = _status(
        repo, state, tmp_path / "5.prof", "--json", "config", "check", codes=(2,)
    )
    assert counts["parsed"] == 1 and "unknown_key" in json.dumps(refused)
    assert _tree(state) == kept


def test_the_first_verify_of_a_new_state_home_keeps_what_its_keys_read(tmp_path: Path) -> None:
    """The first ``verify`` finds no state home when it loads the workspace, and creates it
    before its keys: what they hash is kept, so the next ``status`` hashes no file (it
    parses the declarations, which the load read without an index)."""
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    _wait_until_safely_old()
    verify = ("verify", "--all", "--json")
    _run, counts = _status(repo, state, tmp_path / "1.prof", *verify, codes=(WAITING_FOR_A_PERSON,))
    assert counts["hashed"] == MODULES * FILES_PER_MODULE
    assert (state / "file-index.sqlite").is_file()
    _report, counts = _status(repo, state, tmp_path / "2.prof")
    assert counts["hashed"] == 0 and counts["parsed"] == MODULES + 1


def test_verify_computes_keys_without_a_script_on_its_own_thread(tmp_path: Path) -> None:
    """As ``status``: with two fingerprint jobs, ``verify`` hands no batch to a worker when no
    fingerprint runs a script (a 10,000-Artifact verify's warm keys: 2.0 s of wall time on
    two jobs against 0.9 s on one; an empty file index's: 13.7 s against 10.3 s)."""
    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    verify = ("verify", "--all", "--json", "--fingerprint-jobs", "2")
    codes = (WAITING_FOR_A_PERSON,)
    _first, counts = _status(repo, state, tmp_path / "1.prof", *verify, codes=codes)
    assert (counts["batches"], counts["hashed"]) == (0, MODULES * FILES_PER_MODULE)
    _second, counts = _status(repo, state, tmp_path / "2.prof", *verify, codes=codes)
    assert (counts["batches"], counts["hashed"]) == (0, 0)
    write(repo / "m1" / "src" / "f2.py", "value = 'edited'\n")
    write(repo / "m2" / "src" / "f0.py", "value = 'edited'\n")
    _edited, counts = _status(repo, state, tmp_path / "3.prof", *verify, codes=codes)
    assert (counts["batches"], counts["hashed"]) == (0, 2)


def _parsed(profile: Any) -> int:
    """Declarations parsed under ``profile`` (a ``cProfile.Profile``)."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    return sum(
        calls
        for (filename, _line, name), (_primitive, calls, *_rest) in stats.items()
        if filename.replace(os.sep, "/").endswith(DECLARATIONS_PARSED[0])
        and name == DECLARATIONS_PARSED[1]
    )


@pytest.mark.parametrize("reader", ["mcp", "human review", "tools check", "doctor", "control"])
def test_the_other_readers_of_the_workspace_read_the_index(tmp_path: Path, reader: str) -> None:
    """``artifactize mcp`` (an eval's server and the control surface), each Human review
    action's check, ``tools check`` and ``doctor`` load the workspace as ``config check``
    does, from the file index (nothing written): after a ``status`` they parse no
    declaration. At 10,000 Artifacts they parsed all 10,000 (``artifactize mcp`` answered its
    client's ``initialize`` 3.3–4.3 s after its start; 2.4–2.6 s now)."""
    import cProfile

    from artifactize.domain.use_cases.serving import ServeSelection
    from artifactize.entrypoints.bootstrap import Services
    from artifactize.entrypoints.cli.global_options import GlobalOptions
    from artifactize.entrypoints.container import Container

    repo, state = tmp_path / "repo", tmp_path / "state"
    _repo(repo)
    state.mkdir()
    _wait_until_safely_old()
    _status(repo, state, tmp_path / "1.prof")  # fills the index
    index = state / FILE_INDEX_FILE
    before = index.stat().st_mtime_ns
    options = GlobalOptions(repo=str(repo), state_dir=str(state))
    services = Services(Container(), options, progress=lambda _: None)
    profile = cProfile.Profile()
    with profile:
        if reader == "mcp":
            services.prepare_server(ServeSelection(artifact="m1"), "stdio").finish()
        elif reader == "control":
            services.prepare_control("stdio").finish()
        elif reader == "human review":
            store = services.open_state(create=True)
            assert store is not None
            services.human_reviews(store).ports.load(str(repo))
        elif reader == "tools check":
            services.tools_check().load(str(repo))
        else:
            _doctor, workspace, error = services.doctor()
            assert workspace is not None and error is None
    assert _parsed(profile) == 0
    assert index.stat().st_mtime_ns == before  # read, not written
