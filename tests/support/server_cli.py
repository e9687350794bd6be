"""Run ``artifactize [global options] server …`` in this process or as a subprocess.

Once ``entrypoints/cli.py`` registers ``server_app`` as ``server``, both go through the real
entry point (``entrypoints.cli.main``). Until then a shim does what ``main`` does for these
commands: lift the global options, run ``server_app`` and turn a ``ReviewCommandError`` into
exit 2 with the message (``{"error": …}`` on stdout with ``--json``).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Sequence


def server_registered() -> bool:
    from entrypoints import cli

    return any(group.name == "server" for group in cli.app.registered_groups)


def shim_main(argv: Sequence[str]) -> int:
    """``entrypoints.cli.main`` for ``server`` commands only; returns the exit code."""
    import typer

    from entrypoints.cli_context import CliContext
    from entrypoints.cli_reviews import ReviewCommandError
    from entrypoints.cli_server import server_app
    from entrypoints.global_options import split_global_options

    options, rest = split_global_options(argv)
    assert rest[:1] == ["server"], rest
    CliContext.options = options
    command = typer.main.get_command(server_app)
    try:
        code = command.main(rest[1:], prog_name="artifactize server", standalone_mode=False)
    except ReviewCommandError as exc:
        if options.json:
            sys.stdout.write(json.dumps({"error": str(exc)}) + "\n")
        else:
            sys.stderr.write(f"error: {exc}\n")
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    return code if isinstance(code, int) else 0


def run_in_process(argv: Sequence[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``artifactize *argv``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if server_registered():
            from entrypoints.cli import main

            try:
                main(list(argv))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
        else:
            code = shim_main(argv)
    return code, out.getvalue(), err.getvalue()


def subprocess_argv(argv: Sequence[str]) -> list[str]:
    """A command line that runs ``artifactize *argv`` in a fresh Python process."""
    if server_registered():
        return [sys.executable, "-m", "entrypoints.cli", *argv]
    code = "import sys; from tests.support.server_cli import shim_main; sys.exit(shim_main(sys.argv[1:]))"
    return [sys.executable, "-c", code, *argv]
