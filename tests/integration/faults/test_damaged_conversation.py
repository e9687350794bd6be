"""A damaged saved conversation: emptied, not UTF-8, a half-written last line, a line
that is not JSON, its first line (the review header) dropped. ``session show`` names the
file and the line and exits 2; ``session send`` refuses it and appends nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.faults.conftest import FaultRepo

SESSION = "sess-faults1"
HEADER = {"kind": "review", "at": "2026-01-01T00:00:00Z", "evalId": "r/ok", "repoPath": "/x"}
MESSAGE = {"kind": "message", "at": "2026-01-01T00:00:01Z", "role": "user", "text": "hi"}
END = {"kind": "end", "at": "2026-01-01T00:00:02Z", "status": "GREEN"}
GOOD = b"".join(json.dumps(e).encode() + b"\n" for e in (HEADER, MESSAGE, END))

DAMAGES = {
    "emptied": (b"", "it is empty (0 bytes)"),
    "not UTF-8": (GOOD.replace(b"hi", b"h\xff"), "line 2 is not UTF-8"),
    "half-written last line": (GOOD[:-9], "line 3 is cut short"),
    "a line that is not JSON": (GOOD.replace(b'{"kind": "message"', b'{"kind" "message"'),
                                "line 2 is not JSON"),
    "header dropped": (GOOD[GOOD.index(b"\n") + 1 :], "line 1 is not the review header"),
}  # fmt: skip


def conversation(repo: FaultRepo) -> Path:
    folder = repo.state / "agent-sessions"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"{SESSION}.jsonl"


def test_a_sound_conversation_is_shown(repo: FaultRepo) -> None:
    conversation(repo).write_bytes(GOOD)
    done = repo.run("--json", "session", "show", SESSION)
    assert done.returncode == 0, done.stderr
    assert [e["kind"] for e in json.loads(done.stdout)] == ["review", "message", "end"]


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("command", ["show", "send"])
def test_a_damaged_conversation_is_named_and_never_appended(
    repo: FaultRepo, damage: str, command: str
) -> None:
    content, why = DAMAGES[damage]
    path = conversation(repo)
    path.write_bytes(content)
    args = ("show", SESSION) if command == "show" else ("send", SESSION, "why?")
    done = repo.run("session", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"The saved conversation {path} is damaged: {why}" in done.stderr
    assert path.read_bytes() == content
