"""How argument vectors become Windows command lines; pure string rules, so these run on
every OS (``make test`` and ``make test-windows``)."""

from __future__ import annotations

import pytest

from artifactize.adapters.windows.command_line import (
    ARGUMENTS_UNSAFE,
    UNSAFE_FOR_BATCH,
    UnsafeArguments,
    batch_command_line,
    is_batch_file,
    program_command_line,
)

CMD = r"C:\Windows\System32\cmd.exe"


@pytest.mark.parametrize(
    "program",
    [r"C:\t\run.bat", r"C:\t\RUN.CMD", r"C:\t\run.bat.", r"C:\t\run.cmd  ", r"C:\t\x.Bat. ."],
)
def test_batch_files_are_recognised_whatever_windows_ignores(program: str) -> None:
    assert is_batch_file(program)


@pytest.mark.parametrize("program", [r"C:\t\run.exe", r"C:\t\run.bat.exe", r"C:\t\batch", "cmd"])
def test_other_programs_are_not_batch_files(program: str) -> None:
    assert not is_batch_file(program)


def test_a_batch_file_runs_through_the_given_cmd_with_expansion_off() -> None:
    line = batch_command_line(CMD, [r"C:\tools\npx.cmd", "install", "--save-dev"])
    assert line == f'"{CMD}" /d /e:ON /v:OFF /s /c ""C:\\tools\\npx.cmd" install --save-dev"'


def test_metacharacters_are_quoted_so_cmd_takes_them_literally() -> None:
    arguments = ["a & calc", "x|y", "<in", ">out", "^caret", "(group)", "a,b;c=d", "", "sp ace"]
    line = batch_command_line(CMD, [r"C:\t\run.cmd", *arguments])
    quoted = " ".join(f'"{argument}"' for argument in arguments)
    assert line.endswith(f'/s /c ""C:\\t\\run.cmd" {quoted}"')


@pytest.mark.parametrize("character", sorted(UNSAFE_FOR_BATCH))
def test_an_argument_cmd_could_not_receive_literally_is_refused(character: str) -> None:
    with pytest.raises(UnsafeArguments) as refused:
        batch_command_line(CMD, [r"C:\t\run.cmd", f"before{character}after"])
    assert str(refused.value) == ARGUMENTS_UNSAFE == "Process arguments could not be passed safely"


def test_an_unsafe_batch_path_is_refused_too() -> None:
    with pytest.raises(UnsafeArguments):
        batch_command_line(CMD, [r"C:\100%\run.cmd"])


def test_program_command_lines_follow_the_c_runtime_rules() -> None:
    line = program_command_line([r"C:\p\tool.exe", "a b", 'q"uote', "tail\\", ""])
    assert line == r'C:\p\tool.exe "a b" q\"uote tail\ ""'


def test_a_nul_in_a_program_argument_is_refused() -> None:
    with pytest.raises(ValueError, match="null"):
        program_command_line(["tool.exe", "a\0b"])
