"""Hostile tests of the POSIX adapter on real files: links, FIFOs, swaps and leaks.

The shared behaviour lives in ``tests/unit/test_memory_filesystem.py`` (against the in-memory
fake too) and ``tests/contract/test_filesystem_contract.py`` (every real adapter: POSIX here,
Windows under Wine); this file covers what only a POSIX kernel can show.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artifactize.adapters.posix import filesystem as posix_filesystem
from artifactize.adapters.posix.filesystem import PosixDirectoryHandle, PosixFilesystem
from artifactize.ports.filesystem import (
    DirEntry,
    EntryKind,
    EntryNotFound,
    FilesystemError,
    FileTooLarge,
    NotADirectory,
    NotRegularFile,
    SymlinkRefused,
)
from tests.support.processes import descriptors_opened_since, open_descriptors

T = TypeVar("T")

PROC_FD = Path("/proc/self/fd")


def run_with_timeout(call: Callable[[], T], timeout: float = 5.0) -> T:
    """Run ``call`` in a daemon thread so a blocking open fails the test instead of hanging it."""
    values: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            values.append(call())
        except BaseException as err:
            errors.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the call blocked"
    if errors:
        raise errors[0]
    return values[0]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace, holding what links must never reach."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_bytes(b"secret")
    return path


@pytest.fixture
def workspace(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "index.artf").write_bytes(b"name = 'x'")
    (root / "docs").mkdir()
    (root / "docs" / "index.artf").write_bytes(b"docs")
    (root / "other").mkdir()
    os.symlink(outside / "secret.txt", root / "secret_link")
    os.symlink(outside, root / "outside_link")
    os.symlink("docs", root / "inside_dir_link")
    os.symlink("index.artf", root / "inside_file_link")
    os.mkfifo(root / "fifo")
    return root


@pytest.fixture
def root(workspace: Path) -> Iterator[PosixDirectoryHandle]:
    fs = PosixFilesystem()
    with fs.open_root(fs.canonical_directory(str(workspace))) as handle:
        yield handle


# --- links ---------------------------------------------------------------------------------


def test_symlink_to_a_file_outside_is_refused_on_read(root: PosixDirectoryHandle) -> None:
    with pytest.raises(SymlinkRefused) as caught:
        root.read_file("secret_link", 1000)
    assert "links are never followed" in caught.value.message
    assert caught.value.message.startswith(f"`{root.physical_path}/secret_link`")


def test_symlink_to_a_directory_outside_is_refused(root: PosixDirectoryHandle) -> None:
    with pytest.raises(SymlinkRefused):
        root.open_directory("outside_link")


def test_symlinks_pointing_inside_the_root_are_still_refused(root: PosixDirectoryHandle) -> None:
    with pytest.raises(SymlinkRefused):
        root.open_directory("inside_dir_link")
    with pytest.raises(SymlinkRefused):
        root.read_file("inside_file_link", 1000)
    with pytest.raises(SymlinkRefused):
        root.read_file("inside_dir_link", 1000)


def test_the_kernel_refusal_of_a_directory_link_maps_to_symlink_refused(
    root: PosixDirectoryHandle, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link appearing between the stat and the open gives ENOTDIR; it must still read as
    a refused link, not as 'not a directory'."""
    real_lstat = posix_filesystem._lstat_entry
    directory_stat = os.stat(workspace / "docs")
    calls: list[str] = []

    def stale_then_real(dir_fd: int, name: str) -> os.stat_result:
        calls.append(name)
        return directory_stat if len(calls) == 1 else real_lstat(dir_fd, name)

    monkeypatch.setattr(posix_filesystem, "_lstat_entry", stale_then_real)
    with pytest.raises(SymlinkRefused):
        root.open_directory("inside_dir_link")
    assert calls == ["inside_dir_link", "inside_dir_link"]


# --- special files -------------------------------------------------------------------------


def test_fifo_read_is_refused_without_blocking(root: PosixDirectoryHandle) -> None:
    with pytest.raises(NotRegularFile):
        run_with_timeout(lambda: root.read_file("fifo", 1000))


