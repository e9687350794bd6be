"""The root command loads subcommands on first use: its ``--help`` must read exactly as if
every command were loaded, and ``--version`` must import none of them."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.core import TyperCommand

from artifactize.entrypoints.cli import command_table as cli
from artifactize.entrypoints.cli.lazy_commands import _load


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


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


def test_root_help_lists_every_command_without_importing_them() -> None:
    out = _run(
        "import sys\n"
        "from entrypoints.cli.app import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith('artifactize.entrypoints.cli.')))\n"
        "print('HEAVY', sorted(m for m in ('sqlalchemy', 'urwid', 'starlette', 'httpx2',"
        " 'jsonschema', 'anyio', 'dependency_injector') if m in sys.modules))\n"
    )
    listed = out.split("Commands:", 1)[1]
    for name in cli.COMMANDS:
        assert f"\n  {name} " in listed
    loaded = out.split("LOADED ", 1)[1].splitlines()[0]
    for module in ("runs", "status", "requests", "server", "remote", "sessions"):
        assert f"artifactize.entrypoints.cli.{module}'" not in loaded
    assert out.split("HEAVY ", 1)[1].splitlines()[0] == "[]"


def test_an_unknown_command_still_gets_a_suggestion() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "artifactize.entrypoints.cli.app", "verfy"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Did you mean 'verify'?" in done.stderr
