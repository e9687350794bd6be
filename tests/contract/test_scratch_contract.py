"""The scratch-space contract, run by every adapter of ``ScratchSpace``: private folders
(0700 on POSIX, an owner-only DACL on Windows) and a removal that never leaves the tree."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.contract.adapters import (
    is_private,
    make_symlink,
    needs_real_acls,
    needs_reparse_points,
    scratch_space,
)

SCRATCH = scratch_space()


def test_a_private_folder_is_new_empty_and_below_its_parent(tmp_path: Path) -> None:
    parent = tmp_path / "outputs" / "nested"
    first = SCRATCH.create_private_directory(str(parent), "call-")
    second = SCRATCH.create_private_directory(str(parent), "call-")
    assert first != second
    for created in (first, second):
        assert os.path.isdir(created)
        assert os.listdir(created) == []
        assert os.path.basename(created).startswith("call-")
        assert os.path.normcase(os.path.dirname(created)) == os.path.normcase(
            os.path.realpath(parent)
        )
        assert os.path.isabs(created)


def test_without_a_parent_the_system_temp_folder_is_used() -> None:
    created = SCRATCH.create_private_directory(None, "artifactize-contract-")
    try:
        assert os.path.isdir(created)
        assert os.path.basename(created).startswith("artifactize-contract-")
    finally:
        SCRATCH.remove_tree(created)
    assert not os.path.exists(created)


@needs_real_acls
def test_the_folder_is_private_to_this_user(tmp_path: Path) -> None:
    created = SCRATCH.create_private_directory(str(tmp_path / "fresh-parent"), "call-")
    assert is_private(created)
    assert is_private(str(tmp_path / "fresh-parent"))


def test_remove_tree_removes_everything_inside(tmp_path: Path) -> None:
    created = Path(SCRATCH.create_private_directory(str(tmp_path), "call-"))
    (created / "a" / "b").mkdir(parents=True)
    (created / "a" / "b" / "file.txt").write_text("x")
    read_only = created / "a" / "read-only.txt"
    read_only.write_text("r")
    read_only.chmod(stat.S_IREAD)
    SCRATCH.remove_tree(str(created))
    assert not created.exists()
    SCRATCH.remove_tree(str(created))  # already gone: fine


@needs_reparse_points
def test_remove_tree_never_follows_a_link_out_of_the_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    created = Path(SCRATCH.create_private_directory(str(tmp_path), "call-"))
    make_symlink(created / "escape", outside, directory=True)
    SCRATCH.remove_tree(str(created))
    assert not created.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def _invocation(tmp_path: Path) -> tuple[Path, list[str]]:
    """A root with two child folders, made by the port, as a runtime eval's are."""
    root = Path(SCRATCH.create_private_directory(str(tmp_path), "runtime-"))
    names = [SCRATCH.create_private_directory(str(root), prefix) for prefix in ("home-", "tmp-")]
    return root, names


def test_emptied_says_true_only_for_folders_as_created(tmp_path: Path) -> None:
    root, names = _invocation(tmp_path)
    # Windows never hands a folder on (its DACL is not rechecked): always False there.
    assert SCRATCH.emptied(str(root), names) is (os.name != "nt")
    assert not SCRATCH.emptied(str(root), names[:1])  # one child more than named
    assert not SCRATCH.emptied(str(tmp_path / "missing"), names)


def test_emptied_is_false_once_a_command_left_anything(tmp_path: Path) -> None:
    root, names = _invocation(tmp_path)
    (Path(names[0]) / "cache.db").write_text("x")
    assert not SCRATCH.emptied(str(root), names)

    root, names = _invocation(tmp_path)
    (root / "extra").mkdir()
    assert not SCRATCH.emptied(str(root), names)

    root, names = _invocation(tmp_path)
    Path(names[1]).rmdir()
    # a child replaced by a link out of the tree
    make_symlink(Path(names[1]), tmp_path, directory=True)
    assert not SCRATCH.emptied(str(root), names)


@needs_real_acls
def test_emptied_is_false_for_a_folder_opened_to_others(tmp_path: Path) -> None:
    root, names = _invocation(tmp_path)
    Path(names[0]).chmod(0o755)
    assert not SCRATCH.emptied(str(root), names)
