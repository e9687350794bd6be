"""Execution-path pinning: which bytes a tool ran, recorded as provenance.

When an Agent review starts, every execution path of the eval's tools (and of the start and
stop commands of their tool sessions) is pinned: a file to the SHA-256 of its bytes, a
directory to the SHA-256 over each file's or symlink's relative path and digest. A symlink
inside a directory contributes its target text and is never followed; directories are only
traversed (no digest, no count). Pins are provenance, not part of the reuse key.

Directory digest layout (ours, stable): entries sorted by relative path (UTF-8 byte order),
each contributing ``path + NUL + kind + NUL + digest`` where kind is ``file`` (digest: the
raw SHA-256 of the bytes) or ``symlink`` (digest: the raw SHA-256 of the link text).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from artifactize.domain.declarations.model import CommandAgentTool
from artifactize.domain.logical_paths import logical_path_problem
from artifactize.domain.project.workspace import Workspace, published_name
from artifactize.domain.tools.locations import open_directory_at
from artifactize.ports.filesystem import DirectoryHandle, EntryKind, Filesystem, FilesystemError
from artifactize.ports.statuses import ErrorCode

PIN_FILE_BYTES_MAX = 1024 * 1024 * 1024
PIN_ENTRIES_MAX = 10_000
_CHUNK = 1024 * 1024

PREPARATION_FAILED = ErrorCode.PREPARATION_FAILED


class PinningError(Exception):
    """A path that cannot be pinned; the review fails with PREPARATION_FAILED."""

    code = PREPARATION_FAILED


@dataclass
class _Budget:
    entries: int = 0
    file_bytes: int = 0

    def check_room(self, path: str) -> None:
        if self.entries >= PIN_ENTRIES_MAX:
            raise PinningError(f"{path}: more than {PIN_ENTRIES_MAX} entries to pin")

    def entry(self, path: str) -> None:
        self.check_room(path)
        self.entries += 1

    def add_bytes(self, count: int, path: str) -> None:
        self.file_bytes += count
        if self.file_bytes > PIN_FILE_BYTES_MAX:
            raise PinningError(f"{path}: more than 1 GiB of file bytes to pin")


@dataclass
class Pinner:
    workspace: Workspace
    filesystem: Filesystem
    budget: _Budget = field(default_factory=_Budget)

    def pin(self, path: str) -> str:
        """The hex SHA-256 pin of one workspace-relative file or directory."""
        if not path or logical_path_problem(path) is not None:
            raise PinningError(f"{path!r} is not a safe workspace-relative path")
        parts = tuple(path.split("/"))
        try:
            with open_directory_at(self.filesystem, self.workspace.root_path, parts[:-1]) as parent:
                kind = parent.entry(parts[-1]).kind
                if kind is EntryKind.FILE:
                    self.budget.entry(path)
                    return self._file_digest(parent, parts[-1], path).hex()
                if kind is EntryKind.DIRECTORY:
                    with parent.open_directory(parts[-1]) as directory:
                        return self._directory_digest(directory, path)
        except FilesystemError as exc:
            raise PinningError(f"{path}: {exc.message}") from None
        raise PinningError(f"{path}: is a {kind.value}, which cannot be pinned")

    def _file_digest(self, parent: DirectoryHandle, name: str, path: str) -> bytes:
        digest = hashlib.sha256()
        with parent.open_file(name) as handle:
            while chunk := handle.read(_CHUNK):
                self.budget.add_bytes(len(chunk), path)
                digest.update(chunk)
        return digest.digest()

    def _directory_digest(self, directory: DirectoryHandle, path: str) -> str:
        records = sorted(self._records(directory, "", path), key=lambda r: r[0].encode("utf-8"))
        digest = hashlib.sha256()
        for relative, kind, value in records:
            digest.update(relative.encode("utf-8") + b"\0" + kind + b"\0" + value)
        return digest.hexdigest()

    def _records(
        self, directory: DirectoryHandle, prefix: str, root: str
    ) -> Iterator[tuple[str, bytes, bytes]]:
        for entry in directory.entries():
            relative = f"{prefix}/{entry.name}" if prefix else entry.name
            where = f"{root}/{relative}"
            if entry.kind is EntryKind.DIRECTORY:
                self.budget.check_room(where)  # after the last retained entry, any entry fails
                with directory.open_directory(entry.name) as child:
                    yield from self._records(child, relative, root)
                continue
            self.budget.entry(where)
            if entry.kind is EntryKind.FILE:
                yield relative, b"file", self._file_digest(directory, entry.name, where)
            elif entry.kind is EntryKind.SYMLINK:
                target = directory.read_link(entry.name).encode("utf-8", "surrogateescape")
                yield relative, b"symlink", hashlib.sha256(target).digest()
            else:
                raise PinningError(f"{where}: is a special file, which cannot be pinned")


def pin_execution_paths(
    workspace: Workspace, filesystem: Filesystem, scope: tuple[str, ...]
) -> Mapping[str, Mapping[str, str]]:
    """``{"TOOL": {"PATH": "sha256"}}`` for every tool and session of the admitted scope."""
    pinner = Pinner(workspace, filesystem)
    pins: dict[str, dict[str, str]] = {}
    for name in scope:
        artifact = workspace.artifact(name)
        for tool in artifact.agent_tools:
            if isinstance(tool, CommandAgentTool) and tool.execution_paths:
                key = published_name(tool.name, name)
                pins[key] = {p: pinner.pin(p) for p in tool.execution_paths}
        for session in artifact.agent_sessions:
            for part, command in (("start", session.start), ("stop", session.stop)):
                if command.execution_paths:
                    key = f"{published_name(session.name, name)}.{part}"
                    pins[key] = {p: pinner.pin(p) for p in command.execution_paths}
    return pins
