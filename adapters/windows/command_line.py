"""Windows command lines: how an argument vector becomes the one string CreateProcess takes.

A program receives a single command line on Windows and splits it itself. For programs
(``.exe``/``.com``) the Microsoft C runtime's rules apply, which ``subprocess.list2cmdline``
follows. Batch files (``.cmd``/``.bat``) are different: CreateProcess silently runs them
through ``cmd.exe``, whose parser expands ``%VAR%`` even inside quotes and treats an
unbalanced quote as the end of quoting, so an argument could run commands of its own
("BatBadBut"). We therefore never let CreateProcess pick the shell: a batch file is run as
``cmd.exe /d /e:ON /v:OFF /s /c "<quoted script> <quoted args>"`` with the system's own
``cmd.exe``, delayed expansion off (``!`` is literal), every argument that needs quoting
quoted, and an argument that cannot be passed safely at all refused before anything runs.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

__all__ = [
    "ARGUMENTS_UNSAFE",
    "BATCH_EXTENSIONS",
    "UNSAFE_FOR_BATCH",
    "UnsafeArguments",
    "batch_command_line",
    "is_batch_file",
    "program_command_line",
]

BATCH_EXTENSIONS = (".bat", ".cmd")
ARGUMENTS_UNSAFE = "Process arguments could not be passed safely"
# cmd.exe expands %…% even inside quotes, a quote ends quoting, and a line break ends the
# command; NUL cannot be in a command line at all. No quoting makes these safe.
UNSAFE_FOR_BATCH = frozenset('"%\r\n\0')
# Passed to cmd.exe bare; anything else (spaces, & | < > ^ ( ) , ; = and the rest) is quoted.
_BARE_FOR_BATCH = re.compile(r"[A-Za-z0-9_\-.:/\\+@~#$]+")


class UnsafeArguments(ValueError):
    """An argument of a batch file that cmd.exe could not receive literally."""

    def __init__(self) -> None:
        super().__init__(ARGUMENTS_UNSAFE)


def is_batch_file(program: str) -> bool:
    """Whether CreateProcess would run ``program`` through cmd.exe. Windows ignores trailing
    dots and spaces in a file name, so ``run.bat.`` and ``run.cmd `` count as well."""
    return program.rstrip(". ").lower().endswith(BATCH_EXTENSIONS)


def _batch_quote(argument: str, *, always: bool) -> str:
    if not always and _BARE_FOR_BATCH.fullmatch(argument):
        return argument
    return f'"{argument}"'


def batch_command_line(cmd_exe: str, argv: Sequence[str]) -> str:
    """The cmd.exe command line that runs the batch file ``argv[0]`` with ``argv[1:]``.

    Raises ``UnsafeArguments`` when any element holds a character that cmd.exe would
    interpret whatever the quoting (``UNSAFE_FOR_BATCH``). ``/s`` makes cmd.exe strip exactly
    the outer pair of quotes, so what it parses is the quoted script and arguments."""
    if any(UNSAFE_FOR_BATCH.intersection(element) for element in (cmd_exe, *argv)):
        raise UnsafeArguments()
    inner = " ".join(_batch_quote(element, always=index == 0) for index, element in enumerate(argv))
    return f'"{cmd_exe}" /d /e:ON /v:OFF /s /c "{inner}"'


def program_command_line(argv: Sequence[str]) -> str:
    """A program's command line by the C runtime's rules (what ``subprocess`` does)."""
    if any("\0" in element for element in argv):
        raise ValueError("embedded null character in an argument")
    return subprocess.list2cmdline(list(argv))
