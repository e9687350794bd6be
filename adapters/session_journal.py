"""The records of a tool-session directory, the same on every OS: names, the owner record,
journal lines, and how a journal is read back.

Both session stores (``adapters/posix/session_store.py``, ``adapters/windows/session_store.py``)
write and read these bytes; how they reach the disk (fsync of directories, ACLs, retries
while Windows releases handles) is each store's own.
"""

from __future__ import annotations

import errno
import json
from typing import Any

from artifactize.kernel.bounded_json import read_json
from artifactize.ports.sessions import JournalEntry, JournalRole, ProcessIdentity

DIRECTORY_PREFIX = "session-"
OWNER_FILE = "owner.json"
LEASE_FILE = "lease"
JOURNAL_FILE = "journal.jsonl"
WORK_DIRECTORY = "work"
NEW_PREFIX = ".new-"  # a directory being built; never listed as a session
OWNER_MAX_BYTES = 64 * 1024  # an owner record larger than this is not one of ours


def owner_record(owner: ProcessIdentity) -> bytes:
    """``owner.json``: ``{"pid": int, "createTime": float}``."""
    return json.dumps({"pid": owner.pid, "createTime": owner.create_time}).encode()


def parse_owner(data: bytes) -> ProcessIdentity | None:
    """The owner an ``owner.json`` names; None when it is not one of ours."""
    if len(data) > OWNER_MAX_BYTES:
        return None
    try:
        return _identity(read_json(data))
    except ValueError:
        return None


def journal_line(entry: JournalEntry) -> bytes:
    """One journal line: ``{"role": ..., "pid": int, "createTime": float}`` and a newline."""
    record = {
        "role": entry.role.value,
        "pid": entry.leader.pid,
        "createTime": entry.leader.create_time,
    }
    return json.dumps(record).encode() + b"\n"


def parse_journal(data: bytes, path: str) -> list[JournalEntry]:
    """The entries of a journal. An unparsable final line (a torn append) is ignored; any
    other unparsable line raises ``OSError`` (``EBADMSG``): what it named is unknown."""
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the newline that ends the last entry
    entries: list[JournalEntry] = []
    for number, line in enumerate(lines, start=1):
        entry = _entry(line)
        if entry is not None:
            entries.append(entry)
        elif number < len(lines):
            raise OSError(errno.EBADMSG, f"corrupt journal line {number}", path)
    return entries


def _identity(record: Any) -> ProcessIdentity | None:
    """``{"pid": int, "createTime": number}`` as an identity; None when malformed."""
    if not isinstance(record, dict):
        return None
    pid = record.get("pid")
    create_time = record.get("createTime")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    if not isinstance(create_time, int | float) or isinstance(create_time, bool):
        return None
    return ProcessIdentity(pid, float(create_time))


def _entry(line: bytes) -> JournalEntry | None:
    try:
        record = read_json(line)
        role = JournalRole(record["role"])
    except (ValueError, TypeError, KeyError):
        return None
    leader = _identity(record)
    return None if leader is None else JournalEntry(role, leader)
