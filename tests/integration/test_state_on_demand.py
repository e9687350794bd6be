"""The composition root's ``StateStores`` imports SQLAlchemy only when there is a state to
open: readers before the first ``verify`` answer without it, with the same refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from artifactize.adapters.sqlite.state_files import STATE_FILE
from artifactize.adapters.sqlite.stores import SqliteStatesOnDemand
from artifactize.ports.state import StateError


@pytest.mark.process  # a fresh interpreter's sys.modules
def test_a_reader_finds_no_state_without_importing_sqlalchemy(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from adapters.sqlite.stores import SqliteStatesOnDemand\n"
        f"print(SqliteStatesOnDemand().open({str(tmp_path / 'state')!r}, create=False))\n"
        "print('sqlalchemy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["None", "False"]
    assert not (tmp_path / "state").exists()  # and nothing was created


@pytest.mark.process  # a fresh interpreter's sys.modules
def test_the_cli_lists_no_runs_without_importing_sqlalchemy(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "index.artf").write_text('name = "x"\n', encoding="utf-8")
    code = (
        "import sys\n"
        "from entrypoints.cli.app import main\n"
        "try:\n"
        f"    main(['--repo', {str(tmp_path / 'repo')!r}, '--state-dir',"
        f" {str(tmp_path / 'state')!r}, '--json', 'run', 'list', '--all'])\n"
        "except SystemExit as exit:\n"
        "    print('EXIT', exit.code)\n"
        "print('SQLALCHEMY', 'sqlalchemy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    lines = done.stdout.splitlines()
    assert lines[-2:] == ["EXIT 0", "SQLALCHEMY False"], done.stdout + done.stderr
    assert lines[0] == "[]"


def test_a_symlinked_state_file_is_refused_as_before(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "elsewhere").write_bytes(b"")
    os.symlink(tmp_path / "elsewhere", state / STATE_FILE)
    with pytest.raises(StateError, match="State files must be regular files"):
        SqliteStatesOnDemand().open(str(state), create=False)


def test_a_created_state_opens_again_for_readers(tmp_path: Path) -> None:
    stores = SqliteStatesOnDemand()
    state = str(tmp_path / "state")
    created = stores.open(state, create=True)
    assert created is not None
    again = SqliteStatesOnDemand().open(state, create=False)
    assert again is not None and again.state_id() == created.state_id()
    watched = SqliteStatesOnDemand().open(state, create=False, read_only=True)
    assert watched is not None and watched.list_runs(None, 10, 0) == []
