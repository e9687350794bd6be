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
from artifactize.entrypoints.errors import CommandError


def models_command(
    backend: Annotated[str, typer.Argument(help="openai, anthropic or openai-chat.")],
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="An endpoint, as a profile's base_url would name it."),
    ] = None,
) -> None:
    """List the models the backend's endpoint serves (one ID a line)."""
    import anyio

    from artifactize.ports.model import BackendUnavailable, ProviderFailure

    catalog = CliContext.services().model_catalog()
    try:
        models = anyio.run(catalog.list_models, backend, base_url)
    except (BackendUnavailable, ProviderFailure) as exc:
        raise CommandError(str(exc)) from None
    if CliContext.options.json:
        typer.echo(json.dumps({"backend": backend, "models": models}, ensure_ascii=False))
    else:
        typer.echo("\n".join(models) if models else "(the endpoint lists no models)")


def doctor_command() -> None:
    """Check keys, endpoints, proxies, the state home, the team store and the Human tools
    the workspace needs. Exit 0 when all is ready, 1 otherwise."""
    import anyio

    doctor, workspace, error = CliContext.services().doctor()
    report = anyio.run(doctor.report, workspace, error)
    if CliContext.options.json:
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        from artifactize.entrypoints.cli.render.doctor import doctor_text

        typer.echo(doctor_text(report))
    raise typer.Exit(ExitCode.OK if report["ready"] else ExitCode.NOT_READY)
