"""What a computation saw of the files and the programs, to tell later that it would see
the same again (the first check of a stored ``status`` answer: ``ports.stored_answers``).

``Observer`` wraps the filesystem port and the program finder. Every question asked
through them is logged with its answer, in order: a folder opened, listed or stat'ed, an
entry's kind, a file's identity, a program found on ``PATH``. ``still_hold`` asks every
logged question again of fresh ports, the same way (each folder opened again by its
canonical path, no link followed), and compares the answers. A computation over the
workspace is a function of what it observed through these ports (and of the environment,
the options and the code, which the caller keys), so when every answer is the same, so is
its result: the workspace it loaded, every key, every program.

A file's content is logged by its identity, taken before and after it was read, and only
when that identity is safely old (the file index's racy rule: a second write within one
timestamp tick could leave it unchanged). What cannot be logged that way makes the log
unusable (``complete`` False): a file opened for reading in pieces, a link's target read,
a content whose identity moved or was too young. The caller then keeps no log, and the next
run computes everything.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, TypeVar

from artifactize.ports.filesystem import (
    DirectoryHandle,
    DirEntry,
    FileHandle,
    FileIdentity,
    Filesystem,
    FilesystemError,
)
from artifactize.ports.parallel_checks import ParallelChecks
from artifactize.ports.programs import ProgramFinder, ProgramIdentity

Entry = list[Any]  # [question, folder or program, arguments..., answer]
T = TypeVar("T")

# A log asking fewer questions than this is checked in one piece: below it, starting the
# other workers costs more than they save (a ``fork`` of a large process is a few ms, and
# this many stats take about 0.1 s). Each path of a ``below`` question counts as one.
PARALLEL_CHECK_MIN_QUESTIONS = 20_000


def _key(identity: FileIdentity | None) -> str | None:
    return None if identity is None else identity.key()


def _digest(keys: Sequence[str | None]) -> str:
    """Many identity keys as one digest (a kept walk asks for a hundred thousand)."""
    text = "\n".join("-" if key is None else key for key in keys)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _failure(exc: FilesystemError) -> list[str]:
    return ["!", type(exc).__name__, str(exc)]


def _entry(found: DirEntry) -> list[Any]:
    return [found.name, found.kind.value]


class Observer:
    """The ports a computation runs on, logging what they answered (``log``)."""

    def __init__(
        self,
        filesystem: Filesystem,
        programs: ProgramFinder,
        *,
        safely_old: Callable[[FileIdentity], bool],  # the racy rule (ports.stored_answers)
    ) -> None:
        self.log: list[Entry] = []
        self.complete = True
        self._safely_old = safely_old
        self.filesystem = _ObservedFilesystem(filesystem, self)
        self.programs = _ObservedPrograms(programs, self)

    def incomplete(self) -> None:
        self.complete = False
        self.log.clear()

    def safely_old(self, identity: FileIdentity | None) -> bool:
        return identity is not None and self._safely_old(identity)

    def asked(self, *entry: Any) -> None:
        if self.complete:  # an incomplete log is never kept: no use growing it
            self.log.append(list(entry))

    def logged(
        self,
        question: str,
        subject: str,
        args: Sequence[Any],
        call: Callable[[], T],
        answer: Callable[[T], Any],
    ) -> T:
        """``call()``, logged as ``[question, subject, *args, answer(found)]``, or with the
        filesystem's refusal (raised again) as its answer."""
        try:
            found = call()
        except FilesystemError as exc:
            self.asked(question, subject, *args, _failure(exc))
            raise
        self.asked(question, subject, *args, answer(found))
        return found

    def scripts(self, real: Any) -> Any:
        """``real`` fingerprint scripts (``FingerprintScripts``), or None: one that runs
        leaves the log incomplete (what a program prints cannot be asked again)."""
        return None if real is None else _ObservedScripts(real, self)


class _ObservedScripts:
    def __init__(self, real: Any, observer: Observer) -> None:
        self._real = real
        self._observer = observer

    def run(self, workspace: Any, artifact: Any, script: Any) -> bytes:
        self._observer.incomplete()
        data: bytes = self._real.run(workspace, artifact, script)
        return data


def _same(found: Any) -> Any:
    return found


def _listed(found: Sequence[DirEntry]) -> list[list[Any]]:
    return [_entry(e) for e in found]


def _done(_: Any) -> bool:
    return True


class _ObservedFilesystem:
    def __init__(self, real: Filesystem, observer: Observer) -> None:
        self._real = real
        self._observer = observer

    def canonical_directory(self, path: str) -> str:
        call = lambda: self._real.canonical_directory(path)  # noqa: E731
        found: str = self._observer.logged("canonical", path, (), call, _same)
        return found

    def open_root(self, canonical_path: str) -> DirectoryHandle:
        call = lambda: self._real.open_root(canonical_path)  # noqa: E731
        handle = self._observer.logged("root", canonical_path, (), call, _done)
        return _ObservedFolder(handle, self._observer, opened_by=None)


