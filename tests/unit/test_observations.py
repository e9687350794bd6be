"""``domain.project.observations``: what a computation asked of the files and programs,
asked again. Through the in-memory filesystem and the fake program finder."""

from __future__ import annotations

from typing import Any

import pytest

from artifactize.domain.project.observations import Observer, still_hold
from artifactize.ports.filesystem import EntryNotFound
from tests.fakes.filesystem import MemoryFilesystem, Node
from tests.fakes.processes import FakePrograms


def _world() -> tuple[dict[str, Node], MemoryFilesystem]:
    tree: dict[str, Node] = {"a": {"x.txt": b"x"}, "b.txt": b"b"}
    return tree, MemoryFilesystem({"/repo": tree})


def _observed(files: MemoryFilesystem, programs: Any) -> Observer:
    observer = Observer(files, programs, safely_old=lambda _: True)
    with observer.filesystem.open_root("/repo") as root:
        assert [e.name for e in root.entries()] == ["a", "b.txt"]
        assert root.opened_identity() is None  # not told by this filesystem
        with root.open_directory("a") as folder:
            assert folder.entry("x.txt").name == "x.txt"
            assert folder.opened_identity() is None
        with pytest.raises(EntryNotFound):
            root.entry(".gitignore")
    assert observer.programs.find_on_path("true", "/usr/bin", "/repo") == "/usr/bin/true"
    return observer


def test_unchanged_files_and_programs_answer_the_same() -> None:
    _, files = _world()
    observer = _observed(files, FakePrograms())
    assert observer.complete
    assert still_hold(observer.log, files, FakePrograms())
    assert files.open_handles == 0  # every folder opened to ask again is closed


@pytest.mark.parametrize(
    "change",
    [
        lambda tree: tree.update({"c.txt": b"new"}),  # a listing
        lambda tree: tree["a"].pop("x.txt"),  # an entry gone
        lambda tree: tree.update({".gitignore": b"*.txt\n"}),  # an entry that was not there
        lambda tree: tree.pop("a"),  # a folder gone: it cannot be opened
    ],
)
def test_a_changed_answer_is_told(change: Any) -> None:
    tree, files = _world()
    observer = _observed(files, FakePrograms())
    change(tree)
    assert not still_hold(observer.log, files, FakePrograms())


def test_a_program_found_elsewhere_is_told() -> None:
    _, files = _world()
    observer = _observed(files, FakePrograms())
    assert not still_hold(observer.log, files, FakePrograms(missing=frozenset({"true"})))


def test_what_cannot_be_asked_again_leaves_the_log_incomplete() -> None:
    _, files = _world()
    observer = Observer(files, FakePrograms(), safely_old=lambda _: True)
    with observer.filesystem.open_root("/repo") as root:
        root.read_file("b.txt", 100)  # no identity told by this filesystem: not safely old
    assert not observer.complete
    observer = Observer(files, FakePrograms(), safely_old=lambda _: True)
    with observer.filesystem.open_root("/repo") as root, root.open_file("b.txt"):
        pass  # read in pieces
    assert not observer.complete

    class Script:
        def run(self, workspace: Any, artifact: Any, script: Any) -> bytes:
            return b"printed"

    observer = Observer(files, FakePrograms(), safely_old=lambda _: True)
    assert observer.scripts(None) is None
    scripts = observer.scripts(Script())
    assert observer.complete  # none ran yet
    assert scripts.run(None, None, None) == b"printed"
    assert not observer.complete  # what a program prints cannot be asked again


def test_a_log_of_another_shape_does_not_hold() -> None:
    _, files = _world()
    logs: list[list[list[Any]]] = [[["below", "/repo"]], [["nonsense", "/repo", 1]], [[]]]
    for log in logs:
        assert not still_hold(log, files, FakePrograms())


def test_an_empty_log_does_not_hold() -> None:
    _, files = _world()
    assert not still_hold([], files, FakePrograms())
