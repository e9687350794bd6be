"""The file index (adapters/file_index.py) on real files and real SQLite: whatever happens to
the files, a load and the artifactsums read through the index equal a fresh computation.

The property test edits, renames, touches, deletes, creates (in a new folder, ``.gitignore``
files too) and rewrites files at the same size with the same mtime (``os.utime``),
declarations included, between loads (and artifactsums: a folder's walk is kept too) that
each open the index anew (as separate processes would). It runs with a racy margin of ``TEST_MARGIN_NS``
instead of 2 s, so that a ``wait`` step can make files safely old within the test: the
margin still covers this machine's timestamp tick (nanosecond ext4/tmpfs times from a
clock of at most 10 ms ticks), which is all the rule needs.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from artifactize.adapters.file_index import (
    PAGE_SIZE,
    RACY_MARGIN_NS,
    WALK_CONTEXT,
    SqliteFileIndex,
    is_racy,
)
from artifactize.adapters.posix.filesystem import PosixDirectoryHandle, PosixFilesystem
from artifactize.domain.declarations.diagnostics import ConfigError
from artifactize.domain.project import discovery as discovery_module
from artifactize.domain.project.discovery import KEPT_CONTEXT, discover
from artifactize.domain.reviews.reuse.artifactsum import compute_artifactsum
from artifactize.domain.reviews.reuse.definition_hash import eval_def_hash
from artifactize.domain.reviews.reuse.errors import FingerprintError
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.ports.file_index import FileIndex
from artifactize.ports.filesystem import FileIdentity
from tests.support.workspaces import declare, write

TEST_MARGIN_NS = 30_000_000
STAMP = "test-stamp"

SOURCES = ["mod/src/a.py", "mod/src/b.py", "mod/notes.txt", "README.md", "mod/doc.md"]
DECLARATIONS = ["mod/index.artf", "mod/doc.md.artf"]


def _module(title: str) -> dict[str, Any]:
    return {
        "name": "mod",
        "evals": {
            "t": {
                "title": title,
                "profile": {"kind": "human"},
                "payload": {"instruction": "Check {mod}."},
            }
        },
    }


def _sidecar(title: str) -> str:
    return (
        'name = "doc"\n[evals.c]\n'
        f'title = "{title}"\nprofile = {{ kind = "human" }}\n'
        'payload.instruction = "Read {doc}."\n'
    )


def make_repo(root: Path) -> None:
    declare(root, {"name": "root"})
    declare(root / "mod", _module("t0"))
    for rel in SOURCES:
        write(root / rel, f"{rel}\n")
    write(root / "mod" / "doc.md.artf", _sidecar("s0"))


def results(root: Path, index: FileIndex | None) -> dict[str, Any]:
    """Everything the index could change: each declaration and source text, each sum."""
    filesystem = PosixFilesystem()
    try:
        workspace = ConfigService(filesystem, index=index).load(str(root))
    except ConfigError as exc:
        return {"error": str(exc)}
    out: dict[str, Any] = {}
    for name, artifact in sorted(workspace.artifacts.items()):
        out[name] = (artifact.declaration, artifact.source.text)
        try:
            value: str = compute_artifactsum(workspace, name, filesystem, index=index).value
        except FingerprintError as exc:
            value = str(exc)
        out[f"{name} sum"] = value
    if index is not None:
        index.save()
    return out


class Counted:
    """A file index that counts its answers (the test's view of whether it was used)."""

    def __init__(self, inner: FileIndex) -> None:
        self.inner = inner
        self.hits = 0
        self.asked = 0
        self.walks_asked = 0  # folders' walks (part of ``asked``)
        self.walk_hits = 0
        self.discoveries_asked = 0  # kept discoveries (not part of ``asked``)
        self.discovery_hits = 0

    def digest(self, identity: FileIdentity) -> bytes | None:
        found = self.inner.digest(identity)
        self.asked += 1
        self.hits += found is not None
        return found

    def remember_digest(self, identity: FileIdentity, path: str, digest: bytes) -> None:
        self.inner.remember_digest(identity, path, digest)

    def declaration(self, identity: FileIdentity, context: str) -> str | None:
        found = self.inner.declaration(identity, context)
        self.asked += 1
        self.hits += found is not None
        return found

    def remember_declaration(
        self, identity: FileIdentity, context: str, path: str, stored: str
    ) -> None:
        self.inner.remember_declaration(identity, context, path, stored)

    def walk(self, identity: FileIdentity, context: str) -> str | None:
        found = self.inner.walk(identity, context)
        if context.startswith(KEPT_CONTEXT):
            self.discoveries_asked += 1
            self.discovery_hits += found is not None
            return found
        self.asked += 1
        self.hits += found is not None
        self.walks_asked += 1
        self.walk_hits += found is not None
        return found

    def remember_walk(
        self,
        identity: FileIdentity,
        context: str,
        path: str,
        stored: str,
        covered: Sequence[FileIdentity],
    ) -> None:
        self.inner.remember_walk(identity, context, path, stored, covered)

    def confirmed(self, identity_keys: Sequence[str]) -> None:
        self.inner.confirmed(identity_keys)

    def save(self) -> None:
        self.inner.save()


def indexed(root: Path, state: Path, margin_ns: int = TEST_MARGIN_NS) -> Counted:
    return Counted(SqliteFileIndex(str(state / "file-index.sqlite"), STAMP, margin_ns=margin_ns))


# --- the property ------------------------------------------------------------------------

FILES = SOURCES + DECLARATIONS
# Written by a step, never by make_repo: a new folder in a walked one, and .gitignore files
# above a folder Artifact (its walk's context) and inside it (its walk is then not kept).
CREATED = ["mod/src/new/c.py", ".gitignore", "mod/src/.gitignore"]
contents = st.sampled_from(
    [b"x\n", b"y\n", b"zz\n", b"", b"name = 1\n", b"*.txt\n", b".gitignore\n", b".git*\nb.py\n"]
)
operations = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(FILES + CREATED), contents),
    st.tuples(st.just("same-size"), st.sampled_from(FILES), st.integers(0, 9)),
    st.tuples(st.just("rename"), st.sampled_from(FILES), st.sampled_from(FILES)),
    st.tuples(st.just("touch"), st.sampled_from(FILES), st.just(0)),
    st.tuples(st.just("delete"), st.sampled_from(SOURCES + CREATED), st.just(0)),
    st.tuples(st.just("wait"), st.just(""), st.just(0)),
    st.tuples(st.just("check"), st.just(""), st.just(0)),
)


