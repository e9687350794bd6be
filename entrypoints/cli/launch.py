"""The console script: ``artifactize --version`` and ``artifactize --help`` answered without
importing typer, every other command line handed to ``entrypoints.cli.app``.

typer (with the click it vendors) is a third of a command's start on its own; the two
answers a person asks for most often need none of it. The root help is rendered here the
way click renders it — the same usage line, wrapping, definition lists and short-help
truncation, at the same width (the terminal's, at most 80 columns, at least 50) — from the
table typer's root is built from (``entrypoints.cli.command_table``).
``tests/unit/test_launch.py`` compares the two at every width click can choose.

Only the exact command lines ``--version`` and ``--help`` (and no arguments at all, which
prints the help to stderr and exits 2, as typer does) take this path; anything else,
including shell completion requests, goes to typer unchanged.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Sequence

from artifactize.entrypoints.cli.command_table import (
    COMMANDS,
    COMPLETE_VARIABLE,
    PROG_NAME,
    ROOT_HELP,
    VERSION_HELP,
)

EXIT_OK = 0
EXIT_USAGE = 2
USAGE_ARGS = "[OPTIONS] COMMAND [ARGS]..."
HELP_OPTION_HELP = "Show this message and exit."
# click's HelpFormatter: indent step, widest column, column gap, width bounds
INDENT = 2
COLUMN_MAX = 30
COLUMN_SPACING = 2
MAX_WIDTH = 80
MIN_WIDTH = 50
SHORT_HELP_MARGIN = 6  # click's Group.format_commands: width - 6 - the longest name


class _Wrapper(textwrap.TextWrapper):
    """click's TextWrapper: a word longer than the line is cut, not moved."""

    def _handle_long_word(
        self, reversed_chunks: list[str], cur_line: list[str], cur_len: int, width: int
    ) -> None:
        space_left = max(width - cur_len, 1)
        last = reversed_chunks[-1]
        cur_line.append(last[:space_left])
        reversed_chunks[-1] = last[space_left:]


def _wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> str:
    """click's ``wrap_text`` for one paragraph of plain text (all our help texts are)."""
    wrapper = _Wrapper(
        width,
        initial_indent=indent,
        subsequent_indent=indent if subsequent is None else subsequent,
        replace_whitespace=False,
    )
    return wrapper.fill(" ".join(text.expandtabs().split("\n")))


def short_help(text: str, max_length: int) -> str:
    """click's ``make_default_short_help``: the first sentence, or words up to the limit and
    an ellipsis."""
    words = text.split("\n\n", 1)[0].split()
    if not words:
        return ""
    total = 0
    index = 0
    for index, word in enumerate(words):
        total += len(word) + (index > 0)
        if total > max_length:
            break
        if word[-1] == ".":
            return " ".join(words[: index + 1])
        if total == max_length and index != len(words) - 1:
            break
    else:
        return " ".join(words)
    total += len("...")
    while index > 0:
        total -= len(words[index]) + (index > 0)
        if total <= max_length:
            break
        index -= 1
    return " ".join(words[:index]) + "..."


def _definitions(rows: Sequence[tuple[str, str]], width: int) -> list[str]:
    """click's ``write_dl`` at one indent step."""
    first_column = min(max(len(name) for name, _ in rows), COLUMN_MAX) + COLUMN_SPACING
    text_width = max(width - first_column - 2, 10)
    lines: list[str] = []
    for name, text in rows:
        head = " " * INDENT + name
        if len(name) <= first_column - COLUMN_SPACING:
            head += " " * (first_column - len(name))
        else:
            lines.append(head)
            head = " " * (first_column + INDENT)
        wrapped = _wrap(text, text_width).splitlines()
        lines.append(head + wrapped[0])
        lines.extend(" " * (first_column + INDENT) + line for line in wrapped[1:])
    return lines


def help_width() -> int:
    """click's default: the terminal's width (COLUMNS first) less 2, within 50..78."""
    return max(min(shutil.get_terminal_size().columns, MAX_WIDTH) - 2, MIN_WIDTH)


def root_help(width: int) -> str:
    """The root's ``--help`` text as typer prints it (without the final newline)."""
    prefix = f"Usage: {PROG_NAME} "
    lines = [_wrap(USAGE_ARGS, width, prefix, " " * len(prefix)), ""]
    lines.append(_wrap(ROOT_HELP, width, " " * INDENT))
    lines += ["", "Options:"]
    lines += _definitions([("--version", VERSION_HELP), ("--help", HELP_OPTION_HELP)], width)
    lines += ["", "Commands:"]
    limit = width - SHORT_HELP_MARGIN - max(len(name) for name in COMMANDS)
    lines += _definitions(
        [(name, short_help(entry.help, limit)) for name, entry in COMMANDS.items()], width
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point; ``argv`` defaults to ``sys.argv[1:]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        from artifactize.entrypoints.version import VERSION

        sys.stdout.write(f"{PROG_NAME} {VERSION}\n")
        raise SystemExit(EXIT_OK)
    if COMPLETE_VARIABLE not in os.environ:
        if args == ["--help"]:
            sys.stdout.write(root_help(help_width()) + "\n")
            raise SystemExit(EXIT_OK)
        if not args:
            sys.stderr.write(root_help(help_width()) + "\n")
            raise SystemExit(EXIT_USAGE)
    from artifactize.entrypoints.cli.app import main as full_main

    full_main(args)


if __name__ == "__main__":
    main()
