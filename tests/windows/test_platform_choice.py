"""The composition root chooses the platform's adapters once, by ``sys.platform``: each
platform port is a ``providers.Selector`` over ``Container.platform``, which a test
overrides through the container's own ``override``."""

from __future__ import annotations

import sys

import pytest

from artifactize.entrypoints import container


def test_on_windows_is_decided_by_sys_platform() -> None:
    assert (sys.platform == "win32") == container.ON_WINDOWS


def test_windows_gets_notepad_as_the_fallback_editor() -> None:
    assert ("notepad" if sys.platform == "win32" else "vi") == container.FALLBACK_EDITOR


def test_windows_gets_the_job_runner_and_pathext_lookup() -> None:
    from artifactize.adapters.windows.filesystem import WindowsFilesystem
    from artifactize.adapters.windows.private_files import WindowsPrivateFiles
    from artifactize.adapters.windows.process import WindowsProcessRunner
    from artifactize.adapters.windows.programs import WindowsProgramFinder

    root = container.Container()
    root.platform.override("windows")
    root.environment.override({"PATHEXT": ".CMD;.EXE"})
    assert isinstance(root.processes(), WindowsProcessRunner)
    assert isinstance(root.filesystem(), WindowsFilesystem)
    assert isinstance(root.private_files(), WindowsPrivateFiles)
    assert root.parallel_checks().workers() == 1  # no fork: a kept answer checked in turn
    programs = root.programs()
    assert isinstance(programs, WindowsProgramFinder)
    assert programs.windows_paths
    assert programs.candidates("npx") == ["npx.cmd", "npx.exe"]


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX adapters need a POSIX os module")
def test_elsewhere_the_posix_adapters() -> None:
    from artifactize.adapters.posix.filesystem import PosixFilesystem
    from artifactize.adapters.posix.private_files import PosixPrivateFiles
    from artifactize.adapters.posix.process import PosixProcessRunner
    from artifactize.adapters.posix.programs import PosixProgramFinder

    root = container.Container()
    root.platform.override("posix")
    assert isinstance(root.processes(), PosixProcessRunner)
    assert isinstance(root.programs(), PosixProgramFinder)
    assert isinstance(root.filesystem(), PosixFilesystem)
    assert isinstance(root.private_files(), PosixPrivateFiles)
    assert not root.programs().windows_paths


def test_the_platform_is_chosen_from_sys_platform() -> None:
    assert container.Container().platform() == ("windows" if sys.platform == "win32" else "posix")


@pytest.mark.parametrize(
    "platform",
    [
        pytest.param(
            "posix",
            marks=pytest.mark.skipif(
                sys.platform == "win32", reason="the POSIX adapters need a POSIX os module"
            ),
        ),
        "windows",
    ],
)
def test_every_platform_port_builds_its_platforms_adapter(platform: str) -> None:
    """The factory table names a class that exists, on its platform's side, for each port
    (the Windows side builds on every platform; the POSIX side only where it can run)."""
    root = container.Container()
    root.platform.override(platform)
    for port in container._PLATFORM_FACTORIES:
        adapter = getattr(root, port)()
        assert type(adapter).__module__.startswith(f"artifactize.adapters.{platform}.")
