"""Which program strings are absolute paths, on POSIX and on Windows (domain/project/program_paths)."""

from __future__ import annotations

import pytest

from artifactize.domain.project.program_paths import is_absolute_program


@pytest.mark.parametrize(
    ("command", "posix", "windows"),
    [
        ("/usr/bin/check", True, True),
        ("/", True, True),
        ("check", False, False),
        ("./tools/check.sh", False, False),
        ("tools/check.sh", False, False),
        ("C:\\tools\\check.exe", False, True),
        ("c:\\tools\\check.exe", False, True),
        ("C:/tools/check.cmd", False, True),
        ("\\\\server\\share\\check.exe", False, True),
        ("//server/share/check.exe", True, True),
        ("\\\\server\\share", False, True),
        # Relative to drive C's current folder: state a declaration cannot see.
        ("C:check.exe", False, False),
        ("C:", False, False),
        # Not a UNC path: no share, or no server.
        ("\\\\server", False, False),
        ("\\\\server\\", False, False),
        ("\\\\\\share\\x", False, False),
        ("//server", True, False),
        # A drive is one letter.
        ("CC:\\tools\\x.exe", False, False),
        ("1:\\tools\\x.exe", False, False),
        ("\\tools\\check.exe", False, False),
    ],
)
def test_absolute_program_paths(command: str, posix: bool, windows: bool) -> None:
    assert is_absolute_program(command, windows=False) is posix
    assert is_absolute_program(command, windows=True) is windows
