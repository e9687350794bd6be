"""The console script answers ``--version`` without typer, exactly as typer does, and hands
every other command line (``--help`` included) to typer, which renders its own help."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from artifactize.entrypoints.cli import app, launch


def _output(
    main: Callable[[list[str]], None], args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[object, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(args)
    out, err = capsys.readouterr()
    return caught.value.code, out, err


def test_version_is_typers(capsys: pytest.CaptureFixture[str]) -> None:
    fast = _output(launch.main, ["--version"], capsys)
    assert fast == _output(app.main, ["--version"], capsys)
    assert fast[0] == 0 and fast[1].startswith("artifactize ")


def test_no_arguments_print_typers_help_to_stderr_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _output(launch.main, [], capsys)
    assert code == 2 and out == "" and "Commands:" in err


@pytest.mark.parametrize(
    "args",
    [[], ["--help"], ["--json", "--help"], ["--help", "--version"], ["config", "--help"]],
)
def test_every_other_command_line_goes_to_typer(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(app, "main", lambda given: seen.append(list(given)))
    launch.main(args)
    assert seen == [args]