def apply(root: Path, operation: tuple[str, str, Any]) -> None:
    kind, rel, arg = operation
    path = root / rel
    if kind == "wait":
        time.sleep(2 * TEST_MARGIN_NS / 1e9)
    elif kind == "write":
        write(path, arg)
    elif kind == "same-size" and path.exists():
        before = path.stat()
        data = path.read_bytes()
        if rel == "mod/index.artf":
            replacement = _module(f"t{arg}")
            declare(root / "mod", replacement)
        elif rel == "mod/doc.md.artf":
            path.write_text(_sidecar(f"s{arg}"))
        else:
            path.write_bytes(bytes((b + 1 + arg) % 256 for b in data))
        # the same size and the same mtime: only the ctime (or nothing, within one tick) tells
        if path.stat().st_size == before.st_size:
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif kind == "rename" and path.exists() and rel != arg:
        os.replace(path, root / arg)
    elif kind == "touch" and path.exists():
        os.utime(path)
    elif kind == "delete" and path.exists():
        path.unlink()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(operations, min_size=1, max_size=12))
def test_index_backed_results_equal_a_fresh_computation(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, Any]]
) -> None:
    base = tmp_path_factory.mktemp("index")
    root, state = base / "repo", base / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)  # the first check can already trust the index
    for step in [*steps, ("check", "", 0), ("wait", "", 0)]:
        apply(root, step)
        if step[0] in ("check", "wait"):
            index = indexed(root, state)
            assert results(root, index) == results(root, None)
    # the root's index.artf never changes: once safely old, the index answers for it
    assert index.hits >= 1


