"""The console script answers ``--version`` and ``--help`` without typer, with exactly
typer's output, and hands every other command line to typer."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from artifactize.entrypoints.cli import app, launch
from artifactize.entrypoints.cli.command_table import COMPLETE_VARIABLE


def _output(
    main: Callable[[list[str]], None], args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[object, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(args)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


# click picks the width from the terminal (COLUMNS first): min(columns, 80) - 2, at least 50,
# so these columns cover every width it can choose, and the clamps on both sides.
@pytest.mark.parametrize("columns", range(45, 86))
def test_root_help_is_typers_at_every_width(
    columns: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    fast = _output(launch.main, ["--help"], capsys)
    typer_help = _output(app.main, ["--help"], capsys)
    assert fast == typer_help
    assert fast[0] == 0 and fast[1].startswith("Usage: artifactize [OPTIONS] COMMAND")


def test_no_arguments_print_the_help_to_stderr_and_exit_2_as_typer_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    fast = _output(launch.main, [], capsys)
    assert fast == _output(app.main, [], capsys)
    assert fast[0] == 2 and fast[1] == "" and "Commands:" in fast[2]


def test_version_is_typers(capsys: pytest.CaptureFixture[str]) -> None:
    fast = _output(launch.main, ["--version"], capsys)
    assert fast == _output(app.main, ["--version"], capsys)
    assert fast[0] == 0 and fast[1].startswith("artifactize ")


@pytest.mark.parametrize(
    "args",
    [["--json", "--help"], ["--help", "--version"], ["config", "--help"], ["--version", "x"]],
)
def test_every_other_command_line_goes_to_typer(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(app, "main", lambda given: seen.append(list(given)))
    launch.main(args)
    assert seen == [args]


def test_a_completion_request_goes_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(app, "main", lambda given: seen.append(list(given)))
    monkeypatch.setenv(COMPLETE_VARIABLE, "complete_bash")
    launch.main([])
    launch.main(["--help"])
    assert seen == [[], ["--help"]]


def test_short_help_cuts_as_click_does() -> None:
    assert launch.short_help("One. Two.", 45) == "One."
    assert launch.short_help("alpha beta gamma", 10) == "alpha..."
    assert launch.short_help("alpha beta gamma", 16) == "alpha beta gamma"
    assert launch.short_help("", 10) == ""


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_the_fast_answers_import_no_typer(args: list[str]) -> None:
    code = (
        "import sys\nfrom entrypoints.cli.launch import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "print('TYPER', 'typer' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "TYPER False"
