"""Is a program artifactize's own interpreter? One answer for every platform's finder.

A project's runtime eval that runs under the interpreter artifactize itself runs on sees
artifactize's packages instead of the project's: the false GREEN of issue 24 (a project's
tests imported artifactize's copy of a library, not the checkout). Two cases count:

- inside a virtual environment (a venv, a ``uv tool`` or ``pipx`` install), every program in
  that environment's scripts folder (``bin/python``, ``bin/pytest``…) runs on it, whatever
  its name; the folders are compared with every link followed;
- outside one, only the interpreter itself, compared with every link followed (any other
  program in ``/usr/bin`` is not artifactize's).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from artifactize.adapters.posix.canonical import canonical_directory_path, canonical_path
from artifactize.ports.programs import ProgramIdentity


def program_identity(path: str) -> ProgramIdentity:
    """``ProgramFinder.identity`` for an absolute program path."""
    # Asked of the kernel where it can say (one open and a read of /proc, not an lstat and
    # pathlib's parsing per component, twice per runtime eval); else resolved as before.
    real = canonical_path(path) or str(Path(path).resolve())
    venv = sys.prefix != sys.base_prefix
    ours = _own(sys.executable, venv=venv)
    if venv:  # a virtual environment: its whole scripts folder
        parent = Path(path).absolute().parent
        folder = canonical_directory_path(str(parent)) or str(parent.resolve())
        own = os.path.normcase(folder) == ours
    else:
        own = os.path.normcase(real) == ours
    return ProgramIdentity(real_path=real, own_environment=own)


@functools.lru_cache(maxsize=4)
def _own(executable: str, *, venv: bool) -> str:
    """The interpreter's scripts folder (``venv``) or the interpreter itself, every link
    followed: resolved once, not once per runtime eval (a third of ``program_identity``)."""
    interpreter = Path(executable)
    return os.path.normcase(
        interpreter.absolute().parent.resolve() if venv else interpreter.resolve()
    )
