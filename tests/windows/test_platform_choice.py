"""The composition root chooses the platform's adapters once, by ``sys.platform``."""

from __future__ import annotations

import sys

import pytest

from artifactize.entrypoints import container


def test_on_windows_is_decided_by_sys_platform() -> None:
    assert (sys.platform == "win32") == container.ON_WINDOWS


def test_windows_gets_notepad_as_the_fallback_editor() -> None:
    assert ("notepad" if sys.platform == "win32" else "vi") == container.FALLBACK_EDITOR


def test_windows_gets_the_job_runner_and_pathext_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    from artifactize.adapters.windows.filesystem import WindowsFilesystem
    from artifactize.adapters.windows.private_files import WindowsPrivateFiles
    from artifactize.adapters.windows.process import WindowsProcessRunner
    from artifactize.adapters.windows.programs import WindowsProgramFinder

    monkeypatch.setattr(container, "ON_WINDOWS", True)
    monkeypatch.setenv("PATHEXT", ".CMD;.EXE")
    assert isinstance(container._processes(), WindowsProcessRunner)
    assert isinstance(container._filesystem(), WindowsFilesystem)
    assert isinstance(container._private_files(), WindowsPrivateFiles)
    programs = container._programs()
    assert isinstance(programs, WindowsProgramFinder)
    assert programs.windows_paths
    assert programs.candidates("npx") == ["npx.cmd", "npx.exe"]


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX adapters need a POSIX os module")
def test_elsewhere_the_posix_adapters(monkeypatch: pytest.MonkeyPatch) -> None:
    from artifactize.adapters.posix.filesystem import PosixFilesystem
    from artifactize.adapters.posix.private_files import PosixPrivateFiles
    from artifactize.adapters.posix.process import PosixProcessRunner
    from artifactize.adapters.posix.programs import PosixProgramFinder

    monkeypatch.setattr(container, "ON_WINDOWS", False)
    assert isinstance(container._processes(), PosixProcessRunner)
    assert isinstance(container._programs(), PosixProgramFinder)
    assert isinstance(container._filesystem(), PosixFilesystem)
    assert isinstance(container._private_files(), PosixPrivateFiles)
    assert not container._programs().windows_paths
