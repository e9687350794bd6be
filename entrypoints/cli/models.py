"""``artifactize models BACKEND`` (what an endpoint serves) and ``artifactize doctor`` (is
this machine ready for the workspace's reviews).

``models`` asks the endpoint the backend would use (``ARTIFACTIZE_*_BASE_URL``, else
``--base-url``, else the public API) for its model list: exit 0 with the IDs, 2 when the
endpoint or its key is unusable or it refuses. ``doctor`` exits 0 when everything the
workspace needs is ready, 1 otherwise.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.errors import CommandError

EXIT_READY = 0
EXIT_NOT_READY = 1


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
        typer.echo(doctor_text(report))
    raise typer.Exit(EXIT_READY if report["ready"] else EXIT_NOT_READY)


def _mark(ok: bool | None) -> str:
    return "ok" if ok else "--" if ok is None else "NO"


def doctor_text(report: dict[str, Any]) -> str:
    lines = []
    if not report["backends"]:
        lines.append("Agent backends: none used by this workspace")
    for item in report["backends"]:
        lines.append(f"Agent backend {item['backend']} ({', '.join(item['evals'])}):")
        if "program" in item:
            lines.append(
                f"  program: {item['program'] or 'not found'} (from {item['programSource']})"
            )
            lines.append(f"  version: {item['version'] or 'unknown'}")
            lines.append(
                f"  {_mark(item['ready'])} signed in: {_mark(item['signedIn'])} {item['detail']}"
            )
            continue
        if "baseUrl" not in item:
            lines.append(f"  {_mark(False)} {item.get('detail')}")
            continue
        key = item["key"]
        state = "set" if key["set"] else "unset" + (" (required)" if key["required"] else "")
        lines.append(f"  endpoint: {item['baseUrl']} (from {item['endpointSource']})")
        lines.append(f"  key: {key['variable']} {state}")
        answered = item.get("answers")
        detail = (
            f"HTTP {item.get('status')} in {item.get('seconds')} s"
            if answered
            else item.get("detail")
        )
        lines.append(f"  {_mark(item['ready'])} answers: {_mark(answered)} {detail or ''}".rstrip())
        lines.append(f"  proxy: {item['proxy'] or 'none (direct)'}")
        if item["loopbackRule"]:
            lines.append(f"  {item['loopbackRule']}")
    home = report["stateHome"]
    lines.append(
        f"{_mark(home['writable'])} state home: {home['path']}"
        + (f" ({home['detail']})" if home["detail"] else "")
    )
    store = report["teamStore"]
    if store["configured"]:
        lines.append(f"{_mark(store['reachable'])} team store: {store['url']} ({store['detail']})")
    else:
        lines.append(
            "-- team store: not configured" + (f" ({store['detail']})" if store["detail"] else "")
        )
    editor = report["editor"]
    needed = " (needed: Human evals)" if editor["needed"] else ""
    source = f"${editor['variable']}" if editor["variable"] else "default"
    lines.append(f"editor: {editor['command'] or 'none'} ({source}){needed}")
    opener = report["desktopOpener"]
    lines.append(
        f"desktop opener: {opener['path'] or opener['program'] + ' not found'}"
        + (" (needed)" if opener["needed"] else "")
    )
    lines.append("Ready." if report["ready"] else "Not ready:")
    lines.extend(f"  {problem}" for problem in report["problems"])
    return "\n".join(lines)
