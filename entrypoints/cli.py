"""The ``artifactize`` command line (typer).

Exit codes: 0 success, 1 RED or not ready, 2 usage or operational error. With ``--json``
an error is ``{"error": "..."}`` on stdout; otherwise the message goes to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from importlib.metadata import version
from typing import Annotated, Any, NoReturn

import typer
from typer._click import exceptions as click_errors  # typer 0.29 vendors click

from domain.config_service import summary_text
from domain.diagnostics import ConfigError
from domain.graph import graph_text
from domain.workspace import UnknownName
from entrypoints.container import Container
from entrypoints.global_options import GlobalOptions, UsageError, split_global_options
from ports.filesystem import FilesystemError

EXIT_OK = 0
EXIT_USAGE = 2

GLOBAL_HELP = (
    "Global options, accepted once each, before or after the subcommand: "
    "--repo PATH (the repository, default: the current directory), "
    "--state-dir PATH (default: $ARTIFACTIZE_STATE_HOME, else $XDG_STATE_HOME/artifactize, "
    "else ~/.local/state/artifactize), --json (machine-readable output)."
)

app = typer.Typer(
    name="artifactize",
    help="Review the Artifacts of a repository through declared tools. " + GLOBAL_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
config_app = typer.Typer(help="Check and describe the .artf declarations.", no_args_is_help=True)
app.add_typer(config_app, name="config")


class _State:
    """What the entry point hands to commands: parsed global options and the container."""

    options = GlobalOptions()
    container = Container()


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"artifactize {version('artifactize')}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Review the Artifacts of a repository through declared tools."""


def _emit(data: Any, text: str) -> None:
    if _State.options.json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        typer.echo(text)


@config_app.command("check")
def config_check() -> None:
    """Validate every .artf declaration. Runs no scripts, hashes no files, writes nothing."""
    data = _State.container.config_service().check(_State.options.repo)
    _emit(data, summary_text(data))


@config_app.command("graph")
def config_graph(
    artifact: Annotated[
        str | None,
        typer.Argument(help="Show only this Artifact and everything it consumes."),
    ] = None,
) -> None:
    """Show Artifacts, their evals and relations (inputs first)."""
    report = _State.container.config_service().graph(_State.options.repo, artifact)
    _emit(report, graph_text(report))


def _fail(message: str, options: GlobalOptions, extra: dict[str, Any] | None = None) -> NoReturn:
    if options.json:
        sys.stdout.write(json.dumps({"error": message, **(extra or {})}, ensure_ascii=False) + "\n")
    else:
        sys.stderr.write("".join(f"error: {line}\n" for line in message.splitlines()))
    raise SystemExit(EXIT_USAGE)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point; ``argv`` defaults to ``sys.argv[1:]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        options, rest = split_global_options(args)
    except UsageError as exc:
        _fail(str(exc), GlobalOptions(json="--json" in args))
    _State.options = options
    command = typer.main.get_command(app)
    try:
        command.main(rest, prog_name="artifactize", standalone_mode=False)
    except ConfigError as exc:
        detail = {"problems": [p.to_json() for p in exc.problems]}
        _fail(str(exc), options, detail)
    except UnknownName as exc:
        _fail(str(exc), options)
    except FilesystemError as exc:
        _fail(f"cannot read the repository {options.repo}: {exc}", options)
    except click_errors.NoArgsIsHelpError as exc:
        sys.stderr.write(exc.ctx.get_help() + "\n" if exc.ctx else "")
        raise SystemExit(EXIT_USAGE) from None
    except click_errors.UsageError as exc:
        hint = f"\n{exc.ctx.get_usage()}" if exc.ctx and not options.json else ""
        _fail(f"{exc.format_message()}{hint}", options)
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        _fail("aborted", options)
    raise SystemExit(EXIT_OK)


if __name__ == "__main__":
    main()