def test_a_known_unchanged_tree_is_read_from_the_index(tmp_path: Path) -> None:
    """Not a property: one filled index answers every file of an unchanged tree."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    first = results(root, indexed(root, state))
    index = indexed(root, state)
    assert results(root, index) == first == results(root, None)
    assert index.hits == index.asked
    # every declaration (and the root's index.artf); the walk of `mod` (a folder Artifact
    # below the root), so none of its files is asked; the root's README.md and the file
    # Artifact's doc.md (their walks are not kept: the root's, a named file's)
    assert index.walks_asked == index.walk_hits == 1
    assert index.asked == len(DECLARATIONS) + 1 + 1 + 2
    # the whole discovery too: its declarations were asked by their kept identities (above)
    assert index.discoveries_asked == index.discovery_hits == 1


# --- the racy rule -----------------------------------------------------------------------


def _identity(mtime_ns: int, ctime_ns: int) -> FileIdentity:
    return FileIdentity(1, 2, 3, mtime_ns, ctime_ns)


def test_a_file_is_racy_up_to_the_margin_before_the_index_was_opened() -> None:
    reference = 10 * RACY_MARGIN_NS
    at_limit = reference - RACY_MARGIN_NS
    assert not is_racy(_identity(at_limit - 1, at_limit - 1), reference)
    assert is_racy(_identity(at_limit, at_limit - 1), reference)  # the mtime at the limit
    assert is_racy(_identity(at_limit - 1, at_limit), reference)  # the ctime at the limit


def test_a_racy_file_is_not_kept(tmp_path: Path) -> None:
    """A file changed just now is read again next time, however quickly it changes again."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    index = SqliteFileIndex(str(state / "file-index.sqlite"), STAMP)  # the real 2 s margin
    results(root, index)
    assert not (state / "file-index.sqlite").exists()  # nothing was safely old: no write
    # the same bytes' identity, remembered as if read long after: kept
    later = SqliteFileIndex(
        str(state / "file-index.sqlite"), STAMP, now_ns=lambda: time.time_ns() + 10**10
    )
    results(root, later)
    assert (state / "file-index.sqlite").exists()


# --- damage, versions, bounds ------------------------------------------------------------


def _rows(state: Path) -> list[tuple[str, ...]]:
    with sqlite3.connect(state / "file-index.sqlite") as connection:
        return list(connection.execute("SELECT identity, context, path FROM entries"))


@pytest.mark.parametrize(
    "damage",
    [
        b"this is not a database",
        b"SQLite format 3\x00" + b"\xff" * 200,
        b"",
    ],
    ids=["garbage", "truncated", "empty"],
)
def test_a_damaged_index_is_ignored_and_rebuilt(tmp_path: Path, damage: bytes) -> None:
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    (state / "file-index.sqlite").write_bytes(damage)
    assert results(root, indexed(root, state)) == results(root, None)
    # rebuilt: every file, every declaration and the root's index.artf, the walk of `mod`,
    # and the whole discovery
    assert len(_rows(state)) == len(SOURCES) + len(DECLARATIONS) + 1 + 1 + 1
    index = indexed(root, state)
    assert results(root, index) == results(root, None)
    assert index.hits == index.asked > 0  # the rebuilt index answers


def test_an_index_of_another_shape_or_version_is_not_trusted(tmp_path: Path) -> None:
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    results(root, indexed(root, state))
    with sqlite3.connect(state / "file-index.sqlite") as connection:  # wrong digests
        connection.execute("UPDATE entries SET value = zeroblob(32) WHERE context = ''")
    other = Counted(SqliteFileIndex(str(state / "file-index.sqlite"), "another-version"))
    assert results(root, other) == results(root, None)
    assert other.hits == 0
    with sqlite3.connect(state / "file-index.sqlite") as connection:  # a table of its own
        connection.execute("DROP TABLE entries")
        connection.execute("CREATE TABLE entries (x)")
        connection.execute("INSERT INTO entries VALUES (1)")
    assert results(root, indexed(root, state)) == results(root, None)


