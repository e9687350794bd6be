"""The kernel's canonical names (``adapters/posix/canonical.py``) and ``open_root``'s single
open: each answer equals what ``os.path.realpath`` or the walk from ``/`` gives, and where
the kernel cannot be sure the answer is None (the caller then resolves the portable way)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from artifactize.adapters.posix.canonical import canonical_directory_path, canonical_path
from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.ports.filesystem import SymlinkRefused
from tests.support.processes import open_fd_count

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir() or not getattr(os, "O_PATH", 0),
    reason="the kernel's names come from /proc with O_PATH (Linux)",
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``real/sub/tool`` (a file), ``alias`` -> ``real``, ``tool-link`` -> ``real/sub/tool``."""
    root = Path(os.path.realpath(tmp_path))
    (root / "real" / "sub").mkdir(parents=True)
    (root / "real" / "sub" / "tool").write_text("#!/bin/sh\n")
    (root / "alias").symlink_to(root / "real")
    (root / "tool-link").symlink_to(root / "real" / "sub" / "tool")
    return root


def test_a_folder_reached_through_a_link_has_its_real_name(tree: Path) -> None:
    for path in (tree / "alias" / "sub", tree / "real" / "sub", tree / "alias"):
        assert canonical_directory_path(str(path)) == os.path.realpath(path)


def test_a_file_reached_through_links_has_its_real_name(tree: Path) -> None:
    for path in (tree / "tool-link", tree / "alias" / "sub" / "tool"):
        assert canonical_path(str(path)) == os.path.realpath(path)


def test_a_relative_path_is_named_from_the_working_folder(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree / "alias")
    assert canonical_directory_path("sub") == str(tree / "real" / "sub")


def test_no_answer_where_the_kernel_cannot_name_a_folder(tree: Path) -> None:
    before = open_fd_count()
    assert canonical_directory_path(str(tree / "missing")) is None
    assert canonical_directory_path(str(tree / "real" / "sub" / "tool")) is None  # a file
    assert canonical_directory_path("bad\0path") is None
    assert canonical_path(str(tree / "missing")) is None
    assert open_fd_count() == before


def test_a_name_that_no_longer_leads_to_the_folder_is_no_answer(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name read back is checked (same device and inode): one that names another entry
    (the folder moved or removed meanwhile) is refused, not trusted."""
    other = str(tree / "real")
    monkeypatch.setattr(os, "readlink", lambda _: other)
    assert canonical_directory_path(str(tree / "real" / "sub")) is None


def test_open_root_in_one_open_pins_the_canonical_folder(tree: Path) -> None:
    before = open_fd_count()
    with PosixFilesystem().open_root(str(tree / "real" / "sub")) as handle:
        assert handle.physical_path == str(tree / "real" / "sub")
        assert [entry.name for entry in handle.entries()] == ["tool"]
    assert open_fd_count() == before


def test_open_root_still_refuses_a_path_through_a_link(tree: Path) -> None:
    """The single open follows ``alias``; the kernel then names ``real/sub``, not the path
    asked for, so the walk from ``/`` decides, and refuses the link."""
    before = open_fd_count()
    with pytest.raises(SymlinkRefused):
        PosixFilesystem().open_root(str(tree / "alias" / "sub"))
    assert open_fd_count() == before
