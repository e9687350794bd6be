"""Batch files and PATHEXT on Windows (``make test-windows``): the lookup order, and batch
files run without a shell string under the safe-argument rule."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from artifactize.ports.process import ProcessSpec
from tests.contract.adapters import base_environment

pytestmark = pytest.mark.skipif(sys.platform != "win32", reason="Windows PATHEXT and cmd.exe")

# A batch file that prints its arguments as cmd.exe gives them to it.
ECHO_ARGS = "@echo off\r\necho [%1] [%2] [%3]\r\n"


def finder(pathext: str | None):
    from artifactize.adapters.windows.programs import WindowsProgramFinder

    return WindowsProgramFinder(pathext)


def run(argv: tuple[str, ...], cwd: Path):
    from artifactize.adapters.windows.process import WindowsProcessRunner

    spec = ProcessSpec(argv=argv, cwd=str(cwd), env=base_environment(), timeout_ms=30_000)
    return anyio.run(WindowsProcessRunner().run, spec)


def test_pathext_order_decides_between_two_programs_of_one_name(tmp_path: Path) -> None:
    (tmp_path / "tool.bat").write_text("@echo bat\r\n")
    (tmp_path / "tool.cmd").write_text("@echo cmd\r\n")
    found = finder(".COM;.EXE;.BAT;.CMD").find_on_path("tool", str(tmp_path), str(tmp_path))
    assert found is not None and found.lower().endswith("tool.bat")
    found = finder(".CMD;.BAT").find_on_path("tool", str(tmp_path), str(tmp_path))
    assert found is not None and found.lower().endswith("tool.cmd")


def test_without_pathext_the_default_order_applies(tmp_path: Path) -> None:
    from artifactize.adapters.windows.programs import DEFAULT_PATHEXT, path_extensions

    assert DEFAULT_PATHEXT == ".COM;.EXE;.BAT;.CMD"
    assert path_extensions(None) == path_extensions("") == (".com", ".exe", ".bat", ".cmd")
    (tmp_path / "npx.cmd").write_text("@echo npx\r\n")
    found = finder(None).find_on_path("npx", str(tmp_path), str(tmp_path))
    assert found is not None and found.lower().endswith("npx.cmd")


def test_a_name_with_a_pathext_extension_is_tried_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "tool.cmd").write_text("@echo cmd\r\n")
    (tmp_path / "tool.cmd.bat").write_text("@echo wrong\r\n")
    found = finder(None).find_on_path("tool.cmd", str(tmp_path), str(tmp_path))
    assert found is not None and found.lower().endswith("tool.cmd")


def test_an_extension_outside_pathext_is_not_a_program(tmp_path: Path) -> None:
    (tmp_path / "tool.js").write_text("console.log(1)\n")
    assert finder(None).find_on_path("tool.js", str(tmp_path), str(tmp_path)) is None
    assert not finder(None).is_executable_file(str(tmp_path / "tool.js"))


def test_a_batch_file_receives_its_arguments(tmp_path: Path) -> None:
    script = tmp_path / "echo args.cmd"
    script.write_text(ECHO_ARGS)
    outcome = run((str(script), "plain", "two words", "a&b"), tmp_path)
    assert outcome.spawn_error is None
    assert outcome.exit_code == 0
    assert outcome.stdout.strip() == b'[plain] ["two words"] ["a&b"]'


def test_metacharacters_never_run_a_second_command(tmp_path: Path) -> None:
    script = tmp_path / "run.bat"
    script.write_text(ECHO_ARGS)
    pwned = tmp_path / "pwned"
    outcome = run((str(script), f"x & echo owned > {pwned}", "y | calc"), tmp_path)
    assert outcome.exit_code == 0
    assert not pwned.exists()


@pytest.mark.parametrize("argument", ['say "hi"', "%PATH%", "line\nbreak", "a\rb"])
def test_an_unsafe_argument_is_refused_before_anything_runs(tmp_path: Path, argument: str) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "mark.cmd"
    script.write_text(f"@echo off\r\ntype nul > {marker}\r\n")
    outcome = run((str(script), argument), tmp_path)
    assert outcome.spawn_error == "Process arguments could not be passed safely"
    assert not marker.exists()


def test_a_program_gets_the_same_arguments_literally(tmp_path: Path) -> None:
    arguments = ['say "hi"', "%PATH%", "tail\\", ""]
    code = "import json, sys; print(json.dumps(sys.argv[1:]))"
    outcome = run((sys.executable, "-c", code, *arguments), tmp_path)
    assert json.loads(outcome.stdout) == arguments