def test_a_walk_is_kept_only_without_a_gitignore_of_its_own(tmp_path: Path) -> None:
    """A ``.gitignore`` inside the walk may ignore itself, so its rules would change with no
    identity the walk keeps: such a walk is never kept. One above the owner is part of the
    walk's context: a changed one is a different walk."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    write(root / "mod" / "src" / ".gitignore", ".gitignore\n")
    write(root / ".gitignore", "*.txt\n")
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    results(root, indexed(root, state))
    index = indexed(root, state)
    results(root, index)
    assert (index.walks_asked, index.walk_hits) == (1, 0)
    write(root / "mod" / "src" / ".gitignore", ".gitignore\nb.py\n")  # src's listing is unchanged
    write(root / ".gitignore", "notes.txt\n")
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    assert results(root, indexed(root, state)) == results(root, None)
    (root / "mod" / "src" / ".gitignore").unlink()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    results(root, indexed(root, state))  # kept now
    index = indexed(root, state)
    assert results(root, index) == results(root, None)
    assert (index.walks_asked, index.walk_hits) == (1, 1)
    write(root / ".gitignore", "*.md\n")  # the same size: only the rules changed
    assert results(root, indexed(root, state)) == results(root, None)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda kept: kept["files"].append(["src/gone.py", None]),  # a missing file, no key
        lambda kept: kept["folders"].append(["gone", None]),
        lambda kept: kept["files"].__setitem__(0, [kept["files"][0][0], 1]),
        lambda kept: kept["files"].__setitem__(0, [None, kept["files"][0][1]]),
        lambda kept: kept["files"].__setitem__(0, [["a"], ["b"]]),
        lambda kept: kept.pop("folders"),
        # Paths that name the very same entry (so its stored key matches) by a way no walk
        # gives: through the owner's parent, a ".", a doubled "/"; recall must not follow them
        # (a crafted index from an untrusted cache could so point anywhere below the parent).
        lambda kept: kept["files"].__setitem__(
            0, ["../mod/" + kept["files"][0][0], kept["files"][0][1]]
        ),
        lambda kept: kept["files"].__setitem__(
            0, ["./" + kept["files"][0][0], kept["files"][0][1]]
        ),
        lambda kept: kept["files"].__setitem__(0, ["/" + kept["files"][0][0], kept["files"][0][1]]),
        lambda kept: kept["folders"].__setitem__(
            0, [kept["folders"][0][0] + "/.", kept["folders"][0][1]]
        ),
        lambda kept: kept["folders"].__setitem__(
            0, [kept["folders"][0][0] + "/", kept["folders"][0][1]]
        ),
        lambda kept: kept["files"].__setitem__(
            0, [kept["files"][0][0] + "\0", kept["files"][0][1]]
        ),
        lambda kept: kept["files"].__setitem__(0, ["x/" * 3000 + "f", kept["files"][0][1]]),
    ],
)
def test_a_kept_walk_of_another_shape_is_not_trusted(
    tmp_path: Path, tamper: Callable[[dict[str, Any]], object]
) -> None:
    """A kept walk is trusted only when every path and identity key it holds is text and
    every key equals what the entry's stat says: a missing entry (no identity) never
    matches a stored ``null``. Each stored walk is changed to claim another result too,
    which a trusted recall would return."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    fresh = results(root, None)
    results(root, indexed(root, state))
    with sqlite3.connect(state / "file-index.sqlite") as connection:
        rows = connection.execute("SELECT identity, context, value FROM entries").fetchall()
        walks = [
            row
            for row in rows
            if row[1].startswith(WALK_CONTEXT)
            and not row[1].startswith(WALK_CONTEXT + KEPT_CONTEXT)
        ]
        assert len(walks) == 1  # mod's (the root's walk is not kept, doc.md is a file)
        for identity, context, value in walks:
            kept = json.loads(value)
            kept["value"] = "artifactsum:" + "0" * 64
            tamper(kept)
            connection.execute(
                "UPDATE entries SET value = ? WHERE identity = ? AND context = ?",
                (json.dumps(kept).encode("utf-8"), identity, context),
            )
    index = indexed(root, state)
    assert results(root, index) == fresh
    assert index.walk_hits == 1  # found, and not trusted


def _page_size(state: Path) -> int:
    connection = sqlite3.connect(state / "file-index.sqlite")
    try:
        return int(connection.execute("PRAGMA page_size").fetchone()[0])
    finally:
        connection.close()


