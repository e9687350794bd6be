"""The one CLI harness: ``artifactize ARGS`` run in this process, as the console script runs
it (``entrypoints.cli.launch.main``, the same composition root), with its exit code and what
it wrote to stdout and stderr.

Each call is isolated the way a fresh process would be:

- the environment is exactly ``env`` (by default a copy of this process's), swapped into
  ``os.environ`` for the call and restored after it;
- the working directory is ``cwd`` (by default this process's), restored after;
- stdin is ``stdin`` (empty by default), stdout and stderr are fresh buffers that are no
  terminal, as under ``capture_output=True``;
- the CLI's context gets a new container and fresh global options, so no provider, singleton
  or override survives from one call to the next (``container=`` hands one in, for a test
  that overrides providers first), and what the product keeps once per process (the state
  files already checked for damage) is forgotten;
- what a command kept out of the garbage collector's passes until its process exits
  (``status``: ``adapters.collector.pause_collector_to_exit``) goes back to the collector.

An exception the CLI does not handle is written to stderr as a traceback with exit code 1,
as the interpreter would, so "no traceback" assertions keep their meaning.

Tests that need a real process (signals, ``kill -9``, stdio pipes, MCP over stdio, the
installed tool, the Windows lane) start one with ``command()`` and are marked
``@pytest.mark.process``.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CliResult:
    """What one command line did: the same three fields as ``subprocess.CompletedProcess``
    (``returncode`` is an alias of ``code``), so a helper can hand either back."""

    args: list[str]
    code: int
    stdout: str
    stderr: str

    @property
    def returncode(self) -> int:
        return self.code

    def json(self) -> Any:
        """stdout parsed as JSON (a ``--json`` command's document)."""
        return json.loads(self.stdout)

    def lines(self) -> list[str]:
        return self.stdout.splitlines()


def command(*argv: str) -> list[str]:
    """The command line of a real ``artifactize`` process (for ``@pytest.mark.process`` tests
    only): this interpreter running the console script's module."""
    return [sys.executable, "-m", "artifactize.entrypoints.cli.launch", *argv]


class _Buffer(io.TextIOWrapper):
    """A text stream over bytes, UTF-8, never a terminal: what a pipe looks like."""

    def __init__(self, data: bytes = b"") -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8", errors="replace", write_through=True)

    def text(self) -> str:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8", errors="replace").replace("\r\n", "\n")


TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` as ``os.environ``; where it names another temporary folder than ours, the
    CLI's ``tempfile`` looks it up again (a fresh process would), else keeps the folder a
    test may have set (``tests/support/processes.py`` redirects it to watch for leftovers)."""
    saved = dict(os.environ)
    saved_temp = tempfile.tempdir
    moved = any(env.get(name) != saved.get(name) for name in TEMP_VARIABLES)
    os.environ.clear()
    os.environ.update(env)
    if moved:
        tempfile.tempdir = None
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        tempfile.tempdir = saved_temp


@contextlib.contextmanager
def _working_directory(cwd: Path | str | None) -> Iterator[None]:
    saved = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved)


@contextlib.contextmanager
def _streams(stdin: str | bytes) -> Iterator[tuple[_Buffer, _Buffer]]:
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    fresh = (_Buffer(data), _Buffer(), _Buffer())
    saved = (sys.stdin, sys.stdout, sys.stderr)
    sys.stdin, sys.stdout, sys.stderr = fresh
    try:
        yield fresh[1], fresh[2]
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _fresh_context(container: Any | None) -> Iterator[None]:
    """A new container and global options, and no state file taken as checked already (the
    integrity check runs once per process)."""
    from artifactize.adapters.sqlite.integrity import forget_all_checked
    from artifactize.entrypoints.bootstrap import Container
    from artifactize.entrypoints.cli.context import CliContext
    from artifactize.entrypoints.cli.global_options import GlobalOptions

    saved = {name: CliContext.__dict__[name] for name in ("options", "container")}
    CliContext.options = GlobalOptions()
    CliContext.container = Container() if container is None else container
    forget_all_checked()
    try:
        with collector_as_after_exit():
            yield
    finally:
        for name, value in saved.items():
            setattr(CliContext, name, value)


@contextlib.contextmanager
def collector_as_after_exit() -> Iterator[None]:
    """A command run in this process leaves the collector as its own process's exit would:
    ``status``, ``config check`` and ``config graph`` freeze what is alive when they end
    (nothing would give it back in a process about to exit); in a test worker that freeze is
    undone, or every later test would run with the heap frozen, its garbage cycles (and the
    SQLite connections they hold) never collected. A freeze made before the command, which
    is not the command's, is left as it is."""
    frozen = gc.get_freeze_count()
    try:
        yield
    finally:
        if not frozen and gc.get_freeze_count():
            gc.unfreeze()


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    sys.stderr.write(f"{exc.code}\n")  # as the interpreter reports SystemExit("message")
    return 1


def run_cli(
    *argv: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    stdin: str | bytes = "",
    container: Any | None = None,
) -> CliResult:
    """``artifactize ARGV`` in this process; see the module's docstring."""
    from artifactize.entrypoints.cli.launch import main

    args = [str(arg) for arg in argv]
    environment = dict(os.environ if env is None else env)
    with (
        _environment(environment),
        _working_directory(cwd),
        _fresh_context(container),
        _streams(stdin) as (out, err),
    ):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
        except Exception:
            traceback.print_exc()
            code = 1
        stdout, stderr = out.text(), err.text()
    return CliResult(args, code, stdout, stderr)


@dataclass
class Cli:
    """``run_cli`` bound to one test: its own state home (``ARTIFACTIZE_STATE_HOME``) and
    remote settings off, on top of this process's environment (``env`` adds or replaces)."""

    state_home: Path
    env: dict[str, str]

    def __call__(
        self,
        *argv: str,
        env: Mapping[str, str] | None = None,
        cwd: Path | str | None = None,
        stdin: str | bytes = "",
    ) -> CliResult:
        return run_cli(*argv, env={**self.environment(), **(env or {})}, cwd=cwd, stdin=stdin)

    def environment(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
        return {**base, "ARTIFACTIZE_STATE_HOME": str(self.state_home), **self.env}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """The CLI in process, with a state home of its own under the test's ``tmp_path``."""
    return Cli(tmp_path / "state-home", {"ARTIFACTIZE_REMOTE": "off"})
