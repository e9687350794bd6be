"""The ``artifactize`` command line (typer).

Exit codes: 0 success, 1 RED or not ready, 2 usage or operational error. With ``--json``
an error is ``{"error": "..."}`` on stdout; otherwise the message goes to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from artifactize.entrypoints.cli.command_table import COMMANDS, ROOT_HELP, VERSION_HELP
from artifactize.entrypoints.cli.context import CliContext as _State
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.global_options import (
    GlobalOptions,
    UsageError,
    split_global_options,
)
from artifactize.entrypoints.cli.lazy_commands import LazyGroup
from artifactize.entrypoints.cli.options import argument, option
from artifactize.entrypoints.cli.output import emit as _emit
from artifactize.entrypoints.cli.output import emit_json
from artifactize.entrypoints.cli.usage import ConventionalTyper
from artifactize.entrypoints.errors import CommandError

if TYPE_CHECKING:
    from artifactize.domain.use_cases.config_service import ConfigService

HELP_HINT = "Try '{command} --help' for help."

LazyGroup.LAZY = COMMANDS

app = ConventionalTyper(
    name="artifactize",
    cls=LazyGroup,
    help=ROOT_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
config_app = ConventionalTyper(
    help="Check and describe the .artf declarations.", no_args_is_help=True
)
tools_app = ConventionalTyper(help="Inspect and try the tools reviewers see.", no_args_is_help=True)

# tools check's Artifact selection (as --artifact A --audience human).
ArtifactOption = Annotated[
    str | None, option("--artifact", "Check this Artifact and its children.")
]
AudienceOption = Annotated[str | None, option("--audience", "agent or human (with --artifact).")]


def _version_callback(value: bool) -> None:
    if value:
        from artifactize.entrypoints.version import VERSION

        typer.echo(f"artifactize {VERSION}")
        raise typer.Exit(ExitCode.OK)


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True, help=VERSION_HELP),
    ] = False,
) -> None:
    """Review the Artifacts of a repository through declared tools."""


@config_app.command("check")
def config_check() -> None:
    """Validate every .artf declaration. Runs no scripts, hashes no files, writes nothing."""
    from artifactize.entrypoints.cli.render.config import summary_text

    _emit_config(lambda service, repo: service.check(repo), summary_text)


@config_app.command("graph")
def config_graph(
    artifact: Annotated[
        str | None, argument("Show only this Artifact and everything it consumes.")
    ] = None,
) -> None:
    """Show Artifacts, their evals and relations (inputs first)."""
    from artifactize.entrypoints.cli.render.config import graph_text

    _emit_config(lambda service, repo: service.graph(repo, artifact), graph_text)


def _emit_config(
    report: Callable[[ConfigService, str], dict[str, Any]], text: Callable[[Any], str]
) -> None:
    """``report`` of the config service on the repository: JSON, or ``text`` of it.

    The collector is paused to the exit (as for ``status``): the loaded workspace lives
    until the process ends, and re-enabled over it, the collector's first passes would
    traverse all of it for nothing (0.3-0.5 s at 10,000 Artifacts)."""
    with _State.container.collector_pause_to_exit()():
        _emit(report(_State.services().reading_config(), _State.options.repo), text)


@tools_app.command("check")
def tools_check(
    selector: Annotated[
        str | None, argument("An Agent or Human eval (ARTIFACT/EVAL); same as --eval.")
    ] = None,
    eval_id: Annotated[str | None, option("--eval", "An Agent or Human eval.")] = None,
    artifact: ArtifactOption = None,
    audience: AudienceOption = None,
    tool: Annotated[str | None, option("--tool", "One tool, by short or published name.")] = None,
    execute: Annotated[
        bool, option("--execute", "Call the selected tool once, as a reviewer would.")
    ] = False,
    args: Annotated[str | None, option("--args", "JSON arguments for an Agent tool call.")] = None,
) -> None:
    """Validate tools and report their readiness as JSON; static unless --execute is given.

    Exit codes: 0 ready, 1 not ready or the tool failed, 2 invalid invocation.
    """
    import functools

    import anyio

    from artifactize.domain.use_cases.tools_check import InvocationError, Report, ToolsCheckRequest
    from artifactize.entrypoints.signals import until_signal

    if selector is not None and eval_id is not None:
        raise InvocationError("Give the eval either as a positional selector or with --eval.")
    parsed = _parse_args_json(args)
    request = ToolsCheckRequest(
        eval_id=selector or eval_id,
        artifact=artifact,
        audience=audience,
        tool=tool,
        execute=execute,
        args=parsed,
        args_given=args is not None,
    )
    service = _State.services().tools_check()
    report = Report()
    # SIGINT and SIGTERM cancel the call like `verify`: its cleanup runs, then exit 2.
    work = functools.partial(service.run, _State.options.repo, request, report)
    outcome = anyio.run(until_signal, work)
    if outcome is None:
        report.cancel()
    document, code = (report.to_json(), ExitCode.ERROR) if outcome is None else outcome
    emit_json(document)
    raise typer.Exit(code)


def _parse_args_json(text: str | None) -> dict[str, Any] | None:
    from artifactize.domain.errors import InvocationError
    from artifactize.kernel.bounded_json import JsonRefused, read_json

    if text is None:
        return None
    try:
        value = read_json(text)
    except JsonRefused as exc:
        raise InvocationError(f"Invalid --args JSON: {exc.reason}") from None
    if not isinstance(value, dict):
        raise InvocationError("Invalid --args JSON: expected an object")
    return value


def _fail(
    message: str,
    options: GlobalOptions,
    extra: dict[str, Any] | None = None,
    *,
    usage: str = "",
    code: int = ExitCode.ERROR,
) -> NoReturn:
    """Exit 2 (or ``code``): ``error: …`` on stderr (then ``usage``, unprefixed), or the
    JSON error."""
    if options.json:
        sys.stdout.write(json.dumps({"error": message, **(extra or {})}, ensure_ascii=False) + "\n")
    else:
        sys.stderr.write("".join(f"error: {line}\n" for line in message.splitlines()))
        sys.stderr.write(f"{usage}\n" if usage else "")
    raise SystemExit(code)


def _fail_known(exc: Exception, options: GlobalOptions) -> NoReturn:
    """Exit 2 with the message of an error a command may raise; anything else is a bug and
    propagates. The error types are imported here, so a command that never fails never
    loads the modules that define them."""
    from artifactize.domain.declarations.diagnostics import ConfigError, NotReady
    from artifactize.domain.errors import InvocationError, UnknownName
    from artifactize.ports.filesystem import FilesystemError
    from artifactize.ports.state import StateError

    if isinstance(exc, ConfigError):
        problems = {"problems": [p.to_json() for p in exc.problems]}
        _fail(
            str(exc),
            options,
            problems,
            code=ExitCode.NOT_READY if isinstance(exc, NotReady) else ExitCode.ERROR,
        )
    if isinstance(exc, (UnknownName, InvocationError, CommandError, StateError)):
        _fail(str(exc), options)
    if isinstance(exc, FilesystemError):
        _fail(f"cannot read the repository {options.repo}: {exc}", options)
    raise exc


def _usage_failed(exc: typer.TyperException, options: GlobalOptions) -> NoReturn:
    """typer 0.28 (as 0.29) vendors click privately: its usage errors are public only as a
    TyperException with click's usage exit code (2) and the failing command's context. A
    command group given no command prints its help (exit 2); any other usage error says what
    is wrong, then the usage line and where to find help."""
    if exc.exit_code != ExitCode.ERROR:
        raise exc
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError":  # told apart by name, as typer does
        sys.stderr.write(ctx.get_help() + "\n" if ctx else "")
        raise SystemExit(ExitCode.ERROR) from None
    hint = f"{ctx.get_usage()}\n{HELP_HINT.format(command=ctx.command_path)}" if ctx else ""
    _fail(exc.format_message(), options, usage=hint)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point; ``argv`` defaults to ``sys.argv[1:]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        options, rest = split_global_options(args)
    except UsageError as exc:
        _fail(str(exc), GlobalOptions(json="--json" in args))
    _State.options = options
    if options.nested_repos:  # the walk enters other repositories below the root
        from dependency_injector import providers

        _State.container.enter_nested.override(providers.Object(True))
    if rest[:1] == ["stand-in"] and rest[1:] not in ([], ["--help"]):
        from artifactize.entrypoints.stand_in import run_stand_in  # takes a whole command line

        raise SystemExit(run_stand_in(rest[1:]))
    from artifactize.entrypoints.cli.completion import enable_if_requested

    enable_if_requested()
    command = typer.main.get_command(app)  # each subcommand's usage is adjusted as it loads
    try:
        # Without standalone mode, click returns a raised ``Exit``'s code instead of raising.
        code = command.main(rest, prog_name="artifactize", standalone_mode=False)
    except typer.TyperException as exc:
        _usage_failed(exc, options)
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except typer.Abort:
        _fail("aborted", options)
    except Exception as exc:
        _fail_known(exc, options)
    raise SystemExit(code if isinstance(code, int) else ExitCode.OK)


if __name__ == "__main__":
    main()
