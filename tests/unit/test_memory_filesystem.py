"""The in-memory fake must behave like the real adapter.

Every test taking the ``backend`` fixture runs twice: once against ``MemoryFilesystem`` and
once against ``PosixFilesystem`` over the same tree materialized in ``tmp_path``. Exceptions,
``name`` attributes and messages must agree, so domain tests built on the fake stay honest.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.ports.filesystem import (
    DirectoryHandle,
    DirEntry,
    EntryKind,
    EntryNotFound,
    Filesystem,
    FileTooLarge,
    NotADirectory,
    NotRegularFile,
    SymlinkRefused,
)
from tests.fakes.filesystem import MemoryFilesystem, Node, Special, Symlink


def make_tree() -> dict[str, Node]:
    return {
        "index.artf": b"name = 'x'",
        "docs": {"index.artf": b"docs", "deep": {"a.txt": b"a"}},
        "empty": {},
        "link": Symlink("docs"),
        "file_link": Symlink("index.artf"),
        "dangling": Symlink("nowhere"),
        "fifo": Special(),
        "B.txt": b"upper",
        "a.txt": b"",
        "ten": b"0123456789",
    }


def materialize(path: Path, tree: Mapping[str, Node]) -> None:
    """Write a fake tree to disk with the real kinds: files, dirs, symlinks and FIFOs."""
    path.mkdir()
    for name, node in tree.items():
        child = path / name
        if isinstance(node, bytes):
            child.write_bytes(node)
        elif isinstance(node, Symlink):
            os.symlink(node.target, child)
        elif isinstance(node, Special):
            os.mkfifo(child)
        else:
            materialize(child, node)


@dataclass
class Backend:
    kind: str
    filesystem: Filesystem
    root_path: str
    swap_for_symlink: Callable[[str, str], None]
    """Move entry ``name`` aside (to ``name.moved``) and put a symlink to ``target`` there."""


def memory_backend() -> Backend:
    tree = make_tree()

    def swap(name: str, target: str) -> None:
        tree[f"{name}.moved"] = tree.pop(name)
        tree[name] = Symlink(target)

    return Backend("memory", MemoryFilesystem({"/repo": tree}), "/repo", swap)


def posix_backend(tmp_path: Path) -> Backend:
    root = tmp_path / "repo"
    materialize(root, make_tree())

    def swap(name: str, target: str) -> None:
        os.rename(root / name, root / f"{name}.moved")
        os.symlink(target, root / name)

    return Backend("posix", PosixFilesystem(), os.path.realpath(root), swap)


@pytest.fixture(params=["memory", "posix"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "memory":
        return memory_backend()
    return posix_backend(tmp_path)


@pytest.fixture
def root(backend: Backend) -> Iterator[DirectoryHandle]:
    with backend.filesystem.open_root(backend.root_path) as handle:
        yield handle


def symlink_message(path: str) -> str:
    return f"`{path}` is a symbolic link; links are never followed"


INVALID_NAMES = ["", ".", "..", "a/b", "/abs", "docs/", "a\0b"]


# --- entries and entry ---------------------------------------------------------------------


def test_entries_are_sorted_by_code_point_and_classified(root: DirectoryHandle) -> None:
    assert root.entries() == [
        DirEntry("B.txt", EntryKind.FILE),
        DirEntry("a.txt", EntryKind.FILE),
        DirEntry("dangling", EntryKind.SYMLINK),
        DirEntry("docs", EntryKind.DIRECTORY),
        DirEntry("empty", EntryKind.DIRECTORY),
        DirEntry("fifo", EntryKind.OTHER),
        DirEntry("file_link", EntryKind.SYMLINK),
        DirEntry("index.artf", EntryKind.FILE),
        DirEntry("link", EntryKind.SYMLINK),
        DirEntry("ten", EntryKind.FILE),
    ]


def test_entries_can_be_listed_twice(root: DirectoryHandle) -> None:
    assert root.entries() == root.entries()


def test_empty_directory_has_no_entries(root: DirectoryHandle) -> None:
    with root.open_directory("empty") as empty:
        assert empty.entries() == []


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("index.artf", EntryKind.FILE),
        ("docs", EntryKind.DIRECTORY),
        ("link", EntryKind.SYMLINK),
        ("dangling", EntryKind.SYMLINK),
        ("fifo", EntryKind.OTHER),
    ],
)
def test_entry_classifies_without_following(
    root: DirectoryHandle, name: str, kind: EntryKind
) -> None:
    assert root.entry(name) == DirEntry(name, kind)


def test_entry_missing(root: DirectoryHandle) -> None:
    with pytest.raises(EntryNotFound) as caught:
        root.entry("missing")
    assert caught.value.name == "missing"
    assert caught.value.message == f"`{root.physical_path}/missing` does not exist"


# --- read_file -----------------------------------------------------------------------------


def test_read_file_returns_the_bytes(root: DirectoryHandle) -> None:
    assert root.read_file("index.artf", 1000) == b"name = 'x'"
    assert root.read_file("a.txt", 0) == b""


def test_read_file_at_exactly_the_limit(root: DirectoryHandle) -> None:
    assert root.read_file("ten", 10) == b"0123456789"


def test_read_file_one_byte_over_the_limit(root: DirectoryHandle) -> None:
    with pytest.raises(FileTooLarge) as caught:
        root.read_file("ten", 9)
    assert caught.value.name == "ten"
    assert caught.value.limit == 9
    assert caught.value.message == f"`{root.physical_path}/ten` is larger than 9 bytes"


@pytest.mark.parametrize("name", ["file_link", "link", "dangling"])
def test_read_file_refuses_symlinks(root: DirectoryHandle, name: str) -> None:
    with pytest.raises(SymlinkRefused) as caught:
        root.read_file(name, 1000)
    assert caught.value.name == name
    assert caught.value.message == symlink_message(f"{root.physical_path}/{name}")


@pytest.mark.parametrize("name", ["fifo", "docs"])
def test_read_file_refuses_what_is_not_a_regular_file(root: DirectoryHandle, name: str) -> None:
    with pytest.raises(NotRegularFile) as caught:
        root.read_file(name, 1000)
    assert caught.value.name == name
    assert caught.value.message == (
        f"`{root.physical_path}/{name}` is not a regular file; only regular files are read"
    )


def test_read_file_missing(root: DirectoryHandle) -> None:
    with pytest.raises(EntryNotFound) as caught:
        root.read_file("missing", 1000)
    assert caught.value.name == "missing"


def test_read_file_refuses_a_negative_limit(root: DirectoryHandle) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        root.read_file("ten", -1)


# --- open_directory ------------------------------------------------------------------------


def test_open_directory_pins_a_child(root: DirectoryHandle) -> None:
    with root.open_directory("docs") as docs:
        assert docs.physical_path == f"{root.physical_path}/docs"
        assert [entry.name for entry in docs.entries()] == ["deep", "index.artf"]
        with docs.open_directory("deep") as deep:
            assert deep.physical_path == f"{root.physical_path}/docs/deep"
            assert deep.read_file("a.txt", 1) == b"a"


@pytest.mark.parametrize("name", ["link", "file_link", "dangling"])
def test_open_directory_refuses_symlinks_even_inside_the_root(
    root: DirectoryHandle, name: str
) -> None:
    with pytest.raises(SymlinkRefused) as caught:
        root.open_directory(name)
    assert caught.value.name == name
    assert caught.value.message == symlink_message(f"{root.physical_path}/{name}")


@pytest.mark.parametrize("name", ["index.artf", "fifo"])
def test_open_directory_refuses_what_is_not_a_directory(root: DirectoryHandle, name: str) -> None:
    with pytest.raises(NotADirectory) as caught:
        root.open_directory(name)
    assert caught.value.name == name
    assert caught.value.message == f"`{root.physical_path}/{name}` is not a directory"


def test_open_directory_missing(root: DirectoryHandle) -> None:
    with pytest.raises(EntryNotFound) as caught:
        root.open_directory("missing")
    assert caught.value.name == "missing"
    assert caught.value.message == f"`{root.physical_path}/missing` does not exist"


# --- names ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", INVALID_NAMES)
def test_only_single_entry_names_are_accepted(root: DirectoryHandle, name: str) -> None:
    with pytest.raises(ValueError, match="single directory entry name"):
        root.entry(name)
    with pytest.raises(ValueError, match="single directory entry name"):
        root.open_directory(name)
    with pytest.raises(ValueError, match="single directory entry name"):
        root.read_file(name, 10)


# --- pinning -------------------------------------------------------------------------------


def test_a_directory_swapped_for_a_symlink_is_refused(backend: Backend) -> None:
    with (
        backend.filesystem.open_root(backend.root_path) as root,
        root.open_directory("docs") as pinned,
    ):
        backend.swap_for_symlink("docs", "empty")
        with pytest.raises(SymlinkRefused):
            root.open_directory("docs")
        with pytest.raises(SymlinkRefused):
            root.read_file("docs", 10)
        assert root.entry("docs") == DirEntry("docs", EntryKind.SYMLINK)
        # The handle opened before the swap still sees the directory it pinned.
        assert pinned.read_file("index.artf", 10) == b"docs"
        assert pinned.physical_path == f"{root.physical_path}/docs"


# --- lifecycle -----------------------------------------------------------------------------


def test_close_is_idempotent_and_closed_handles_refuse_use(backend: Backend) -> None:
    handle = backend.filesystem.open_root(backend.root_path)
    handle.close()
    handle.close()
    with pytest.raises(ValueError, match="closed"):
        handle.entries()
    with pytest.raises(ValueError, match="closed"):
        handle.entry("docs")
    with pytest.raises(ValueError, match="closed"):
        handle.open_directory("docs")
    with pytest.raises(ValueError, match="closed"):
        handle.read_file("ten", 10)


def test_context_manager_closes(backend: Backend) -> None:
    with backend.filesystem.open_root(backend.root_path) as handle:
        pass
    with pytest.raises(ValueError, match="closed"):
        handle.entries()


# --- canonical_directory and open_root -----------------------------------------------------


def test_canonical_directory_of_the_root_and_below(backend: Backend) -> None:
    fs = backend.filesystem
    assert fs.canonical_directory(backend.root_path) == backend.root_path
    assert fs.canonical_directory(f"{backend.root_path}/docs/") == f"{backend.root_path}/docs"


def test_canonical_directory_missing(backend: Backend) -> None:
    path = f"{backend.root_path}/missing"
    with pytest.raises(EntryNotFound) as caught:
        backend.filesystem.canonical_directory(path)
    assert caught.value.name == path
    assert caught.value.message == f"`{path}` does not exist"


def test_canonical_directory_of_a_file(backend: Backend) -> None:
    path = f"{backend.root_path}/index.artf"
    with pytest.raises(NotADirectory) as caught:
        backend.filesystem.canonical_directory(path)
    assert caught.value.message == f"`{path}` is not a directory"


def test_canonical_directory_refuses_an_empty_path(backend: Backend) -> None:
    with pytest.raises(EntryNotFound):
        backend.filesystem.canonical_directory("")


def test_open_root_below_the_root(backend: Backend) -> None:
    path = f"{backend.root_path}/docs/deep"
    with backend.filesystem.open_root(path) as deep:
        assert deep.physical_path == path
        assert deep.entries() == [DirEntry("a.txt", EntryKind.FILE)]


def test_open_root_refuses_a_symlink_component(backend: Backend) -> None:
    with pytest.raises(SymlinkRefused) as caught:
        backend.filesystem.open_root(f"{backend.root_path}/link/deep")
    assert caught.value.name == "link"
    assert caught.value.message == symlink_message(f"{backend.root_path}/link")


def test_open_root_refuses_a_file(backend: Backend) -> None:
    with pytest.raises(NotADirectory) as caught:
        backend.filesystem.open_root(f"{backend.root_path}/index.artf")
    assert caught.value.name == "index.artf"


def test_open_root_missing(backend: Backend) -> None:
    with pytest.raises(EntryNotFound) as caught:
        backend.filesystem.open_root(f"{backend.root_path}/missing/deeper")
    assert caught.value.name == "missing"
    assert caught.value.message == f"`{backend.root_path}/missing` does not exist"


@pytest.mark.parametrize("suffix", ["/", "/./docs", "/docs/..", "//docs"])
def test_open_root_refuses_non_canonical_paths(backend: Backend, suffix: str) -> None:
    with pytest.raises(ValueError, match="canonical"):
        backend.filesystem.open_root(backend.root_path + suffix)


def test_open_root_refuses_relative_paths(backend: Backend) -> None:
    with pytest.raises(ValueError, match="canonical"):
        backend.filesystem.open_root("repo")


# --- the fake's own bookkeeping ------------------------------------------------------------


def test_fake_counts_calls_and_open_handles() -> None:
    fs = MemoryFilesystem({"/repo": make_tree()})
    with fs.open_root("/repo") as root:
        assert fs.open_handles == 1
        with root.open_directory("docs") as docs:
            docs.read_file("index.artf", 100)
            assert fs.open_handles == 2
        with pytest.raises(SymlinkRefused):
            root.read_file("link", 100)
    assert fs.open_root_calls == 1
    assert fs.open_directory_calls == 1
    assert fs.read_file_calls == 2
    assert fs.open_handles == 0
    assert fs.writes == []


def test_fake_handle_pins_the_mapping_it_was_given() -> None:
    docs: dict[str, Node] = {"a": b"1"}
    fs = MemoryFilesystem({"/repo": {"docs": docs}})
    with fs.open_root("/repo") as root, root.open_directory("docs") as handle:
        docs["b"] = b"2"
        assert [entry.name for entry in handle.entries()] == ["a", "b"]


@pytest.mark.parametrize("root", ["repo", "/repo/", ""])
def test_fake_refuses_roots_that_are_not_absolute_paths(root: str) -> None:
    with pytest.raises(ValueError, match="absolute"):
        MemoryFilesystem({root: {}})


def test_both_classes_satisfy_the_port() -> None:
    filesystems: list[Filesystem] = [MemoryFilesystem({}), PosixFilesystem()]
    assert len(filesystems) == 2


def test_entries_at_most_gives_one_past_the_bound() -> None:
    fs = MemoryFilesystem({"/repo": {f"f{n}": b"x" for n in range(4)}})
    with fs.open_root("/repo") as folder:
        assert len(folder.entries()) == 4
        assert len(folder.entries(at_most=4)) == 4
        assert len(folder.entries(at_most=1)) == 2
