"""``PATH`` lookup on POSIX with links and odd entries (issue 25's review of ``9b5d67b``:
``access(X_OK)`` asked first gives the same answer as the ``stat`` + ``access`` before it):
a link to a program is found under the link's name, a dangling link, a link to a folder and
a program that is not executable are skipped, and the search goes on to the next entry."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from artifactize.adapters.posix.programs import PosixProgramFinder

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX PATH lookup")

FINDER = PosixProgramFinder()


def _program(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def folders(tmp_path: Path) -> list[Path]:
    made = [tmp_path / name for name in ("a", "b", "c", "d", "last")]
    for folder in made:
        folder.mkdir()
    return made


def test_links_and_non_programs_before_the_program_are_skipped(
    tmp_path: Path, folders: list[Path]
) -> None:
    dangling, to_folder, plain, ok, last = folders
    (dangling / "tool").symlink_to(tmp_path / "missing")
    (to_folder / "tool").symlink_to(to_folder)
    (plain / "tool").write_text("not a program\n")
    (plain / "tool").chmod(0o644)
    (ok / "tool").symlink_to(_program(tmp_path / "real-tool"))
    _program(last / "tool")
    path = os.pathsep.join(str(folder) for folder in folders)
    assert FINDER.find_on_path("tool", path, str(tmp_path)) == str(ok / "tool")
    for skipped in (dangling, to_folder, plain):
        assert not FINDER.is_executable_file(str(skipped / "tool"))


def test_the_same_path_from_another_folder_resolves_its_relative_entries_there(
    tmp_path: Path, folders: list[Path]
) -> None:
    """The folders of a ``PATH`` value are kept per value *and* working folder: the same
    relative ``PATH`` asked from two folders finds each folder's own program."""
    first, second = folders[0], folders[1]
    (first / "bin").mkdir()
    (second / "bin").mkdir()
    _program(first / "bin" / "tool")
    _program(second / "bin" / "tool")
    assert FINDER.find_on_path("tool", "bin", str(first)) == str(first / "bin" / "tool")
    assert FINDER.find_on_path("tool", "bin", str(second)) == str(second / "bin" / "tool")
