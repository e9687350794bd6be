"""The filesystem contract on real files, run by every adapter of ``Filesystem``: POSIX
descriptors (``openat``) under Linux, NT handles (``NtCreateFile`` relative to the parent)
under Wine. What only one kernel can show (FIFOs, sockets, descriptor leaks) stays beside
the POSIX adapter; link tests that need a reparse point are marked for real Windows.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from artifactize.ports.filesystem import (
    DirectoryHandle,
    EntryKind,
    EntryNotFound,
    FilesystemError,
    FileTooLarge,
    NotADirectory,
    NotRegularFile,
    SymlinkRefused,
)
from tests.contract.adapters import filesystem, make_symlink, needs_reparse_points

FILESYSTEM = filesystem()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "README.md").write_bytes(b"# readme\n")
    (root / "docs" / "guide.md").write_bytes(b"guide")
    (root / "docs" / "deep" / "leaf.txt").write_bytes(b"leaf")
    (root / "empty.txt").write_bytes(b"")
    return root


@pytest.fixture
def root(workspace: Path):
    canonical = FILESYSTEM.canonical_directory(str(workspace))
    with FILESYSTEM.open_root(canonical) as handle:
        yield handle


def names(handle: DirectoryHandle) -> list[tuple[str, EntryKind]]:
    return [(entry.name, entry.kind) for entry in handle.entries()]


# --- reading files ----------------------------------------------------------------------------


def test_a_file_is_read_through_its_pinned_folder(root: DirectoryHandle) -> None:
    assert root.read_file("README.md", 100) == b"# readme\n"
    with root.open_directory("docs") as docs, docs.open_directory("deep") as deep:
        assert deep.read_file("leaf.txt", 4) == b"leaf"


def test_the_size_limit_is_exact(root: DirectoryHandle) -> None:
    assert root.read_file("README.md", 9) == b"# readme\n"
    with pytest.raises(FileTooLarge) as refused:
        root.read_file("README.md", 8)
    assert refused.value.limit == 8
    assert refused.value.name == "README.md"


def test_a_file_larger_than_one_read_chunk(root: DirectoryHandle, workspace: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    (workspace / "big.bin").write_bytes(data)
    assert root.read_file("big.bin", len(data)) == data
    with pytest.raises(FileTooLarge):
        root.read_file("big.bin", len(data) - 1)


def test_an_empty_file_with_a_zero_limit(root: DirectoryHandle) -> None:
    assert root.read_file("empty.txt", 0) == b""
    with pytest.raises(FileTooLarge):
        root.read_file("README.md", 0)


def test_a_negative_limit_is_refused(root: DirectoryHandle) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        root.read_file("README.md", -1)


@pytest.mark.parametrize("opening", ["open_file", "open_listed_file"])
def test_open_file_streams_in_pieces(root: DirectoryHandle, opening: str) -> None:
    with getattr(root, opening)("README.md") as handle:
        assert handle.size == 9
        assert handle.read(4) == b"# re"
        assert handle.read(100) == b"adme\n"
        assert handle.read(100) == b""
        assert handle.read(100) == b""  # and again


@pytest.mark.parametrize("opening", ["open_file", "open_listed_file"])
def test_a_file_is_read_whole_in_one_piece_at_its_size(root: DirectoryHandle, opening: str) -> None:
    """Asked for more than its size, a file answers all of it, then the end."""
    with getattr(root, opening)("README.md") as handle:
        assert handle.read(1 << 20) == b"# readme\n"
        assert handle.read(1 << 20) == b""


def test_a_directory_is_not_read_as_a_file(root: DirectoryHandle) -> None:
    with pytest.raises(NotRegularFile):
        root.read_file("docs", 100)
    with pytest.raises(NotRegularFile):
        root.open_file("docs")
    with pytest.raises(NotRegularFile):
        root.open_listed_file("docs")


def test_a_file_is_not_opened_as_a_directory(root: DirectoryHandle) -> None:
    with pytest.raises(NotADirectory):
        root.open_directory("README.md")


def test_missing_entries_are_not_found(root: DirectoryHandle) -> None:
    for call in (
        lambda: root.entry("missing"),
        lambda: root.read_file("missing", 10),
        lambda: root.open_file("missing"),
        lambda: root.open_listed_file("missing"),
        lambda: root.open_directory("missing"),
    ):
        with pytest.raises(EntryNotFound) as refused:
            call()
        assert refused.value.name == "missing"
        assert "missing" in refused.value.message


def test_a_name_that_differs_only_by_case_is_refused(root: DirectoryHandle) -> None:
    """Names are case-sensitive on every OS; on a case-insensitive volume the entry on disk
    must still be spelled exactly as asked."""
    for call in (
        lambda: root.entry("readme.md"),
        lambda: root.read_file("readme.MD", 100),
        lambda: root.open_directory("Docs"),
    ):
        with pytest.raises(EntryNotFound):
            call()
    assert root.entry("README.md").kind is EntryKind.FILE


# --- listings and entries ---------------------------------------------------------------------


def test_entries_are_sorted_and_classified(root: DirectoryHandle) -> None:
    assert names(root) == [
        ("README.md", EntryKind.FILE),
        ("docs", EntryKind.DIRECTORY),
        ("empty.txt", EntryKind.FILE),
    ]
    assert root.entry("docs").kind is EntryKind.DIRECTORY


def test_entries_match_the_os_listing(workspace: Path, root: DirectoryHandle) -> None:
    assert [entry.name for entry in root.entries()] == sorted(os.listdir(workspace))


def test_entries_see_changes_on_every_call(root: DirectoryHandle, workspace: Path) -> None:
    before = names(root)
    (workspace / "new.txt").write_bytes(b"n")
    assert names(root) == sorted([*before, ("new.txt", EntryKind.FILE)])
    (workspace / "new.txt").unlink()
    assert names(root) == before


def test_a_large_listing_is_complete(root: DirectoryHandle, workspace: Path) -> None:
    many = workspace / "many"
    many.mkdir()
    # 600 names of 110 characters fill several 64 KiB listing buffers on Windows.
    expected = sorted(f"file-{number:04d}-{'x' * 96}.txt" for number in range(600))
    for name in expected:
        (many / name).write_bytes(b"")
    with root.open_directory("many") as handle:
        assert [entry.name for entry in handle.entries()] == expected


def test_non_ascii_names_round_trip(root: DirectoryHandle, workspace: Path) -> None:
    (workspace / "naïve – 日本.txt").write_bytes(b"u")
    assert root.read_file("naïve – 日本.txt", 1) == b"u"
    assert "naïve – 日本.txt" in [entry.name for entry in root.entries()]


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../repo", "docs/", "a\0b"])
def test_names_must_be_single_components(root: DirectoryHandle, name: str) -> None:
    for call in (
        lambda: root.entry(name),
        lambda: root.read_file(name, 10),
        lambda: root.open_directory(name),
        lambda: root.open_file(name),
        lambda: root.open_listed_file(name),
    ):
        with pytest.raises(ValueError):
            call()


def test_a_closed_handle_refuses_use(workspace: Path) -> None:
    handle = FILESYSTEM.open_root(FILESYSTEM.canonical_directory(str(workspace)))
    handle.close()
    handle.close()  # twice is harmless
    with pytest.raises(ValueError, match="closed"):
        handle.entries()


# --- pinning: a handle keeps its directory --------------------------------------------------


def test_a_pinned_child_keeps_its_directory_after_a_rename_swap(
    root: DirectoryHandle, workspace: Path
) -> None:
    with root.open_directory("docs") as docs:
        (workspace / "docs").rename(workspace / "old-docs")
        (workspace / "docs").mkdir()
        (workspace / "docs" / "planted.md").write_bytes(b"planted")
        assert [entry.name for entry in docs.entries()] == ["deep", "guide.md"]
        assert docs.read_file("guide.md", 10) == b"guide"
        with pytest.raises(EntryNotFound):
            docs.read_file("planted.md", 10)


def test_the_child_path_is_its_parents_joined_with_the_name(root: DirectoryHandle) -> None:
    with root.open_directory("docs") as docs:
        assert os.path.normcase(docs.physical_path) == os.path.normcase(
            os.path.join(root.physical_path, "docs")
        )


def test_concurrent_listings_and_reads_do_not_disturb_each_other(root: DirectoryHandle) -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(30):
                assert len(root.entries()) == 3
                assert root.entry("docs").kind is EntryKind.DIRECTORY
                assert root.read_file("README.md", 100) == b"# readme\n"
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


# --- roots ------------------------------------------------------------------------------------


def test_canonical_directory_resolves_relative_paths(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace.parent)
    canonical = FILESYSTEM.canonical_directory("repo")
    assert os.path.normcase(canonical) == os.path.normcase(os.path.realpath(workspace))


def test_canonical_directory_errors_name_the_path(workspace: Path) -> None:
    missing = str(workspace / "missing")
    with pytest.raises(EntryNotFound) as refused:
        FILESYSTEM.canonical_directory(missing)
    assert missing in refused.value.message
    with pytest.raises(NotADirectory):
        FILESYSTEM.canonical_directory(str(workspace / "README.md"))
    with pytest.raises(FilesystemError):
        FILESYSTEM.canonical_directory("")


def test_open_root_walks_to_the_canonical_path(workspace: Path) -> None:
    canonical = FILESYSTEM.canonical_directory(str(workspace / "docs"))
    with FILESYSTEM.open_root(canonical) as handle:
        assert os.path.normcase(handle.physical_path) == os.path.normcase(canonical)
        assert handle.read_file("guide.md", 10) == b"guide"


# --- links: never followed --------------------------------------------------------------------


@needs_reparse_points
def test_a_link_to_a_file_outside_is_refused(
    root: DirectoryHandle, workspace: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"secret")
    make_symlink(workspace / "leak.txt", secret)
    assert root.entry("leak.txt").kind is EntryKind.SYMLINK
    with pytest.raises(SymlinkRefused):
        root.read_file("leak.txt", 100)
    with pytest.raises(SymlinkRefused):
        root.open_file("leak.txt")
    with pytest.raises(SymlinkRefused):
        root.open_listed_file("leak.txt")


@needs_reparse_points
def test_a_link_to_a_directory_is_refused(root: DirectoryHandle, workspace: Path) -> None:
    make_symlink(workspace / "linked", workspace / "docs", directory=True)
    assert root.entry("linked").kind is EntryKind.SYMLINK
    with pytest.raises(SymlinkRefused):
        root.open_directory("linked")


@needs_reparse_points
def test_a_link_swapped_in_while_a_file_is_read_is_refused_next_time(
    root: DirectoryHandle, workspace: Path, tmp_path: Path
) -> None:
    """Hostile: between two reads the file is replaced by a link to a secret."""
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"secret")
    with root.open_file("README.md") as handle:
        assert handle.read(2) == b"# "
        (workspace / "README.md").rename(workspace / "moved.md")
        make_symlink(workspace / "README.md", secret)
        assert handle.read(100) == b"readme\n"  # the open handle keeps the original file
    with pytest.raises(SymlinkRefused):
        root.read_file("README.md", 100)


@needs_reparse_points
def test_a_directory_swapped_for_a_link_after_the_parent_was_opened(
    root: DirectoryHandle, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "guide.md").write_bytes(b"outside")
    (workspace / "docs").rename(workspace / "old-docs")
    make_symlink(workspace / "docs", outside, directory=True)
    with pytest.raises(SymlinkRefused):
        root.open_directory("docs")
