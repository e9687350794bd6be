"""The root command loads subcommands on first use: its ``--help`` must read exactly as if
every command were loaded, and ``--version`` must import none of them."""

from __future__ import annotations

import pytest
from typer.core import TyperCommand

from artifactize.entrypoints.cli import command_table as cli
from artifactize.entrypoints.cli.lazy_commands import _load
from tests.support.cli import run_cli


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
@pytest.mark.parametrize("limit", [20, 45, 74, 200])
def test_registered_help_is_the_commands_own(name: str, limit: int) -> None:
    entry = cli.COMMANDS[name]
    loaded = _load(name, entry)
    placeholder = TyperCommand(name, help=entry.help)
    assert placeholder.get_short_help_str(limit) == loaded.get_short_help_str(limit)


def test_every_command_loads_under_its_name() -> None:
    for name, entry in cli.COMMANDS.items():
        assert _load(name, entry).name == name


def test_an_unknown_command_still_gets_a_suggestion() -> None:
    done = run_cli("verfy")
    assert done.code == 2
    assert "Did you mean 'verify'?" in done.stderr
