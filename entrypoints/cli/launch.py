"""The console script: ``artifactize --version`` answered without importing typer, every
other command line handed to ``entrypoints.cli.app`` (typer).

The version is the one answer that needs nothing but a constant, so it takes no library at
all; ``--help`` and every command go through typer, which renders its own help.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from artifactize.entrypoints.cli.command_table import PROG_NAME
from artifactize.entrypoints.cli.exit_codes import ExitCode


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point; ``argv`` defaults to ``sys.argv[1:]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        from artifactize.entrypoints.version import VERSION

        sys.stdout.write(f"{PROG_NAME} {VERSION}\n")
        raise SystemExit(ExitCode.OK)
    from artifactize.entrypoints.cli.app import main as full_main

    full_main(args)


if __name__ == "__main__":
    main()
