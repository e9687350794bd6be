"""Where the state's SQLite files are and whether they are there, without SQLAlchemy: a
command that only reads the state answers "nothing yet" before importing it
(``adapters/sqlite/stores.py``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from artifactize.ports.state import StateError

STATE_FILE = "state.sqlite"
STATE_FILE_SUFFIXES = ("", "-wal", "-shm")


def state_file(state_dir: str) -> str:
    return str(Path(state_dir) / STATE_FILE)


def check_state_files(database: str) -> bool:
    """Refuse non-regular state files (without following symlinks); whether the database
    file exists."""
    exists = False
    for suffix in STATE_FILE_SUFFIXES:
        path = database + suffix
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        except NotADirectoryError as error:
            directory = Path(database).parent
            raise StateError(f"State directory is not a directory: {directory}") from error
        except OSError as error:
            raise StateError(f"Cannot inspect state file {path}: {error.strerror}") from error
        if not stat.S_ISREG(info.st_mode):
            raise StateError(f"State files must be regular files: {path}")
        exists = exists or suffix == ""
    return exists
