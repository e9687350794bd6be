"""What a fresh interpreter imports for the console script's cheapest answers: ``--version``
takes no typer, and the root ``--help`` lists every command without importing one of them
(nor any heavy library). Only a new process has a clean ``sys.modules``, so these start one.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from artifactize.entrypoints.cli import command_table as cli

pytestmark = pytest.mark.process


def test_the_version_imports_no_typer() -> None:
    code = (
        "import sys\nfrom artifactize.entrypoints.cli.launch import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print('TYPER', 'typer' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "TYPER False"


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