class _ObservedFolder:
    """A folder handle whose every answer is logged under its physical path."""

    def __init__(
        self, real: DirectoryHandle, observer: Observer, *, opened_by: list[str] | None
    ) -> None:
        self._real = real
        self._observer = observer
        # [the parent's physical path, the name] when its parent's ``open_directory``
        # opened it (after a no-follow stat of the name); None: ``open_root`` did.
        self._opened_by = opened_by

    @property
    def physical_path(self) -> str:
        return self._real.physical_path

    def _ask(
        self, question: str, args: Sequence[Any], call: Callable[[], T], answer: Callable[[T], Any]
    ) -> T:
        return self._observer.logged(question, self._real.physical_path, args, call, answer)

    def entries(self, at_most: int | None = None) -> list[DirEntry]:
        found: list[DirEntry] = self._ask(
            "entries", [at_most], lambda: self._real.entries(at_most), _listed
        )
        return list(found)

    def entry(self, name: str) -> DirEntry:
        return self._ask("entry", [name], lambda: self._real.entry(name), _entry)

    def open_directory(self, name: str) -> DirectoryHandle:
        found = self._ask("folder", [name], lambda: self._real.open_directory(name), _done)
        parent = [self._real.physical_path, name]
        return _ObservedFolder(found, self._observer, opened_by=parent)

    def identity(self, name: str) -> FileIdentity | None:
        return self._ask("identity", [name], lambda: self._real.identity(name), _key)

    def folder_identity(self, name: str) -> FileIdentity | None:
        return self._ask("folder_identity", [name], lambda: self._real.folder_identity(name), _key)

    def opened_identity(self) -> FileIdentity | None:
        found = self._real.opened_identity()
        self._observer.asked("opened", self._real.physical_path, self._opened_by, _key(found))
        return found

    def identities_below(self, paths: Sequence[str], *, folders: bool) -> list[FileIdentity | None]:
        listed = list(paths)
        call = lambda: self._real.identities_below(listed, folders=folders)  # noqa: E731
        found = self._ask("below", [listed, folders], call, lambda i: _digest([_key(x) for x in i]))
        return list(found)

    def identity_keys_below(self, paths: Sequence[str], *, folders: bool) -> list[str | None]:
        listed = list(paths)
        call = lambda: self._real.identity_keys_below(listed, folders=folders)  # noqa: E731
        found: list[str | None] = self._ask("below", [listed, folders], call, _digest)
        return list(found)

    def read_file(self, name: str, max_bytes: int) -> bytes:
        return self._read(name, lambda: self._real.read_file(name, max_bytes))

    def read_listed_file(self, name: str, max_bytes: int) -> bytes:
        return self._read(name, lambda: self._real.read_listed_file(name, max_bytes))

    def _read(self, name: str, read: Callable[[], bytes]) -> bytes:
        """A file read whole: logged as its identity, the same before and after the read
        and safely old; anything else leaves the log incomplete."""
        before = self._real.identity(name)
        data = self._ask("content", [name], read, lambda _: _key(before))
        if self._real.identity(name) != before or not self._observer.safely_old(before):
            self._observer.incomplete()
        return data

    def open_file(self, name: str) -> FileHandle:
        self._observer.incomplete()  # read in pieces: not logged
        return self._real.open_file(name)

    def open_listed_file(self, name: str) -> FileHandle:
        self._observer.incomplete()  # read in pieces: not logged
        return self._real.open_listed_file(name)

    def read_link(self, name: str) -> str:
        self._observer.incomplete()
        return self._real.read_link(name)

    def close(self) -> None:
        self._real.close()

    def __enter__(self) -> DirectoryHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._real.close()


class _ObservedPrograms:
    def __init__(self, real: ProgramFinder, observer: Observer) -> None:
        self._real = real
        self._observer = observer
        self.windows_paths = real.windows_paths

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        found = self._real.find_on_path(name, path_variable, cwd)
        self._observer.asked("find", name, path_variable, cwd, found)
        return found

    def is_executable_file(self, path: str) -> bool:
        found = self._real.is_executable_file(path)
        self._observer.asked("executable", path, found)
        return found

    def identity(self, path: str) -> ProgramIdentity:
        found = self._real.identity(path)
        self._observer.asked("program", path, [found.real_path, found.own_environment])
        return found


def still_hold(
    log: Sequence[Entry],
    filesystem: Filesystem,
    programs: ProgramFinder,
    parallel: ParallelChecks | None = None,
) -> bool:
    """Whether every question of ``log`` gets the same answer now (each folder opened again
    by its physical path, no link followed); False for a log this code cannot read, and for
    an empty one (a computation that asked nothing was not observed)."""
    with checking(log, filesystem, programs, parallel) as held:
        return held()


