"""``artifactize [global options] server …`` in this process or as a subprocess: thin names
over the one CLI harness, ``tests/support/cli.py``."""

from __future__ import annotations

from collections.abc import Sequence

from tests.support.cli import command, run_cli


def run_in_process(argv: Sequence[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``artifactize *argv``."""
    done = run_cli(*argv)
    return done.code, done.stdout, done.stderr


def subprocess_argv(argv: Sequence[str]) -> list[str]:
    """A command line that runs ``artifactize *argv`` in a fresh Python process."""
    return command(*argv)
