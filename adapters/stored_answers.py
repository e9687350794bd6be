"""Stored answers in files of the state home (``ports.stored_answers``).

One file per repository and command (``answers/<digest of the repository's path>``, and
``…-verify`` for ``verify``'s replayed Runs, ``domain.reviews.run.replay``), replaced by each
answer kept: a first line of JSON (the format, the keys, the exit code, the lengths and the
SHA-256 of what follows), the observations' log and the text. It is read and written through
the private files port (``ports.private_files``: no link followed, a FIFO never waited on,
the user's own 0600 file in a 0700 folder, replaced in one rename), at most
``ANSWER_MAX_BYTES``, and used only when whole (lengths and digest), under the very key
asked for, and free of control characters other than newlines and tabs: a kept answer is
printed as it is, so one planted in a state home that came from elsewhere must not reach the
terminal with escape sequences (a fresh answer never holds them: JSON escapes them, and
``keep`` keeps no answer that does).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Callable, Sequence
from typing import Any

from artifactize.adapters.file_index import RACY_MARGIN_NS
from artifactize.ports.filesystem import FileIdentity
from artifactize.ports.private_files import PrivateFileError, PrivateFiles
from artifactize.ports.stored_answers import ANSWER_ENCODING as _ENCODING
from artifactize.ports.stored_answers import Observed, StoredAnswer

ANSWERS_FOLDER = "answers"  # in the state home (docs/reviews.md)
ANSWER_FORMAT = 2
ANSWER_MAX_BYTES = 512 * 1024 * 1024  # a status of 10,000 Artifacts prints ~13 MB
_FILE_MAX = ANSWER_MAX_BYTES + 4096  # and its header line
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The control characters an ASCII text can hold (C1 controls are not ASCII).
_ASCII_CONTROL = [chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F)]


# The bytes an ASCII text without control characters is made of (but newlines and tabs).
_PLAIN_ASCII = bytes([0x09, 0x0A, *range(0x20, 0x7F)])


def bytes_hold_control(data: bytes) -> bool | None:
    """Whether UTF-8 ``data`` holds a control character other than a newline or a tab;
    None when it holds non-ASCII bytes, among which only its decoded text can tell a C1
    control (``holds_control``). What is left once every plain ASCII byte is deleted
    is empty for nearly every answer: one pass in C over a 78 MB Run plan, 0.03 s, where
    the searches of ``holds_control`` took 0.16 s."""
    rest = data.translate(None, _PLAIN_ASCII)
    if not rest:
        return False
    return True if min(rest) < 0x80 else None


def holds_control(text: str) -> bool:
    """Whether ``text`` holds a control character other than a newline or a tab. An ASCII
    text (nearly every answer: JSON escapes control characters, and IDs and paths are
    mostly ASCII; a ``str`` knows it is one without a pass) is searched for each such
    character apart, each search a ``memchr`` over its one-byte characters: a 113 MB Run
    plan in 0.23 s, where the expression took 0.57 s."""
    if text.isascii():
        return any(control in text for control in _ASCII_CONTROL)
    return _CONTROL.search(text) is not None


class FileStoredAnswers:
    """The answers of one repository's command, kept in ``state_dir``; ``inputs_files``:
    what the answer reads besides its key's inputs (the state's files, present or not),
    each with whether an empty file reads as no file: SQLite's journals (a reader opening
    the database makes an empty write-ahead log, and the last one to close removes it;
    an empty log holds nothing the database file does not)."""

    def __init__(
        self,
        state_dir: str,
        repository: str,
        inputs_files: Sequence[tuple[str, bool]],
        *,
        files: PrivateFiles,
        clock_ns: Callable[[], int] = time.time_ns,  # what "safely old" is measured against
        command: str = "status",
    ) -> None:
        self._state_dir = state_dir
        name = hashlib.sha256(os.fsencode(repository)).hexdigest()[:32]
        # ``status``'s file keeps its first name (answers kept before still count)
        self._names = [ANSWERS_FOLDER, name if command == "status" else f"{name}-{command}"]
        self._files = files
        self._inputs_files = tuple(inputs_files)
        self._clock_ns = clock_ns
        self._file: bytes | None = None  # the kept file's bytes, once read

    def inputs(self) -> str | None:
        now = self._clock_ns()
        parts = []
        for path, empty_is_absent in self._inputs_files:
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                parts.append("-")
                continue
            except OSError:
                return None
            if not stat.S_ISREG(info.st_mode):
                return None
            if empty_is_absent and info.st_size == 0:
                parts.append("-")
                continue
            # Content by device, inode, size and modification time; not the inode change
            # time: SQLite running as root chowns the log to the database's owner each
            # time a connection opens it, which changes that time and nothing written.
            if info.st_mtime_ns >= now - RACY_MARGIN_NS:
                return None
            parts.append(f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}")
        return "|".join(parts)

    def safely_old(self, identity: FileIdentity) -> bool:
        return max(identity.mtime_ns, identity.ctime_ns) < self._clock_ns() - RACY_MARGIN_NS

    def find(self, key: str) -> StoredAnswer | None:
        found = self._whole(lambda header: header.get("key") == key)
        return None if found is None else found[1]

    def find_observed(self, first_key: str) -> tuple[Sequence[Any], StoredAnswer] | None:
        found = self._whole(lambda header: bool(first_key) and header.get("first") == first_key)
        if found is None:
            return None
        try:
            log = json.loads(found[0])
        except ValueError:
            return None
        return (log, found[1]) if isinstance(log, list) else None

    def _whole(self, wanted: Callable[[dict[str, Any]], bool]) -> tuple[bytes, StoredAnswer] | None:
        """The observations' bytes and the answer of the kept file, when its header is
        ``wanted`` (checked first: a file kept for another key is not hashed), it is whole
        and its text holds no control character. The file is read once per instance (a
        command asks by its first key, then by its key)."""
        if self._file is None:
            try:
                read = self._files.read(self._state_dir, self._names, _FILE_MAX, private=True)
            except PrivateFileError:  # a link, a FIFO, not the user's alone, too large
                read = None
            self._file = read or b""
        # slices of the file's bytes as views: a Run plan is ~80 MB, and each copy of it
        # costs its pages again
        end = self._file.find(b"\n")
        head, newline = self._file[: max(end, 0)], end >= 0
        body = memoryview(self._file)[end + 1 :]
        try:
            header = json.loads(head)
            if not newline or header["format"] != ANSWER_FORMAT or not wanted(header):
                return None
            exit_code, observed, length = header["exit"], header["observed"], header["bytes"]
            digest = header["sha256"]
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        if (
            type(exit_code) is not int
            or type(observed) is not int
            or observed < 0
            or observed + length != len(body)
            or digest != hashlib.sha256(body).hexdigest()
        ):
            return None
        # the whole file at once (its header and log are JSON written in ASCII: escaped,
        # they hold no control character either): slicing the answer off would copy it.
        # Plain ASCII is valid UTF-8 as it is; anything else is decoded to be checked.
        plain = bytes_hold_control(self._file)
        answer = StoredAnswer(body[observed:], exit_code)
        if plain is None:
            try:
                plain = holds_control(answer.text)
            except UnicodeDecodeError:
                return None
        if plain:
            return None
        return bytes(body[:observed]), answer

    def keep(self, key: str, answer: StoredAnswer, observed: Observed | None = None) -> None:
        text = bytes(answer.data)
        try:
            log = b"" if observed is None else json.dumps(observed.log).encode(*_ENCODING)
        except (UnicodeEncodeError, TypeError, ValueError):
            return
        plain = bytes_hold_control(text)
        if plain is None:
            try:
                plain = holds_control(answer.text)
            except UnicodeDecodeError:
                return
        if plain:
            return  # printed as it is when found: it must hold no escape sequence
        body = log + text
        if len(body) > ANSWER_MAX_BYTES:
            return
        header = {
            "format": ANSWER_FORMAT,
            "key": key,
            "first": None if observed is None else observed.first_key,
            "exit": answer.exit_code,
            "observed": len(log),
            "bytes": len(text),
            "sha256": hashlib.sha256(body).hexdigest(),
        }
        data = json.dumps(header).encode() + b"\n" + body
        with contextlib.suppress(PrivateFileError, OSError):
            self._files.write(self._state_dir, self._names, data)
