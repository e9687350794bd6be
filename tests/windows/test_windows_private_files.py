"""What only Windows' private files do: device names are refused (``NUL``, ``CON`` open
devices in any folder there), and the folders on the way are held while a file is used, so
a checked folder cannot be renamed away and replaced by a junction meanwhile."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from artifactize.adapters.windows.private_files import WindowsPrivateFiles
from artifactize.ports.private_files import PrivateFileError
from tests.contract.adapters import running_under_wine

pytestmark = pytest.mark.skipif(sys.platform != "win32", reason="Windows private files")


def files() -> WindowsPrivateFiles:
    return WindowsPrivateFiles()


@pytest.mark.parametrize("device", ["NUL", "CON", "nul.jsonl"])
def test_a_device_name_is_refused_not_read_or_written(tmp_path: Path, device: str) -> None:
    files().append(str(tmp_path), ("agent-sessions", "s1.jsonl"), b"event\n")  # the folder
    with pytest.raises(PrivateFileError, match=r"must be a regular file|cannot be opened"):
        files().read(str(tmp_path), ("agent-sessions", device), None, private=False)
    with pytest.raises(PrivateFileError, match=r"must be a regular file|cannot be opened"):
        files().append(str(tmp_path), ("agent-sessions", device), b"event\n")


@pytest.mark.skipif(
    running_under_wine(),
    reason="needs real Windows: Wine 8 renames a folder held without FILE_SHARE_DELETE",
)
def test_a_checked_folder_cannot_be_renamed_away_while_it_is_used(tmp_path: Path) -> None:
    """Between the check of ``agent-sessions`` and the use of a file in it, nobody can swap
    the folder for a junction: it is held without ``FILE_SHARE_DELETE`` (the mechanism every
    operation walks through, driven here directly to hold it open)."""
    folder = tmp_path / "agent-sessions"
    private = files()
    with private._folder(str(tmp_path), ("agent-sessions",), create=True) as held:
        assert held == str(folder)
        with pytest.raises(OSError):
            os.rename(folder, tmp_path / "moved")
        private.append(str(tmp_path), ("agent-sessions", "s1.jsonl"), b"event\n")
    os.rename(folder, tmp_path / "moved")  # released
    assert (tmp_path / "moved" / "s1.jsonl").read_bytes() == b"event\n"