def test_a_new_index_has_pages_that_hold_a_stored_declaration(tmp_path: Path) -> None:
    """A stored declaration is ~3 KB: with SQLite's default 4 KiB pages most rows of a
    workspace's declarations spill onto overflow pages, written and read as a chain."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    assert results(root, indexed(root, state)) == results(root, None)
    assert _page_size(state) == PAGE_SIZE == 16_384
    assert _rows(state)


def test_an_index_made_with_other_pages_is_still_read_and_written(tmp_path: Path) -> None:
    """An index an earlier version made (4 KiB pages) keeps its pages and is trusted."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    connection = sqlite3.connect(state / "file-index.sqlite")
    connection.execute("PRAGMA page_size = 4096")
    connection.execute("VACUUM")  # the size is fixed once the file exists
    connection.close()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    first = results(root, indexed(root, state))
    assert _page_size(state) == 4096
    before = _rows(state)
    index = indexed(root, state)
    assert results(root, index) == first == results(root, None)
    assert index.asked and index.hits == index.asked
    write(root / "mod" / "src" / "c.py", "c\n")
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    assert results(root, indexed(root, state)) == results(root, None)
    assert _page_size(state) == 4096
    assert len(_rows(state)) > len(before)


def test_rows_of_files_that_are_gone_are_dropped(tmp_path: Path) -> None:
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    results(root, indexed(root, state))
    before = {row[2] for row in _rows(state)}
    (root / "mod" / "notes.txt").unlink()
    write(root / "mod" / "src" / "c.py", "c\n")
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    results(root, indexed(root, state))
    after = {row[2] for row in _rows(state)}
    assert str(root / "mod" / "notes.txt") in before
    assert after == (before - {str(root / "mod" / "notes.txt")}) | {str(root / "mod/src/c.py")}


