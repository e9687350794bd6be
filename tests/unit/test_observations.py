"""``domain.project.observations``: what a computation asked of the files and programs,
asked again. Through the in-memory filesystem and the fake program finder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from artifactize.domain.project.observations import (
    PARALLEL_CHECK_MIN_QUESTIONS,
    Observer,
    _pieces,
    still_hold,
)
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


class RecordingChecks:
    """``ParallelChecks`` running the pieces in turn, in this process, and noting them."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self.calls: list[int] = []  # how many checks each ``started`` was given
        self.counted = 0  # how many times the workers were counted

    def workers(self) -> int:
        self.counted += 1
        return self._workers

    @contextmanager
    def started(self, checks: Any) -> Iterator[Callable[[], bool]]:
        self.calls.append(len(checks))
        yield lambda: all([check() for check in checks])  # every piece, as processes would


def test_a_log_below_the_parallel_limit_is_checked_in_one_piece() -> None:
    """Fewer questions than ``PARALLEL_CHECK_MIN_QUESTIONS`` cost less than starting the
    workers: one piece, in the caller; at the limit, one piece per worker."""
    tree: dict[str, Node] = {f"d{n}": {} for n in range(PARALLEL_CHECK_MIN_QUESTIONS)}
    files = MemoryFilesystem({"/wide": tree})
    observer = Observer(files, FakePrograms(), safely_old=lambda _: True)
    with observer.filesystem.open_root("/wide") as root:
        for n in range(PARALLEL_CHECK_MIN_QUESTIONS - 2):  # "root" is one question more
            root.entry(f"d{n}")
    below = observer.log
    assert len(below) == PARALLEL_CHECK_MIN_QUESTIONS - 1
    checks = RecordingChecks(workers=2)
    assert still_hold(below, files, FakePrograms(), checks)
    assert checks.calls == [] and checks.counted == 0  # nor the system's limits read
    with observer.filesystem.open_root("/wide") as root:
        root.entry("d0")  # the root's opening and this entry: two questions more
    at_limit = observer.log[:PARALLEL_CHECK_MIN_QUESTIONS]
    assert still_hold(at_limit, files, FakePrograms(), checks)
    assert checks.calls == [2]
    assert still_hold(at_limit, files, FakePrograms(), RecordingChecks(workers=1))


def test_the_pieces_are_the_log_in_order_and_about_even() -> None:
    """A ``below`` weighs its paths: a log of one wide question and many small ones is cut
    where the questions, not the entries, are halved; the pieces are the log, in order."""
    wide: list[Any] = ["below", "/repo", [f"f{n}" for n in range(20_000)], False, "digest"]
    small: list[list[Any]] = [["entry", "/repo", f"n{n}", ["n", "file"]] for n in range(40_000)]
    log = [wide, *small]
    pieces = _pieces(log, lambda: 2)
    assert pieces is not None and [entry for piece in pieces for entry in piece] == log
    # 20,001 (its paths and itself) + 10,000 of 60,001: the first run past the half
    assert [len(piece) for piece in pieces] == [1 + 10_000, 30_000]
    thirds = _pieces(small * 3, lambda: 3)
    assert thirds is not None and [len(piece) for piece in thirds] == [40_000] * 3
    assert _pieces(small[: PARALLEL_CHECK_MIN_QUESTIONS - 1], lambda: 2) is None
    assert _pieces([["below"]], lambda: 2) is None  # another shape: one piece, which says False


def test_a_change_in_any_piece_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut into pieces, the log says what it says whole: a change seen by the last piece
    alone, or by the first, makes it False."""
    monkeypatch.setattr("artifactize.domain.project.observations.PARALLEL_CHECK_MIN_QUESTIONS", 4)
    tree: dict[str, Node] = {f"d{n}": {} for n in range(12)}
    files = MemoryFilesystem({"/wide": tree})
    observer = Observer(files, FakePrograms(), safely_old=lambda _: True)
    with observer.filesystem.open_root("/wide") as root:
        for n in range(12):
            root.entry(f"d{n}")
    checks = RecordingChecks(workers=3)
    assert still_hold(observer.log, files, FakePrograms(), checks)
    assert checks.calls == [3]
    for gone in ("d11", "d0"):
        tree.pop(gone)
        assert not still_hold(observer.log, files, FakePrograms(), checks)
        tree[gone] = {}
    assert files.open_handles == 0
