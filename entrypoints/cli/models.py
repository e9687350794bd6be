"""``artifactize models BACKEND`` (what an endpoint serves) and ``artifactize doctor`` (is
this machine ready for the workspace's reviews).

``models`` asks the endpoint the backend would use (``ARTIFACTIZE_*_BASE_URL``, else
``--base-url``, else the public API) for its model list: exit 0 with the IDs, 2 when the
endpoint or its key is unusable or it refuses. ``doctor`` exits 0 when everything the
workspace needs is ready, 1 otherwise.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.options import argument, option
from artifactize.entrypoints.cli.output import emit, emit_json
from artifactize.entrypoints.errors import CommandError


def models_command(
    backend: Annotated[str, argument("openai, anthropic, openai-chat, claude-code or codex.")],
    base_url: Annotated[
        str | None, option("--base-url", "An endpoint, as a profile's base_url would name it.")
    ] = None,
) -> None:
    """List the models the backend's endpoint serves (one ID a line); for claude-code and
    codex, the models the agent lists, and its version and sign-in."""
    import anyio

    from artifactize.ports.coding_agents import CODING_AGENT_BACKENDS
    from artifactize.ports.model import BackendUnavailable, ProviderFailure

    if backend in CODING_AGENT_BACKENDS:
        _agent_models(backend, base_url)
        return
    catalog = CliContext.services().model_catalog()
    try:
        models = anyio.run(catalog.list_models, backend, base_url)
    except (BackendUnavailable, ProviderFailure) as exc:
        raise CommandError(str(exc)) from None
    if CliContext.options.json:
        typer.echo(json.dumps({"backend": backend, "models": models}, ensure_ascii=False))
    else:
        typer.echo("\n".join(models) if models else "(the endpoint lists no models)")


def _agent_models(backend: str, base_url: str | None) -> None:
    """A coding agent's models, as the agent lists them; exit 2 when it is not usable."""
    import anyio

    from artifactize.entrypoints.cli.render.models import agent_models_text, agent_models_view

    if base_url is not None:
        raise CommandError(f"--base-url does not apply to {backend}: it lists its own models.")
    found = anyio.run(CliContext.services().coding_agents().models, backend)
    if found.install.program is None or found.install.version is None:
        raise CommandError(found.install.detail)
    emit(agent_models_view(backend, found), agent_models_text)


def doctor_command(
    repair: Annotated[
        bool,
        option(
            "--repair",
            "Recover a damaged state: copy what can be read into a new state file, "
            "keeping the damaged one aside.",
        ),
    ] = False,
) -> None:
    """Check keys, endpoints, proxies, the state home, the team store and the Human tools
    the workspace needs. Exit 0 when all is ready, 1 otherwise.

    With --repair, first recover a damaged state (docs/robustness.md, "A damaged state").
    """
    import anyio

    if repair:
        _repair_state()

    doctor, workspace, error = CliContext.services().doctor()
    report = anyio.run(doctor.report, workspace, error)
    if CliContext.options.json:
        emit_json(report)
    else:
        from artifactize.entrypoints.cli.render.doctor import doctor_text

        typer.echo(doctor_text(report))
    raise typer.Exit(ExitCode.OK if report["ready"] else ExitCode.NOT_READY)


def _repair_state() -> None:
    """Recover the state if it is damaged, and say what was done (stderr with text output,
    a ``repair`` line of JSON on stdout with --json, before the doctor's report)."""
    from artifactize.ports.state import StateError

    services = CliContext.services()
    try:
        recovery = services.container.state_repair()(services.state_dir())
    except StateError as exc:
        raise CommandError(str(exc)) from None
    if CliContext.options.json:
        typer.echo(json.dumps({"repair": recovery}, ensure_ascii=False))
    elif recovery is None:
        typer.echo("The state is sound (or there is none): nothing to repair.", err=True)
    else:
        copied = ", ".join(f"{table} {count}" for table, count in recovery["copied"].items())
        lost = sum(recovery["unreadable"].values())
        typer.echo(
            f"Recovered the state into {recovery['database']} (rows copied: {copied}; "
            f"unreadable stretches skipped: {lost}); the damaged file is kept as "
            f"{recovery['damaged']}.",
            err=True,
        )
