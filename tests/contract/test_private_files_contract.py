"""The private-files contract, run by every adapter of ``PrivateFiles`` (POSIX descriptors,
Windows handles): the remote configuration, the stored token and saved conversations live
in these files, so a link planted in the state directory must never redirect a read or a
write, a writer never leaves half a file, and the lock holds across processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from artifactize.ports.private_files import PrivateFileError
from tests.contract.adapters import (
    is_private,
    make_symlink,
    needs_real_acls,
    needs_reparse_points,
    private_files,
)

FILES = private_files()
LIMIT = 16
REPO_ROOT = Path(__file__).resolve().parents[2]
# How long the second process may wait for the lock before the test calls it a failure.
LOCK_WAIT_BOUND_SECONDS = 60


def test_a_missing_file_or_folder_reads_as_none(tmp_path: Path) -> None:
    assert FILES.read(str(tmp_path), ("remote.json",), LIMIT, private=False) is None
    assert FILES.read(str(tmp_path), ("auth", "token.json"), LIMIT, private=True) is None
    assert FILES.read(str(tmp_path / "no-state"), ("remote.json",), LIMIT, private=False) is None
    assert FILES.remove(str(tmp_path), ("auth", "token.json")) is False


def test_write_creates_private_folders_and_reads_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    FILES.write(str(state), ("auth", "token.json"), b"secret-1")
    assert FILES.read(str(state), ("auth", "token.json"), LIMIT, private=True) == b"secret-1"
    FILES.write(str(state), ("auth", "token.json"), b"secret-2")  # replaced
    assert FILES.read(str(state), ("auth", "token.json"), LIMIT, private=True) == b"secret-2"
    assert sorted(os.listdir(state / "auth")) == ["token.json"]  # no temporary file left
    assert FILES.remove(str(state), ("auth", "token.json")) is True
    assert FILES.read(str(state), ("auth", "token.json"), LIMIT, private=True) is None


@needs_real_acls
def test_written_files_and_their_folders_are_private(tmp_path: Path) -> None:
    FILES.write(str(tmp_path), ("auth", "token.json"), b"secret")
    assert is_private(str(tmp_path / "auth"))
    assert is_private(str(tmp_path / "auth" / "token.json"))


def test_the_limit_is_read_and_one_byte_past_it_is_refused(tmp_path: Path) -> None:
    FILES.write(str(tmp_path), ("at.json",), b"x" * LIMIT)
    assert FILES.read(str(tmp_path), ("at.json",), LIMIT, private=False) == b"x" * LIMIT
    FILES.write(str(tmp_path), ("past.json",), b"x" * (LIMIT + 1))
    with pytest.raises(PrivateFileError, match=f"larger than {LIMIT} bytes"):
        FILES.read(str(tmp_path), ("past.json",), LIMIT, private=False)
    assert FILES.read(str(tmp_path), ("past.json",), None, private=False) == b"x" * (LIMIT + 1)


def test_appends_accumulate_in_order(tmp_path: Path) -> None:
    for line in (b"one\n", b"two\n", b"three\n"):
        FILES.append(str(tmp_path), ("agent-sessions", "s1.jsonl"), line)
    got = FILES.read(str(tmp_path), ("agent-sessions", "s1.jsonl"), None, private=False)
    assert got == b"one\ntwo\nthree\n"


def test_a_folder_where_a_file_is_expected_is_refused(tmp_path: Path) -> None:
    (tmp_path / "remote.json").mkdir()
    with pytest.raises(PrivateFileError, match="must be a regular file"):
        FILES.read(str(tmp_path), ("remote.json",), LIMIT, private=False)
    with pytest.raises(PrivateFileError, match=r"remote\.json"):
        FILES.write(str(tmp_path), ("remote.json",), b"{}")


def test_a_file_where_a_folder_is_expected_is_refused(tmp_path: Path) -> None:
    (tmp_path / "auth").write_text("not a folder")
    with pytest.raises(PrivateFileError, match="must be a directory"):
        FILES.read(str(tmp_path), ("auth", "token.json"), LIMIT, private=True)
    with pytest.raises(PrivateFileError, match="auth"):
        FILES.write(str(tmp_path), ("auth", "token.json"), b"secret")
    assert (tmp_path / "auth").read_text() == "not a folder"


def test_a_private_file_with_a_second_link_is_refused(tmp_path: Path) -> None:
    FILES.write(str(tmp_path), ("auth", "token.json"), b"secret")
    try:
        os.link(tmp_path / "auth" / "token.json", tmp_path / "copy.json")
    except OSError as error:
        pytest.skip(f"cannot create a hard link here: {error}")
    with pytest.raises(PrivateFileError, match="single link"):
        FILES.read(str(tmp_path), ("auth", "token.json"), LIMIT, private=True)


@needs_reparse_points
def test_a_link_planted_as_the_file_is_refused_and_never_written_through(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes(b"outside")
    state = tmp_path / "state"
    state.mkdir()
    make_symlink(state / "remote.json", outside)
    with pytest.raises(PrivateFileError, match="never followed"):
        FILES.read(str(state), ("remote.json",), LIMIT, private=False)
    with pytest.raises(PrivateFileError, match="never followed"):
        FILES.append(str(state), ("remote.json",), b"appended")
    FILES.write(str(state), ("remote.json",), b"new")  # replaces the link itself
    assert outside.read_bytes() == b"outside"
    assert not (state / "remote.json").is_symlink()


@needs_reparse_points
def test_a_link_planted_as_a_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "token.json").write_bytes(b"planted")
    state = tmp_path / "state"
    state.mkdir()
    make_symlink(state / "auth", outside, directory=True)
    with pytest.raises(PrivateFileError, match=r"must be a directory|never followed"):
        FILES.read(str(state), ("auth", "token.json"), LIMIT, private=True)
    with pytest.raises(PrivateFileError):
        FILES.write(str(state), ("auth", "token.json"), b"secret")
    assert (outside / "token.json").read_bytes() == b"planted"


def test_the_base_folder_itself_may_be_reached_through_the_users_own_path(
    tmp_path: Path,
) -> None:
    """The state directory is the user's to place: its path is followed as given."""
    nested = tmp_path / "a" / "b"
    FILES.write(str(nested), ("remote.json",), b"{}")
    assert FILES.read(str(nested), ("remote.json",), LIMIT, private=False) == b"{}"


_HOLDER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from tests.contract.adapters import private_files
    files = private_files()
    with files.locked(sys.argv[2], ("agent-sessions", "s1.lock")):
        print("locked", flush=True)
        time.sleep(float(sys.argv[3]))
    """
)


def test_the_lock_is_exclusive_across_processes(tmp_path: Path) -> None:
    hold_seconds = 1.5
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(REPO_ROOT), str(tmp_path), str(hold_seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with FILES.locked(str(tmp_path), ("agent-sessions", "s1.lock")):
            waited = time.monotonic() - started
        assert holder.wait(timeout=LOCK_WAIT_BOUND_SECONDS) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()
    # The holder printed "locked" before sleeping, so the lock was held for most of the
    # sleep; we only got it once the holder let go (it exits right after).
    assert waited >= hold_seconds / 3
