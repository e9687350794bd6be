"""Saved Agent conversations as ``<state>/agent-sessions/<sessionId>.jsonl`` (+ ``.lock``).

Files are created 0600 in a 0700 folder and opened with ``O_NOFOLLOW``: a symlink planted
in the folder is refused, never followed. Each append is one ``O_APPEND`` write plus fsync.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from adapters.posix.private_files import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, write_all
from ports.conversations import CONVERSATIONS_FOLDER, ConversationNotFound

SESSION_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,127}\Z")
_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC


class JsonlConversationStore:
    def __init__(self, state_dir: str) -> None:
        self.folder = Path(state_dir) / CONVERSATIONS_FOLDER

    def _path(self, session_id: str, suffix: str = ".jsonl") -> Path:
        if not SESSION_ID.match(session_id):
            raise ConversationNotFound(f"Not a session ID: {session_id!r}")
        return self.folder / (session_id + suffix)

    def append(self, session_id: str, events: Sequence[Mapping[str, Any]]) -> None:
        self.folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        data = "".join(
            json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in events
        ).encode("utf-8")
        fd = os.open(
            self._path(session_id),
            _FLAGS | os.O_WRONLY | os.O_APPEND | os.O_CREAT,
            PRIVATE_FILE_MODE,
        )
        try:
            write_all(fd, data)
        finally:
            os.close(fd)

    def read(self, session_id: str) -> list[dict[str, Any]]:
        try:
            fd = os.open(self._path(session_id), _FLAGS | os.O_RDONLY)
        except FileNotFoundError:
            raise ConversationNotFound(f"Unknown Agent session: {session_id}") from None
        except OSError as exc:
            raise ConversationNotFound(f"Cannot read Agent session {session_id}: {exc}") from None
        with os.fdopen(fd, "rb") as handle:
            lines = handle.read().decode("utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    @contextlib.contextmanager
    def locked(self, session_id: str) -> Iterator[None]:
        self.folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        fd = os.open(
            self._path(session_id, ".lock"), _FLAGS | os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def session_ids(self) -> Iterator[str]:
        try:
            names = sorted(entry.name for entry in self.folder.iterdir())
        except FileNotFoundError:
            return
        for name in names:
            if name.endswith(".jsonl"):
                yield name[: -len(".jsonl")]
