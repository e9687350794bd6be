"""Saved Agent conversations as ``<state>/agent-sessions/<sessionId>.jsonl`` (+ ``.lock``).

Files go through the platform's ``PrivateFiles``: created private (0600 in a 0700 folder on
POSIX, owner-only DACLs on Windows), never opened through a link (a symlink or junction
planted in the folder is refused, never followed). Each append is one write plus a flush to
disk; the lock is the platform's exclusive file lock.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from artifactize.ports.conversations import CONVERSATIONS_FOLDER, ConversationNotFound
from artifactize.ports.private_files import PrivateFileError, PrivateFiles

SESSION_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,127}\Z")


class JsonlConversationStore:
    def __init__(self, state_dir: str, *, private_files: PrivateFiles) -> None:
        self.state_dir = state_dir
        self.folder = Path(state_dir) / CONVERSATIONS_FOLDER
        self._files = private_files

    def _names(self, session_id: str, suffix: str = ".jsonl") -> tuple[str, str]:
        if not SESSION_ID.match(session_id):
            raise ConversationNotFound(f"Not a session ID: {session_id!r}")
        return CONVERSATIONS_FOLDER, session_id + suffix

    def append(self, session_id: str, events: Sequence[Mapping[str, Any]]) -> None:
        data = "".join(
            json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in events
        ).encode("utf-8")
        self._files.append(self.state_dir, self._names(session_id), data)

    def read(self, session_id: str) -> list[dict[str, Any]]:
        try:
            data = self._files.read(self.state_dir, self._names(session_id), None, private=False)
        except PrivateFileError as exc:
            raise ConversationNotFound(f"Cannot read Agent session {session_id}: {exc}") from None
        if data is None:
            raise ConversationNotFound(f"Unknown Agent session: {session_id}")
        lines = data.decode("utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def locked(self, session_id: str) -> AbstractContextManager[None]:
        return self._files.locked(self.state_dir, self._names(session_id, ".lock"))

    def session_ids(self) -> Iterator[str]:
        try:
            names = sorted(entry.name for entry in self.folder.iterdir())
        except FileNotFoundError:
            return
        for name in names:
            if name.endswith(".jsonl"):
                yield name[: -len(".jsonl")]
