"""The use case behind ``artifactize init``: read the root, detect the project, write the files.

``domain/project/starter.py`` holds the pure rules (what a project looks like, what the two files
say); this module does the I/O around them, kept out of the command so the command only
parses, calls ``Services.init_project`` and renders. Marker files are read bounded and
no-follow; both files are created exclusively and never through a symbolic link: an
existing file is never overwritten (``CommandError``, exit 2, naming it), and if the second
file cannot be written the first is removed again, so nothing is half-written.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from artifactize.entrypoints.errors import CommandError

if TYPE_CHECKING:
    from artifactize.domain.project.starter import Project

EXISTS = "{path} already exists; artifactize init never overwrites (move it away, or edit it)."
NOT_A_FOLDER = "Cannot initialize {repo}: not a readable folder ({reason})."
WRITE_FAILED = "Cannot write {path}: {reason}"

# Flags only POSIX has (Windows has none of them; there an exclusive create already refuses
# a link at the name, and handles are not inherited unless asked for).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class InitResult:
    """What ``init`` detected and wrote: the files in the order they were written."""

    repo: Path
    project: Project
    name: str  # the Artifact's name in the declaration
    files: tuple[tuple[str, str], ...]  # (path relative to the root, text written)

    @property
    def tests(self) -> list[str] | None:
        """The program and arguments the runtime eval runs, or None when left to fill in."""
        if self.project.test_command is None:
            return None
        return [self.project.test_command, *self.project.test_args]

    @property
    def written(self) -> list[Path]:
        return [self.repo / relative for relative, _text in self.files]

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document (camelCase)."""
        tests = self.tests
        name = self.name
        return {
            "repo": str(self.repo),
            "project": self.project.language,
            "name": name,
            "alsoFound": list(self.project.others),
            "tests": tests,
            "written": [
                {"path": relative, "bytes": len(text.encode("utf-8"))}
                for relative, text in self.files
            ],
            "evals": [f"{name}/tests", f"{name}/review", f"{name}/signoff"][tests is None :],
        }


def init_project(repo: Path) -> InitResult:
    """Detect the project at ``repo`` and write its starter files; ``CommandError`` when the
    root is unreadable, a file exists already, nothing is detected or a write fails."""
    from artifactize.domain.project.starter import (
        DECLARATION,
        IGNORE_FILE,
        NOTHING_DETECTED,
        artifact_name,
        declaration_text,
        detect,
        ignore_text,
        readme_of,
    )

    root = repo.resolve()
    names = _names(root)
    for existing in (DECLARATION, IGNORE_FILE):
        if existing in names or (root / existing).is_symlink():
            raise CommandError(EXISTS.format(path=root / existing))
    project = detect(names, _marker_texts(root, names), _present_probes(root))
    if project is None:
        raise CommandError(NOTHING_DETECTED.format(repo=root))
    name = artifact_name(root.name)
    files = (
        (IGNORE_FILE, ignore_text(project)),
        (DECLARATION, declaration_text(project, name, readme_of(names))),
    )
    _write_all(root, files)
    return InitResult(root, project, name, files)


def _names(root: Path) -> frozenset[str]:
    try:
        return frozenset(entry.name for entry in root.iterdir())
    except OSError as exc:
        raise CommandError(NOT_A_FOLDER.format(repo=root, reason=exc.strerror)) from None


def _marker_texts(root: Path, names: frozenset[str]) -> dict[str, str]:
    from artifactize.domain.project.starter import MARKER_FILES, MARKER_READ_BYTES

    return {
        name: _read_small(root, name, MARKER_READ_BYTES) for name in MARKER_FILES if name in names
    }


def _present_probes(root: Path) -> frozenset[str]:
    from artifactize.domain.project.starter import PROBES, PYTEST_PROBES

    return frozenset(probe for probe in (*PROBES, *PYTEST_PROBES) if os.path.lexists(root / probe))


def _write_all(root: Path, files: tuple[tuple[str, str], ...]) -> None:
    """Create every file, or none: on any failure the ones already written are removed."""
    written: list[Path] = []
    try:
        for relative, text in files:
            path = root / relative
            _create(path, text)
            written.append(path)
    except BaseException:
        for path in written:  # nothing half-written
            path.unlink()
        raise


def _is_reparse_point(path: Path) -> bool:
    """A symbolic link, junction or other reparse point (Windows); False when missing."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    attributes = getattr(info, "st_file_attributes", 0)
    return stat.S_ISLNK(info.st_mode) or bool(attributes & stat.FILE_ATTRIBUTE_REPARSE_POINT)


def _create(path: Path, text: str) -> None:
    """Write ``text`` to a new file (never an existing one, never through a symlink)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        descriptor = os.open(path, flags, 0o644)
    except FileExistsError:
        raise CommandError(EXISTS.format(path=path)) from None
    except OSError as exc:
        raise CommandError(WRITE_FAILED.format(path=path, reason=exc.strerror)) from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def _read_small(repo: Path, name: str, limit: int) -> str:
    """At most ``limit`` bytes of a regular marker file, as text ('' when unreadable)."""
    path = repo / name
    if not _NOFOLLOW and _is_reparse_point(path):
        return ""  # Windows: no O_NOFOLLOW; a marker is only a hint, a race costs nothing
    try:
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return ""
        return handle.read(limit).decode("utf-8", "replace")
