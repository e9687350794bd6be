"""``artifactize init``: write a starter ``index.artf`` and ``.artfignore`` for the repository.

It detects a Python, JavaScript/TypeScript, Rust or Go project at the root (``--repo``,
default the current directory), renders both files (``domain/starter.py``) and writes them
with exclusive creation: an existing file is never overwritten (exit 2, naming it), and if
the second file cannot be written the first is removed again, so nothing is half-written.
``--json`` prints what it wrote.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.errors import CommandError

EXISTS = "{path} already exists; artifactize init never overwrites (move it away, or edit it)."
NOT_A_FOLDER = "Cannot initialize {repo}: not a readable folder ({reason})."
WRITE_FAILED = "Cannot write {path}: {reason}"
WROTE = "Wrote {path}"


def init_command() -> None:
    """Write a starter index.artf and .artfignore for a Python, JS/TS, Rust or Go project."""
    from artifactize.domain.starter import (
        DECLARATION,
        IGNORE_FILE,
        MARKER_FILES,
        MARKER_READ_BYTES,
        NOTHING_DETECTED,
        PROBES,
        artifact_name,
        declaration_text,
        detect,
        ignore_text,
        readme_of,
    )

    repo = Path(CliContext.options.repo).resolve()
    try:
        names = frozenset(entry.name for entry in repo.iterdir())
    except OSError as exc:
        raise CommandError(NOT_A_FOLDER.format(repo=repo, reason=exc.strerror)) from None
    for existing in (DECLARATION, IGNORE_FILE):
        if existing in names or (repo / existing).is_symlink():
            raise CommandError(EXISTS.format(path=repo / existing))
    texts = {
        name: _read_small(repo, name, MARKER_READ_BYTES) for name in MARKER_FILES if name in names
    }
    present = frozenset(probe for probe in PROBES if os.path.lexists(repo / probe))
    project = detect(names, texts, present)
    if project is None:
        raise CommandError(NOTHING_DETECTED.format(repo=repo))
    name = artifact_name(repo.name)
    files = [
        (IGNORE_FILE, ignore_text(project)),
        (DECLARATION, declaration_text(project, name, readme_of(names))),
    ]
    written: list[Path] = []
    try:
        for relative, text in files:
            path = repo / relative
            _create(path, text)
            written.append(path)
    except BaseException:
        for path in written:  # nothing half-written
            path.unlink()
        raise
    tests = [project.test_command, *project.test_args] if project.test_command is not None else None
    report: dict[str, Any] = {
        "repo": str(repo),
        "project": project.language,
        "name": name,
        "alsoFound": list(project.others),
        "tests": tests,
        "written": [
            {"path": relative, "bytes": len(text.encode("utf-8"))} for relative, text in files
        ],
        "evals": [f"{name}/tests", f"{name}/review", f"{name}/signoff"][tests is None :],
    }
    if CliContext.options.json:
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    for path in written:
        typer.echo(WROTE.format(path=path))
    if tests is None:
        typer.echo(
            f"Detected a {project.label} project; which program runs its tests is yours to "
            f"fill in: see the comment above [evals.tests] in index.artf. Next: artifactize "
            f"config check"
        )
        return
    typer.echo(
        f"Detected a {project.label} project; its tests run as "
        f"`{' '.join(tests)}`. Next: artifactize config check, then "
        f"artifactize verify {name}/tests"
    )


# Flags only POSIX has (Windows has none of them; there an exclusive create already refuses
# a link at the name, and handles are not inherited unless asked for).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _is_reparse_point(path: Path) -> bool:
    """A symbolic link, junction or other reparse point (Windows); False when missing."""
    import stat

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
        import stat

        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return ""
        return handle.read(limit).decode("utf-8", "replace")
