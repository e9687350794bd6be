"""Run ``artifactize [global options] server …`` in this process or as a subprocess."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence

from artifactize.entrypoints.cli.app import main


def run_in_process(argv: Sequence[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``artifactize *argv``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def subprocess_argv(argv: Sequence[str]) -> list[str]:
    """A command line that runs ``artifactize *argv`` in a fresh Python process."""
    return [sys.executable, "-m", "artifactize.entrypoints.cli.app", *argv]
