"""Every ``artifactize …`` command line in README.md and docs/ names an existing command and
existing options (issue 12, Build 10), so the documentation cannot drift from the program.

Command lines are taken from fenced code blocks (a line that starts with ``artifactize`` or
``$ artifactize``, with its ``\\`` continuations) and from inline code spans in the prose.
Synopsis notation is understood: ``[ … ]``, ``A | B``, ``…``/``...`` and upper-case
placeholders. Each line's leading words must walk the real click command tree down to a
command, and every ``--option`` must be one that command (or the global ones) accepts.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from artifactize.entrypoints.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GLOBAL_OPTIONS = {"--repo", "--state-dir", "--json", "--nested-repos", "--help", "--version"}
GLOBAL_WITH_VALUE = {"--repo", "--state-dir"}
FENCE = re.compile(r"^\s*```")
INLINE = re.compile(r"`(artifactize(?: [^`]*)?)`")
SYNTAX = str.maketrans({char: " " for char in "[]()|"})
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_./:-]*$|^<.*>$|^\.\.\.$|^…$")


def command_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, command line) of every documented ``artifactize`` invocation."""
    lines = path.read_text(encoding="utf-8").splitlines()
    fenced = False
    index = 0
    while index < len(lines):
        line = lines[index]
        number = index + 1
        index += 1
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            text = line.strip().removeprefix("$ ")
            if not text.startswith("artifactize"):
                continue
            while text.endswith("\\") and index < len(lines):
                text = text[:-1] + " " + lines[index].strip()
                index += 1
            yield number, text
        else:
            for match in INLINE.finditer(line):
                yield number, match.group(1)


def words(line: str) -> list[str]:
    """The line's words without its comment and the synopsis brackets and bars."""
    line = line.split(" #", 1)[0]
    try:
        split = shlex.split(line.translate(SYNTAX))
    except ValueError:  # an unbalanced quote in a synopsis
        split = line.translate(SYNTAX).split()
    return [word for word in split if word not in ("", "…", "...")]


def options_of(command: Any) -> tuple[set[str], set[str]]:
    """(every option name, the ones that take a value) of a click command."""
    names: set[str] = set()
    valued: set[str] = set()
    for param in command.params:
        if getattr(param, "param_type_name", None) != "option":
            continue
        for name in [*param.opts, *param.secondary_opts]:
            names.add(name)
            if not param.is_flag:
                valued.add(name)
    return names, valued


def problems(line: str, root: Any) -> list[str]:
    found: list[str] = []
    command = root
    path = ["artifactize"]
    rest = words(line)[1:]
    skip = False
    resolved = False
    for word in rest:
        if skip:
            skip = False
            continue
        if word == "--":
            break  # what follows is another command line (artifactize stand-in -- COMMAND)
        name = word.split("=", 1)[0]
        if name.startswith("-"):
            if name in GLOBAL_OPTIONS:
                skip = name in GLOBAL_WITH_VALUE and "=" not in word
                continue
            names, valued = options_of(command)
            if name not in names:
                found.append(f"{' '.join(path)} has no option {name}")
            skip = name in valued and "=" not in word
            continue
        if resolved:
            continue  # an argument of the command
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            resolved = True
            continue
        if word in subcommands:
            command = subcommands[word]
            path.append(word)
        elif PLACEHOLDER.match(word):
            resolved = True  # `artifactize COMMAND ...`
        else:
            found.append(f"{' '.join(path)} has no command {word!r}")
            resolved = True
    return found


@pytest.fixture(scope="module")
def root() -> Any:
    return typer.main.get_command(app)


def documented() -> list[tuple[str, int, str]]:
    return [
        (path.relative_to(ROOT).as_posix(), number, line)
        for path in DOCUMENTS
        for number, line in command_lines(path)
    ]


def test_the_documents_show_many_command_lines() -> None:
    assert len(documented()) > 50


def test_every_documented_command_line_names_real_commands_and_options(root: Any) -> None:
    wrong = [
        f"{where}:{number}: {line}\n    {problem}"
        for where, number, line in documented()
        for problem in problems(line, root)
    ]
    assert wrong == []


def test_the_checker_catches_a_wrong_command_and_a_wrong_option(root: Any) -> None:
    assert problems("artifactize config check --json", root) == []
    assert problems("artifactize verify [ARTIFACT | --all] [--recursive]", root) == []
    assert problems("artifactize --repo x verify --al", root) == [
        "artifactize verify has no option --al"
    ]
    assert problems("artifactize config chek", root) == ["artifactize config has no command 'chek'"]
    assert problems("artifactize stand-in -- artifactize verify --al", root) == []
    assert problems("artifactize request list --status GREEN --limit 2", root) == []