def test_fifo_open_directory_is_refused_without_blocking(root: PosixDirectoryHandle) -> None:
    with pytest.raises(NotADirectory):
        run_with_timeout(lambda: root.open_directory("fifo"))


def test_fifo_swapped_in_after_the_check_is_refused_by_fstat(
    root: PosixDirectoryHandle, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The no-follow stat said 'regular file', then a FIFO took its place: the non-blocking
    open succeeds and only the fstat stands between us and a read that would hang."""
    regular_stat = os.stat(workspace / "index.artf")
    monkeypatch.setattr(posix_filesystem, "_lstat_entry", lambda dir_fd, name: regular_stat)
    before = open_descriptors()
    with pytest.raises(NotRegularFile):
        run_with_timeout(lambda: root.read_file("fifo", 1000))
    assert descriptors_opened_since(before) == set()


def _read_listed(root: PosixDirectoryHandle, name: str) -> bytes:
    return root.read_listed_file(name, 100)


def _stream_listed(root: PosixDirectoryHandle, name: str) -> bytes:
    with root.open_listed_file(name) as handle:
        return handle.read(100)


@pytest.mark.parametrize("listed", [_read_listed, _stream_listed])
def test_a_listed_file_is_refused_as_read_file_refuses(
    root: PosixDirectoryHandle, listed: Callable[[PosixDirectoryHandle, str], bytes]
) -> None:
    """``read_listed_file`` and ``open_listed_file``: without the no-follow stat before the
    open, the open and the fstat still refuse a link (the listing's type may be stale), a
    FIFO (without blocking) and a folder; each without leaving a descriptor open."""
    before = open_descriptors()
    assert listed(root, "index.artf") == b"name = 'x'"
    for name, error in [
        ("secret_link", SymlinkRefused),
        ("inside_file_link", SymlinkRefused),
        ("fifo", NotRegularFile),
        ("docs", NotRegularFile),
        ("missing", EntryNotFound),
    ]:
        with pytest.raises(error):
            run_with_timeout(partial(listed, root, name))
    assert descriptors_opened_since(before) == set()


def test_read_listed_file_refuses_a_file_over_the_limit_and_a_path(
    root: PosixDirectoryHandle,
) -> None:
    with pytest.raises(FileTooLarge):
        root.read_listed_file("index.artf", 9)
    with pytest.raises(ValueError):
        root.read_listed_file("docs/index.artf", 100)


def test_a_small_file_is_streamed_in_one_read(
    root: PosixDirectoryHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream that reaches the size the ``fstat`` gave with a short read is at its end:
    one ``read`` system call for a small file, where reading on to end of file took
    three (the data, the end inside the chunk, the end again for the caller's next read).
    Each open stats nothing before its open when the entry was listed."""
    calls: list[str] = []
    real_read, real_stat = os.read, os.stat

    def read(fd: int, n: int) -> bytes:
        calls.append("read")
        return real_read(fd, n)

    def stat_(*args: object, **kwargs: object) -> os.stat_result:
        calls.append("stat")
        return real_stat(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "read", read)
    monkeypatch.setattr(os, "stat", stat_)
    with root.open_listed_file("index.artf") as handle:
        pieces = [handle.read(1 << 20), handle.read(1 << 20), handle.read(1 << 20)]
    assert pieces == [b"name = 'x'", b"", b""]
    assert calls == ["read"]


@pytest.mark.parametrize("size", [0, 1, 9, 10, 11, 3 << 20])
def test_read_file_at_and_around_the_limit(tmp_path: Path, size: int) -> None:
    """One read of the size plus one byte answers whole files; past the limit is refused."""
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    (tmp_path / "f").write_bytes(data)
    limit = 10 if size < 3 << 20 else 3 << 20
    with PosixFilesystem().open_root(str(tmp_path.resolve())) as handle:
        for read in (handle.read_file, handle.read_listed_file):
            if size <= limit:
                assert read("f", limit) == data
            else:
                with pytest.raises(FileTooLarge):
                    read("f", limit)


def test_read_file_reads_on_when_the_file_grew_after_its_fstat(
    root: PosixDirectoryHandle, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size the fstat gave is a hint: a file that grew since is read to its end (within
    the limit) or refused, never cut at the old size; a stream too (it ends at that size
    only when a short read stops exactly there)."""
    grown = b"name = 'x' # and more"
    (workspace / "index.artf").write_bytes(grown)
    target = os.stat(workspace / "index.artf").st_ino
    small = os.stat(workspace / "docs" / "index.artf")  # a regular file of 4 bytes
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        return small if info.st_ino == target else info

    monkeypatch.setattr(os, "fstat", stale_fstat)
    assert root.read_listed_file("index.artf", 100) == grown
    with pytest.raises(FileTooLarge):
        root.read_listed_file("index.artf", 10)
    with root.open_listed_file("index.artf") as handle:
        assert handle.size == 4
        assert handle.read(3) + handle.read(100) + handle.read(100) == grown


def test_socket_is_classified_other_and_refused(tmp_path: Path) -> None:
    short = Path(os.path.realpath(tmp_path)) / "s"
    short.mkdir()
    path = short / "sock"
    if len(os.fsencode(path)) >= 100:
        pytest.skip("tmp_path too long for an AF_UNIX socket path")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with PosixFilesystem().open_root(str(short)) as handle:
            assert handle.entry("sock") == DirEntry("sock", EntryKind.OTHER)
            with pytest.raises(NotRegularFile):
                run_with_timeout(lambda: handle.read_file("sock", 10))


# --- listing -------------------------------------------------------------------------------


def test_entries_are_sorted_and_classified(root: PosixDirectoryHandle) -> None:
    assert root.entries() == [
        DirEntry("docs", EntryKind.DIRECTORY),
        DirEntry("fifo", EntryKind.OTHER),
        DirEntry("index.artf", EntryKind.FILE),
        DirEntry("inside_dir_link", EntryKind.SYMLINK),
        DirEntry("inside_file_link", EntryKind.SYMLINK),
        DirEntry("other", EntryKind.DIRECTORY),
        DirEntry("outside_link", EntryKind.SYMLINK),
        DirEntry("secret_link", EntryKind.SYMLINK),
    ]


def test_open_root_entries_match_listdir(workspace: Path) -> None:
    fs = PosixFilesystem()
    canonical = fs.canonical_directory(str(workspace))
    with fs.open_root(canonical) as handle:
        assert handle.physical_path == canonical
        assert [entry.name for entry in handle.entries()] == sorted(os.listdir(canonical))


def test_names_that_are_not_utf8_are_kept_as_given(root: PosixDirectoryHandle) -> None:
    raw = os.fsencode(root.physical_path) + b"/\xff.txt"
    fd = os.open(raw, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"odd")
    finally:
        os.close(fd)
    name = os.fsdecode(b"\xff.txt")
    assert DirEntry(name, EntryKind.FILE) in root.entries()
    assert root.read_file(name, 10) == b"odd"


# --- swaps ---------------------------------------------------------------------------------


def test_directory_swapped_for_a_symlink_after_the_parent_was_opened(
    root: PosixDirectoryHandle, workspace: Path, outside: Path
) -> None:
    os.rename(workspace / "docs", workspace / "docs.old")
    os.symlink(outside, workspace / "docs")
    with pytest.raises(SymlinkRefused):
        root.open_directory("docs")
    with pytest.raises(SymlinkRefused):
        root.read_file("docs", 10)


def test_pinned_child_keeps_its_directory_after_a_swap(
    root: PosixDirectoryHandle, workspace: Path, outside: Path
) -> None:
    with root.open_directory("docs") as docs:
        os.rename(workspace / "docs", workspace / "docs.old")
        os.symlink(outside, workspace / "docs")
        assert docs.entries() == [DirEntry("index.artf", EntryKind.FILE)]
        assert docs.read_file("index.artf", 10) == b"docs"
        with pytest.raises(EntryNotFound):
            docs.read_file("secret.txt", 10)


def test_directory_replaced_between_stat_and_open_is_refused(
    root: PosixDirectoryHandle, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the opened inode is not the one that was checked, refuse rather than trust it."""
    other_stat = os.stat(workspace / "other")
    monkeypatch.setattr(posix_filesystem, "_lstat_entry", lambda dir_fd, name: other_stat)
    before = open_descriptors()
    with pytest.raises(FilesystemError, match="changed while it was being opened"):
        root.open_directory("docs")
    assert descriptors_opened_since(before) == set()


# --- roots ---------------------------------------------------------------------------------


def test_canonical_directory_follows_links_once(tmp_path: Path, workspace: Path) -> None:
    os.symlink(workspace, tmp_path / "alias")
    fs = PosixFilesystem()
    canonical = fs.canonical_directory(str(tmp_path / "alias"))
    assert canonical == os.path.realpath(workspace)
    with fs.open_root(canonical) as handle:
        assert handle.entry("docs").kind is EntryKind.DIRECTORY


def test_canonical_directory_errors_name_the_path(workspace: Path) -> None:
    fs = PosixFilesystem()
    with pytest.raises(EntryNotFound, match="missing"):
        fs.canonical_directory(str(workspace / "missing"))
    with pytest.raises(NotADirectory, match=r"index\.artf"):
        fs.canonical_directory(str(workspace / "index.artf"))
    with pytest.raises(FilesystemError, match="Cannot open"):
        fs.canonical_directory(str(workspace / "index.artf" / "x"))


def test_open_root_refuses_a_link_planted_in_the_path(tmp_path: Path, workspace: Path) -> None:
    os.symlink(workspace, tmp_path / "alias")
    with pytest.raises(SymlinkRefused) as caught:
        PosixFilesystem().open_root(os.path.realpath(tmp_path) + "/alias/docs")
    assert caught.value.name == "alias"


def test_open_root_of_the_filesystem_root() -> None:
    with PosixFilesystem().open_root("/") as handle:
        assert handle.physical_path == "/"
        assert [entry.name for entry in handle.entries()] == sorted(os.listdir("/"))


# --- descriptors ---------------------------------------------------------------------------


def _descriptors_of(path: str) -> list[int]:
    found = []
    for name in os.listdir(PROC_FD):
        try:
            if os.readlink(PROC_FD / name) == path:
                found.append(int(name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not PROC_FD.is_dir(), reason="needs /proc/self/fd")
def test_descriptors_are_close_on_exec(root: PosixDirectoryHandle) -> None:
    descriptors = _descriptors_of(root.physical_path)
    assert descriptors
    assert not any(os.get_inheritable(fd) for fd in descriptors)


@pytest.mark.skipif(not PROC_FD.is_dir(), reason="needs /proc/self/fd")
def test_close_releases_the_descriptor(workspace: Path) -> None:
    fs = PosixFilesystem()
    canonical = fs.canonical_directory(str(workspace))
    handle = fs.open_root(canonical)
    assert len(_descriptors_of(canonical)) == 1
    handle.close()
    handle.close()
    assert _descriptors_of(canonical) == []


@pytest.mark.skipif(not PROC_FD.is_dir(), reason="needs /proc/self/fd")
def test_no_descriptor_leaks_over_many_cycles(workspace: Path) -> None:
    fs = PosixFilesystem()
    canonical = fs.canonical_directory(str(workspace))
    before = open_descriptors()
    for _ in range(1000):
        with fs.open_root(canonical) as handle, handle.open_directory("docs") as docs:
            docs.entries()
            docs.read_file("index.artf", 100)
            handle.entry("fifo")
    assert descriptors_opened_since(before) == set()


@pytest.mark.skipif(not PROC_FD.is_dir(), reason="needs /proc/self/fd")
def test_no_descriptor_leaks_on_error_paths(workspace: Path) -> None:
    fs = PosixFilesystem()
    canonical = fs.canonical_directory(str(workspace))
    (workspace / "big").write_bytes(b"x" * 100)
    failing: list[tuple[Callable[[PosixDirectoryHandle], object], type[Exception]]] = [
        (lambda h: h.read_file("secret_link", 10), SymlinkRefused),
        (lambda h: h.read_file("fifo", 10), NotRegularFile),
        (lambda h: h.read_file("docs", 10), NotRegularFile),
        (lambda h: h.read_file("big", 10), FileTooLarge),
        (lambda h: h.read_file("missing", 10), EntryNotFound),
        (lambda h: h.open_directory("inside_dir_link"), SymlinkRefused),
        (lambda h: h.open_directory("index.artf"), NotADirectory),
        (lambda h: h.open_directory("fifo"), NotADirectory),
        (lambda h: h.open_directory("missing"), EntryNotFound),
        (lambda h: h.open_directory(".."), ValueError),
    ]
    before = open_descriptors()
    for _ in range(100):
        with fs.open_root(canonical) as handle:
            for call, error in failing:
                with pytest.raises(error):
                    call(handle)
        with pytest.raises(SymlinkRefused):
            fs.open_root(canonical + "/inside_dir_link")
        with pytest.raises(EntryNotFound):
            fs.open_root(canonical + "/missing")
        with pytest.raises(NotADirectory):
            fs.open_root(canonical + "/index.artf")
    assert descriptors_opened_since(before) == set()


def test_entries_at_most_stops_one_past_the_bound(tmp_path: Path) -> None:
    for n in range(6):
        (tmp_path / f"f{n}").write_text("x")
    with PosixFilesystem().open_root(str(tmp_path.resolve())) as folder:
        every = folder.entries()
        assert [e.name for e in every] == [f"f{n}" for n in range(6)]
        assert folder.entries(at_most=6) == every  # at the bound: all of them
        assert folder.entries(at_most=5) == every  # one past it: all six, refused upstream
        some = folder.entries(at_most=2)
        assert len(some) == 3
        assert some == sorted(some) and set(some) <= set(every)


@given(st.lists(st.sampled_from(["", ".", "..", "...", "a", ".a", "a.", "a..b"]), max_size=5))
def test_a_path_is_walked_unless_a_name_is_empty_or_a_dot_or_two(names: list[str]) -> None:
    """The framed-string test ``identities_below`` asks of every path is the definition:
    no name empty, ``.`` or ``..``."""
    path = "/".join(names)
    assert posix_filesystem._not_walked(path) == bool({"", ".", ".."}.intersection(path.split("/")))


def test_identity_keys_below_are_the_identities_keys(
    root: PosixDirectoryHandle, workspace: Path
) -> None:
    """A kept walk compares the key text it stored with ``identity_keys_below``: the same
    answer as ``identities_below`` entry for entry, a link (its last name), a folder asked
    as a file, a missing entry and a path that is not a walked one (``..``, ``.``, an empty
    name) all None."""
    files = ["index.artf", "docs/index.artf", "inside_file_link", "docs", "missing", "fifo"]
    files += [
        "docs/../index.artf",
        "./index.artf",
        "docs//index.artf",
        "inside_dir_link/index.artf",
    ]
    folders = ["docs", "other", "inside_dir_link", "index.artf", "docs/..", ""]
    for paths, kind in ((files, False), (folders, True)):
        identities = root.identities_below(paths, folders=kind)
        keys = root.identity_keys_below(paths, folders=kind)
        assert keys == [None if each is None else each.key() for each in identities]

    def key(path: Path) -> str:
        info = os.lstat(path)
        return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"

    assert root.identity_keys_below(files, folders=False)[:7] == [
        key(workspace / "index.artf"),
        key(workspace / "docs" / "index.artf"),
        *[None] * 5,
    ]
    assert root.identity_keys_below(folders, folders=True) == [
        key(workspace / "docs"),
        key(workspace / "other"),
        *[None] * 4,
    ]


def test_folder_identity_is_a_real_folders_and_changes_with_its_entries(
    root: PosixDirectoryHandle, workspace: Path
) -> None:
    """What a kept walk relies on: a folder's identity (no link followed) changes when an
    entry is added in it; a file, a link or a missing name has none."""
    before = root.folder_identity("docs")
    assert before is not None
    assert (before.device, before.inode) == (
        os.lstat(workspace / "docs").st_dev,
        os.lstat(workspace / "docs").st_ino,
    )
    assert root.folder_identity("index.artf") is None
    assert root.folder_identity("missing") is None
    assert root.folder_identity("inside_dir_link") is None
    assert root.identity("docs") is None
    os.utime(workspace / "docs", ns=(0, 0))  # old, so the new entry's change shows
    old = root.folder_identity("docs")
    (workspace / "docs" / "new.md").write_bytes(b"new")
    assert root.folder_identity("docs") not in (None, old)
