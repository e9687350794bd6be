"""Windows launches (``make test-windows``): ``open`` through the Windows shell, and batch
files under the same safe-argument rule as every command."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.contract.adapters import base_environment

pytestmark = pytest.mark.skipif(sys.platform != "win32", reason="Windows shell")


def wait_for(path: Path, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


def test_open_hands_the_target_to_the_windows_shell(tmp_path: Path) -> None:
    """The shell's ``open`` verb on a batch file runs it: proof that the target reached
    ShellExecuteW (explorer.exe itself is never started)."""
    from artifactize.adapters.windows.launch import DESKTOP_OPENER, WindowsDetachedLauncher

    marker = tmp_path / "opened"
    target = tmp_path / "target.cmd"
    target.write_text(f'@echo off\r\ntype nul > "{marker}"\r\n')
    explorer = rf"C:\windows\{DESKTOP_OPENER}.exe"
    WindowsDetachedLauncher().launch((explorer, str(target)), str(tmp_path), base_environment())
    assert wait_for(marker)


def test_the_shell_refusing_a_target_is_an_oserror(tmp_path: Path) -> None:
    from artifactize.adapters.windows.launch import shell_open

    with pytest.raises(OSError, match="could not open"):
        shell_open(str(tmp_path / "missing.nothing"), str(tmp_path))


def test_a_batch_file_argument_cmd_cannot_take_is_refused(tmp_path: Path) -> None:
    from artifactize.adapters.windows.launch import WindowsDetachedLauncher

    script = tmp_path / "tool.cmd"
    marker = tmp_path / "ran"
    script.write_text(f'@echo off\r\ntype nul > "{marker}"\r\n')
    with pytest.raises(OSError, match="Process arguments could not be passed safely"):
        WindowsDetachedLauncher().launch(
            (str(script), "%USERPROFILE%"), str(tmp_path), base_environment()
        )
    time.sleep(0.5)
    assert not marker.exists()


def test_a_batch_file_is_launched_with_its_arguments(tmp_path: Path) -> None:
    from artifactize.adapters.windows.launch import WindowsDetachedLauncher

    script = tmp_path / "tool.cmd"
    out = tmp_path / "args.txt"
    script.write_text(f'@echo off\r\necho [%1] [%2] > "{out}"\r\n')
    WindowsDetachedLauncher().launch(
        (str(script), "one", "two words"), str(tmp_path), base_environment()
    )
    assert wait_for(out)
    time.sleep(0.3)
    assert out.read_text().strip() == '[one] ["two words"]'
