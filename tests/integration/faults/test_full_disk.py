"""A full disk for real: the state lives on a small tmpfs mounted for the test, and a
runtime eval fills it while ``verify`` runs, so the next state write fails with ENOSPC.

The mount needs CAP_SYS_ADMIN (root, as in CI's container); where ``mount -t tmpfs`` is
refused the test is skipped with that reason (no ENOSPC is simulated instead).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.faults.conftest import FaultRepo
from tests.support.hostile import record_counts, scaled

TMPFS_SIZE = "512k"  # room for a fresh state and a few Runs; the filler takes the rest


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs", str(mount)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_verify_on_a_full_disk_is_an_operational_error(tmp_path: Path, small_disk: Path) -> None:
    repo = FaultRepo(tmp_path / "w", small_disk / "state")
    first = repo.run("verify", "r/ok")
    assert first.returncode == 0, first.stderr
    failures = 0
    trials = scaled(3)
    for _ in range(trials):
        repo.fill_target.unlink(missing_ok=True)
        done = repo.run("verify", "--force", "f/fill")
        try:
            assert done.returncode == 2, done.stderr
            assert "Traceback" not in done.stderr
            (line,) = [x for x in done.stderr.splitlines() if x.startswith("error:")]
            database = small_disk / "state" / "state.sqlite"
            assert line.startswith(f"error: Cannot write state {database}: ")
            assert "No space left on device" in line
            # While the disk is still full, a reader shows the Run settled (by its owner,
            # or as the next reader that can write will save it), never RUNNING.
            listed = repo.run("--json", "run", "list")
            assert listed.returncode == 0, listed.stderr
            assert json.loads(listed.stdout)[0]["status"] == "ERROR"
            repo.fill_target.unlink()
            listed = repo.run("--json", "run", "list")
            assert listed.returncode == 0, listed.stderr
            newest = json.loads(listed.stdout)[0]
            assert newest["status"] == "ERROR"
            shown = json.loads(repo.run("--json", "run", "show", newest["id"]).stdout)
            assert shown["errorCode"] in ("STATE_WRITE_FAILED", "OWNER_DIED")
        except AssertionError:
            failures += 1
            raise
        finally:
            record_counts("full disk during verify (failures: not exit 2 / Run left RUNNING)",
                          1, failures)  # fmt: skip


def test_remote_login_on_a_full_disk_leaves_nothing_half_made(small_disk: Path) -> None:
    """The token and remote.json cannot be saved: the error names the file and the cause,
    and no token nor empty ``auth/`` folder is left (real adapter, real full disk)."""
    from artifactize.adapters.posix.private_files import PosixPrivateFiles
    from artifactize.adapters.review_store.client_config import RemoteConfigStores
    from artifactize.ports.review_store import RemoteConfigError

    state = small_disk / "state"
    state.mkdir(mode=0o700)
    fill_disk(small_disk / "filler")
    stores = RemoteConfigStores({}, private_files=PosixPrivateFiles())
    with pytest.raises(RemoteConfigError, match="No space left on device"):
        stores.login(str(state), "http://127.0.0.1:9/", "t" * 32, "summary")
    assert list(state.iterdir()) == []


def fill_disk(target: Path) -> None:
    """Write ``target`` until the file system holding it is full."""
    with contextlib.suppress(OSError), target.open("wb", buffering=0) as out:
        while True:
            out.write(b"x" * 4096)


def test_a_conversation_append_on_a_full_disk_is_a_storage_error(small_disk: Path) -> None:
    """The append fails naming the file and the cause (a StateError: exit 2), and leaves no
    half-written line: the conversation still reads whole (real adapter, real full disk)."""
    from artifactize.adapters.jsonl_conversations import JsonlConversationStore
    from artifactize.adapters.posix.private_files import PosixPrivateFiles
    from artifactize.ports.state import StateError

    state = small_disk / "state"
    store = JsonlConversationStore(str(state), private_files=PosixPrivateFiles())
    store.append("sess1", [{"kind": "review", "at": "t"}])
    saved = (state / "agent-sessions" / "sess1.jsonl").read_bytes()
    fill_disk(small_disk / "filler")
    with pytest.raises(StateError, match=r"sess1\.jsonl: cannot be written \(No space left"):
        store.append("sess1", [{"kind": "message", "at": "t", "text": "x" * 65536}])
    assert (state / "agent-sessions" / "sess1.jsonl").read_bytes() == saved
    assert [e["kind"] for e in store.read("sess1")] == ["review"]
