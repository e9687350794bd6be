"""Saved Agent conversations as ``<state>/agent-sessions/<sessionId>.jsonl`` (+ ``.lock``).

Files go through the platform's ``PrivateFiles``: created private (0600 in a 0700 folder on
POSIX, owner-only DACLs on Windows), never opened through a link (a symlink or junction
planted in the folder is refused, never followed). Each append is one write plus a flush to
disk; the lock is the platform's exclusive file lock.

A file is read through the bounded JSON reader, and checked whole: an empty file, bytes
that are not UTF-8, a line that is not a JSON object (a half-written last line, without
its newline, included) or a first event that is not the review header make it damaged
(``ConversationDamaged``, with the file and the line); a damaged file is never appended
to (each session's file is checked before this process first appends to it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from artifactize.kernel.bounded_json import JsonRefused, read_json
from artifactize.ports.conversations import (
    CONVERSATIONS_FOLDER,
    ConversationDamaged,
    ConversationNotFound,
)
from artifactize.ports.private_files import PrivateFileError, PrivateFiles
from artifactize.ports.state import StateError

REVIEW_HEADER_KIND = "review"  # the first event of every saved conversation
SESSION_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,127}\Z")


class JsonlConversationStore:
    def __init__(self, state_dir: str, *, private_files: PrivateFiles) -> None:
        self.state_dir = state_dir
        self.folder = Path(state_dir) / CONVERSATIONS_FOLDER
        self._files = private_files
        self._sound: set[str] = set()  # sessions checked whole by this process

    def _names(self, session_id: str, suffix: str = ".jsonl") -> tuple[str, str]:
        if not SESSION_ID.match(session_id):
            raise ConversationNotFound(f"Not a session ID: {session_id!r}")
        return CONVERSATIONS_FOLDER, session_id + suffix

    def append(self, session_id: str, events: Sequence[Mapping[str, Any]]) -> None:
        if session_id not in self._sound:
            self._check_before_append(session_id, events)
        data = "".join(
            json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in events
        ).encode("utf-8")
        try:
            self._files.append(self.state_dir, self._names(session_id), data)
        except PrivateFileError as exc:  # a storage fault (full disk, read-only): exit 2
            raise StateError(str(exc)) from None

    def read(self, session_id: str) -> list[dict[str, Any]]:
        try:
            data = self._files.read(self.state_dir, self._names(session_id), None, private=False)
        except PrivateFileError as exc:
            raise ConversationNotFound(f"Cannot read Agent session {session_id}: {exc}") from None
        if data is None:
            raise ConversationNotFound(f"Unknown Agent session: {session_id}")
        events = self._parse(session_id, data)
        self._sound.add(session_id)
        return events

    def _check_before_append(self, session_id: str, events: Sequence[Mapping[str, Any]]) -> None:
        """A new file must begin with the review header; an existing one must be sound."""
        try:
            self.read(session_id)
        except ConversationDamaged:
            raise
        except ConversationNotFound:
            if not events or events[0].get("kind") != REVIEW_HEADER_KIND:
                raise ConversationDamaged(
                    f"Refusing to start {self._path(session_id)} without its review header."
                ) from None
            self._sound.add(session_id)

    def _path(self, session_id: str) -> Path:
        return self.folder / (session_id + ".jsonl")

    def _parse(self, session_id: str, data: bytes) -> list[dict[str, Any]]:
        path = self._path(session_id)

        def damaged(line: int, why: str) -> ConversationDamaged:
            return ConversationDamaged(
                f"The saved conversation {path} is damaged: line {line} {why}; "
                "it is left as it is and nothing is appended to it."
            )

        if not data:
            raise ConversationDamaged(
                f"The saved conversation {path} is damaged: it is empty (0 bytes); "
                "it is left as it is and nothing is appended to it."
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise damaged(data.count(b"\n", 0, error.start) + 1, "is not UTF-8") from None
        lines = text.split("\n")
        if lines[-1]:  # no newline after the last line: it was cut while being written
            raise damaged(len(lines), "is cut short (no newline at its end)")
        events: list[dict[str, Any]] = []
        for number, line in enumerate(lines[:-1], start=1):
            try:
                event = read_json(line)
            except JsonRefused as refused:
                raise damaged(number, f"is not JSON ({refused.reason})") from None
            if not isinstance(event, dict):
                raise damaged(number, "is not a JSON object")
            if number == 1 and event.get("kind") != REVIEW_HEADER_KIND:
                raise damaged(number, "is not the review header")
            events.append(event)
        return events

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