@contextmanager
def checking(
    log: Sequence[Entry],
    filesystem: Filesystem,
    programs: ProgramFinder,
    parallel: ParallelChecks | None = None,
) -> Iterator[Callable[[], bool]]:
    """``still_hold``, started now: the block is given a function that waits for the answer,
    and may work meanwhile (what it does is wasted if the answer is False).

    A log of at least ``PARALLEL_CHECK_MIN_QUESTIONS`` questions is cut into one piece per
    worker ``parallel`` has, of about as many questions each, checked at the same time:
    the questions are independent (each piece opens the folders it asks of itself)."""
    if not log:
        yield lambda: False
        return
    pieces = None if parallel is None else _pieces(log, parallel.workers)
    if parallel is None or pieces is None:
        yield lambda: _all_hold(log, filesystem, programs)
        return
    with parallel.started(
        [functools.partial(_all_hold, piece, filesystem, programs) for piece in pieces]
    ) as held:
        yield held


def _weight(entry: Entry) -> int:
    """About how much asking an entry again costs, in stats: a ``below`` one per path, and
    one more for the entry's own work (its digest, the calls around it)."""
    if entry[0] == "below" and isinstance(entry[2], list):
        return 1 + len(entry[2])
    return 1


def _pieces(log: Sequence[Entry], count_workers: Callable[[], int]) -> list[Sequence[Entry]] | None:
    """``log`` in one run per worker, of about as many questions each, in order; None when
    it asks fewer than ``PARALLEL_CHECK_MIN_QUESTIONS`` (the workers are then not even
    counted: that reads the system's limits), when there is one worker, or when it cannot
    be weighed (another shape of log: checked in one piece, which says False)."""
    try:
        weights = [_weight(entry) for entry in log]
    except (TypeError, IndexError, KeyError):
        return None
    total = sum(weights)
    if total < PARALLEL_CHECK_MIN_QUESTIONS:
        return None
    workers = count_workers()
    if workers < 2:
        return None
    pieces: list[Sequence[Entry]] = []
    start, held = 0, 0
    for index, weight in enumerate(weights):
        held += weight
        if held * workers >= total * (len(pieces) + 1) and len(pieces) < workers - 1:
            pieces.append(log[start : index + 1])
            start = index + 1
    pieces.append(log[start:])
    return [piece for piece in pieces if piece]


def _all_hold(log: Sequence[Entry], filesystem: Filesystem, programs: ProgramFinder) -> bool:
    folders: dict[str, DirectoryHandle | None] = {}
    try:
        return all(_holds(entry, filesystem, programs, folders) for entry in log)
    except (TypeError, ValueError, IndexError, KeyError):
        return False  # another shape of log
    finally:
        for handle in folders.values():
            if handle is not None:
                handle.close()


def _folder(
    path: str, filesystem: Filesystem, folders: dict[str, DirectoryHandle | None]
) -> DirectoryHandle | None:
    if path not in folders:
        try:
            folders[path] = filesystem.open_root(path)
        except FilesystemError:
            folders[path] = None
    return folders[path]


def _holds(
    entry: Entry,
    filesystem: Filesystem,
    programs: ProgramFinder,
    folders: dict[str, DirectoryHandle | None],
) -> bool:
    question, subject, *rest = entry
    answer = rest[-1]
    if question == "find":
        path_variable, cwd = rest[:2]
        return bool(programs.find_on_path(subject, path_variable, cwd) == answer)
    if question == "executable":
        return bool(programs.is_executable_file(subject) == answer)
    if question == "program":
        found = programs.identity(subject)
        return bool([found.real_path, found.own_environment] == answer)
    if question == "canonical":
        return bool(_now(lambda: filesystem.canonical_directory(subject)) == answer)
    if question == "root":
        return bool(_now(lambda: _opened(filesystem, subject)) == answer)
    if question == "opened" and rest[0] is None:  # a folder opened by ``open_root``
        return bool(_now(lambda: _opened_identity(filesystem, subject)) == answer)
    if question == "opened":  # opened by its parent, after a no-follow stat of its name
        parent, name = rest[0]
        above = _folder(parent, filesystem, folders)
        return above is not None and _now(lambda: _key(above.folder_identity(name))) == answer
    handle = _folder(subject, filesystem, folders)
    if handle is None:
        return False
    return bool(_now(lambda: _asked_of(handle, question, rest[:-1])) == answer)


def _opened(filesystem: Filesystem, path: str) -> bool:
    with filesystem.open_root(path):
        return True


def _opened_identity(filesystem: Filesystem, path: str) -> str | None:
    with filesystem.open_root(path) as handle:
        return _key(handle.opened_identity())


def _asked_of(handle: DirectoryHandle, question: str, args: list[Any]) -> Any:
    if question == "entries":
        return [_entry(e) for e in handle.entries(args[0])]
    if question == "entry":
        return _entry(handle.entry(args[0]))
    if question == "folder":
        handle.open_directory(args[0]).close()
        return True
    if question == "identity":
        return _key(handle.identity(args[0]))
    if question == "folder_identity":
        return _key(handle.folder_identity(args[0]))
    if question == "below":
        paths, folders = args
        return _digest(handle.identity_keys_below(paths, folders=folders))
    if question == "content":
        return _key(handle.identity(args[0]))
    raise ValueError(question)


def _now(ask: Callable[[], Any]) -> Any:
    try:
        return ask()
    except FilesystemError as exc:
        return _failure(exc)
