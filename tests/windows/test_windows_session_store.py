"""Windows session-store specifics (``make test-windows``): removal waits for Windows to
release open file handles, within its 30-second bound."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from artifactize.ports.sessions import ProcessIdentity

pytestmark = pytest.mark.skipif(sys.platform != "win32", reason="Windows file sharing")

OWNER = ProcessIdentity(1, 1.0)


def hold_open(path: Path, seconds: float) -> threading.Thread:
    """Keep ``path`` open (without delete sharing, as Python's open does) for ``seconds``."""
    opened = threading.Event()

    def hold() -> None:
        with path.open("rb"):
            opened.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert opened.wait(10)
    return thread


def test_the_bound_is_thirty_seconds() -> None:
    from artifactize.adapters.windows.session_store import HANDLE_RELEASE_SECONDS

    assert HANDLE_RELEASE_SECONDS == 30.0


def test_removal_waits_until_the_handle_is_released(tmp_path: Path) -> None:
    from artifactize.adapters.windows.session_store import WindowsSessionStore

    store = WindowsSessionStore(handle_release_seconds=10)
    directory = store.create(str(tmp_path), OWNER)
    held = Path(store.work_directory(directory)) / "log.txt"
    held.write_text("in use")
    holder = hold_open(held, 1.0)
    started = time.monotonic()
    store.remove(directory)
    assert not Path(directory).exists()
    assert time.monotonic() - started >= 0.5  # it had to wait for the release
    holder.join()


def test_removal_gives_up_after_its_bound_and_keeps_the_journal(tmp_path: Path) -> None:
    from artifactize.adapters.windows.session_store import WindowsSessionStore
    from artifactize.ports.sessions import JournalEntry, JournalRole

    store = WindowsSessionStore(handle_release_seconds=0.5)
    directory = store.create(str(tmp_path), OWNER)
    entry = JournalEntry(JournalRole.START, ProcessIdentity(42, 4.2))
    store.append(directory, entry)
    held = Path(store.work_directory(directory)) / "log.txt"
    held.write_text("in use")
    holder = hold_open(held, 3.0)
    started = time.monotonic()
    with pytest.raises(PermissionError):
        store.remove(directory)
    assert 0.5 <= time.monotonic() - started < 3.0
    assert store.journal(directory) == [entry]  # what the next sweep needs is kept
    holder.join()
    store.remove(directory)
    assert not Path(directory).exists()