def _identity_of(path: Path) -> FileIdentity:
    info = os.lstat(path)
    return FileIdentity(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _two_files(tmp_path: Path) -> tuple[str, Path, Path]:
    """The index's path, a source file and a declaration, both safely old."""
    state, source, declaration = tmp_path / "state", tmp_path / "a.py", tmp_path / "index.artf"
    state.mkdir()
    write(source, "a\n")
    write(declaration, "name = 1\n")
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    return str(state / "file-index.sqlite"), source, declaration


def test_the_digest_rows_are_read_only_when_a_digest_is_asked(tmp_path: Path) -> None:
    """A lookup of a declaration (or a kept walk) reads no digest row: a digest row written
    after it, by another process, is what the first digest lookup then answers."""
    path, source, declaration = _two_files(tmp_path)
    file, declared = _identity_of(source), _identity_of(declaration)
    first = SqliteFileIndex(path, STAMP, margin_ns=TEST_MARGIN_NS)
    first.remember_declaration(declared, "ctx", str(declaration), "stored")
    first.remember_digest(file, str(source), b"1" * 32)
    first.save()
    reader = SqliteFileIndex(path, STAMP, margin_ns=TEST_MARGIN_NS)
    assert reader.declaration(declared, "ctx") == "stored"
    other = SqliteFileIndex(path, STAMP, margin_ns=TEST_MARGIN_NS)
    other.remember_digest(file, str(source), b"2" * 32)
    other.save()
    assert reader.digest(file) == b"2" * 32


def test_a_save_without_a_digest_lookup_still_drops_the_rows_of_files_gone(
    tmp_path: Path,
) -> None:
    path, source, declaration = _two_files(tmp_path)
    file, declared = _identity_of(source), _identity_of(declaration)
    first = SqliteFileIndex(path, STAMP, margin_ns=TEST_MARGIN_NS)
    first.remember_digest(file, str(source), b"1" * 32)
    first.save()
    source.unlink()
    second = SqliteFileIndex(path, STAMP, margin_ns=TEST_MARGIN_NS)
    second.remember_declaration(declared, "ctx", str(declaration), "stored")  # asks no digest
    second.save()
    assert [row[2] for row in _rows(tmp_path / "state")] == [str(declaration)]


def _discovered(root: Path, index: FileIndex | None) -> Any:
    """``discover``'s whole answer (nested repositories too), kept when ``index`` is given."""
    filesystem = PosixFilesystem()
    with filesystem.open_root(str(root.parent)) as parent:
        identity = parent.folder_identity(root.name)
    try:
        with filesystem.open_root(str(root)) as handle:
            found = discover(handle, str(root), index=index, root_identity=identity)
    except ConfigError as exc:
        return str(exc)
    finally:
        if index is not None:
            index.save()
    for artifact in found.artifacts:  # not compared: each kept hash is its eval's
        computed = tuple(eval_def_hash(item) for item in artifact.declaration.evals)
        assert artifact.eval_hashes in ((), computed)
    return found.artifacts, found.nested_repositories


def _linked_copy(root: Path, rel: str) -> None:
    """``rel`` replaced by a link to a copy of it (the same names and contents)."""
    shutil.copytree(root / rel, root.parent / "copy")
    shutil.rmtree(root / rel)
    (root / rel).symlink_to(root.parent / "copy")


def test_a_kept_discovery_takes_each_folders_identity_from_its_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``open_directory`` already stats the entry before it opens it: the walk keeps that
    identity (``opened_identity``) and stats no folder again. It is the folder's no-follow
    stat by name, and the kept discovery is then recalled."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    (root / "mod" / "src" / "deep").mkdir()
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    with PosixFilesystem().open_root(str(root)) as handle:
        told = handle.folder_identity("mod")
        with handle.open_directory("mod") as child:
            assert child.opened_identity() == told is not None
        assert handle.opened_identity() is None  # a root handle
    stats: list[str] = []
    folder_identity = PosixDirectoryHandle.folder_identity

    def counted(self: PosixDirectoryHandle, name: str) -> FileIdentity | None:
        stats.append(name)
        return folder_identity(self, name)

    monkeypatch.setattr(PosixDirectoryHandle, "folder_identity", counted)
    fresh = _discovered(root, indexed(root, state))
    assert stats == [root.name]  # the root's, which the caller takes: none below it
    index = indexed(root, state)
    assert _discovered(root, index) == fresh == _discovered(root, None)
    assert (index.discoveries_asked, index.discovery_hits) == (1, 1)


@pytest.mark.parametrize(
    "change",
    [
        lambda root: declare(root / "mod" / "src" / "deep", {"name": "deep"}),
        lambda root: write(root / ".artfignore", "mod/\n"),
        lambda root: write(root / "mod" / "src" / ".git", "gitdir: elsewhere\n"),
        lambda root: _linked_copy(root, "mod"),
        lambda root: write(root / "mod" / "doc.md.artf", _sidecar("s1")),
        lambda root: (root / "mod" / "doc.md").unlink(),
    ],
    ids=["declared-deep", "artfignore", "nested-repository", "linked-folder", "sidecar", "target"],
)
def test_a_kept_discovery_is_trusted_only_while_unchanged(
    tmp_path: Path, change: Callable[[Path], object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept whole, recalled while nothing changed, and after any change of what the walk
    saw (a folder's entries, the ignore rules, a declaration) the same as a fresh walk."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    fresh = _discovered(root, indexed(root, state))
    index = indexed(root, state)
    assert _discovered(root, index) == fresh == _discovered(root, None)
    assert (index.discoveries_asked, index.discovery_hits) == (1, 1)
    change(root)
    index = indexed(root, state)
    assert _discovered(root, index) == _discovered(root, None) != fresh
    assert index.discoveries_asked == 1  # found or not, the same answer as a fresh walk
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    _discovered(root, indexed(root, state))  # kept again once safely old (unless an error)
    expected = _discovered(root, None)
    walked: list[str] = []
    walk = discovery_module._Walker.walk

    def counted(self: Any, handle: Any, rel: str, owner: str | None) -> None:
        walked.append(rel)
        walk(self, handle, rel, owner)

    monkeypatch.setattr(discovery_module._Walker, "walk", counted)
    assert _discovered(root, indexed(root, state)) == expected
    assert bool(walked) == isinstance(expected, str)  # an error is never kept


def test_deleting_the_index_changes_no_result(tmp_path: Path) -> None:
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    with_index = results(root, indexed(root, state))
    (state / "file-index.sqlite").unlink()
    assert results(root, indexed(root, state)) == with_index == results(root, None)


# --- the stored form of a declaration ----------------------------------------------------


def _every_declaration(tmp_path: Path) -> list[tuple[Any, str]]:
    from bench.discovery import build_workspace_tree

    build_workspace_tree(tmp_path / "bench", 60, 12)
    found = []
    for root in (Path(__file__).parents[2] / "examples" / "handbook", tmp_path / "bench"):
        workspace = ConfigService(PosixFilesystem()).load(str(root))
        found += [(a.declaration, a.source.text) for a in workspace.artifacts.values()]
    return found


def test_every_declaration_reads_back_equal(tmp_path: Path) -> None:
    from artifactize.domain.declarations.codec import decode_declaration, encode_declaration

    declarations = _every_declaration(tmp_path)
    assert len(declarations) > 70
    for declaration, text in declarations:
        stored = encode_declaration(declaration, text)
        assert stored is not None  # every declaration the parser builds can be stored
        assert decode_declaration(stored) == (declaration, text)


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        "[]",
        '["declaration-0-old", "x", null]',
        "{FORMAT}",
        '["{FORMAT}", "x", ["c", "Popen", {}]]',
        '["{FORMAT}", "x", ["c", "Declaration", {"name": "x"}]]',
        '["{FORMAT}", "x", ["e", "ArtifactKind", "nope"]]',
        '["{FORMAT}", "x", ["q"]]',
        '["{FORMAT}", "x", {"__class__": 1}]',
        '["{FORMAT}", 1, ["t"]]',
    ],
)
def test_a_stored_form_of_another_shape_is_refused(stored: str) -> None:
    from artifactize.domain.declarations.codec import (
        DECLARATION_FORMAT,
        StoredFormError,
        decode_declaration,
    )

    with pytest.raises(StoredFormError):
        decode_declaration(stored.replace("{FORMAT}", DECLARATION_FORMAT))


def test_a_walk_over_a_folder_name_that_is_not_utf8_is_not_kept(tmp_path: Path) -> None:
    """An empty folder whose name is not UTF-8 is walked (nothing in it is hashed), and its
    name cannot be stored: the walk is computed every time, never refused."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    os.mkdir(os.fsencode(root / "mod" / "src") + b"/\xff-empty")
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    assert results(root, indexed(root, state)) == results(root, None)
    index = indexed(root, state)
    assert results(root, index) == results(root, None)
    assert (index.walks_asked, index.walk_hits) == (1, 0)
    assert (index.discoveries_asked, index.discovery_hits) == (1, 0)  # the same name


def test_a_folder_swapped_for_a_link_to_itself_between_runs_is_walked_again(
    tmp_path: Path,
) -> None:
    """``mod/src`` moved aside and a link put in its place, pointing at it: every file below
    keeps its device, inode, size and times, so a recall that stats files through the link
    would find each stored key unchanged. The folders on the way are checked no-follow (the
    link is no folder) and the owner's own identity changed: the walk is redone, and gives
    what a fresh computation gives (the link, never followed)."""
    root, state = tmp_path / "repo", tmp_path / "state"
    make_repo(root)
    state.mkdir()
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    first = results(root, indexed(root, state))
    (root / "mod" / "src").rename(root / "mod" / "src-real")
    (root / "mod" / "src").symlink_to("src-real")
    time.sleep(2 * TEST_MARGIN_NS / 1e9)
    index = indexed(root, state)
    after = results(root, index)
    assert after == results(root, None)
    assert after["mod sum"] != first["mod sum"]


def test_a_name_that_is_not_utf8_is_not_kept_and_the_rest_is(tmp_path: Path) -> None:
    """SQLite's text is UTF-8: a path decoded with lone surrogates cannot be a row. Its row
    is left out (read again each time); the save keeps the others and raises nothing."""
    path, source, declaration = _two_files(tmp_path)
    file, declared = _identity_of(source), _identity_of(declaration)
    index = SqliteFileIndex(path, STAMP, margin_ns=TEST_MARGIN_NS)
    index.remember_digest(file, os.fsdecode(b"/odd/\xff.py"), b"1" * 32)
    index.remember_declaration(declared, "ctx", str(declaration), "stored")
    index.save()
    assert [row[2] for row in _rows(tmp_path / "state")] == [str(declaration)]
    later = SqliteFileIndex(path, STAMP, margin_ns=TEST_MARGIN_NS)
    assert later.declaration(declared, "ctx") == "stored" and later.digest(file) is None
