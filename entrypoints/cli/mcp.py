"""``artifactize mcp``: serve an Agent eval's tools over MCP (stdio, or streamable HTTP on
loopback), and ``artifactize mcp log``: the audit of the servers that ran.

Refusals (unknown eval or Artifact, a Human or runtime eval, ``--max-tool-calls 0``, a
non-loopback ``--http``, a path that cannot be pinned) exit 2 before anything is served.
The ``mcp`` SDK is imported only when a server starts.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.options import argument, option
from artifactize.entrypoints.cli.output import emit as _emit
from artifactize.entrypoints.cli.usage import ConventionalTyper
from artifactize.entrypoints.errors import CommandError

if TYPE_CHECKING:
    import socket

    from artifactize.domain.use_cases.serving import ServingRun
    from artifactize.entrypoints.bootstrap import PreparedServer
    from artifactize.ports.mcp_audit import McpCallRecord, McpSessionRecord

LOG_LIMIT_DEFAULT = 20
# A built-in in a worker thread (every one but a short ``read``, which runs on the event loop:
# ``InlineFirst``) competes for the GIL with the SDK's tasks; at CPython's default 5 ms switch
# interval the worker waited that long for it on every call (bench/mcp.py: a served read went
# from ~18 ms to ~3 ms in process, when it ran in the thread).
SERVER_SWITCH_INTERVAL_SECONDS = 0.001
SUMMARY_SHOWN_CHARS = 120
OPTIONS_WITH_LOG = (
    "--eval, --artifact, --http and --max-tool-calls start a server; `mcp log` takes none of them."
)
UNKNOWN_SESSION = "Unknown MCP session: {session_id}"
CONTROL_ALONE = (
    "--control serves the control surface; it takes no --eval, --artifact or --max-tool-calls."
)

mcp_app = ConventionalTyper(
    help=(
        "Serve an Agent eval's tools to any MCP client (Claude Code, Cursor, VS Code, Codex "
        "CLI, Claude Desktop): stdio by default, or streamable HTTP on loopback with --http."
    ),
    invoke_without_command=True,
)


@mcp_app.callback(invoke_without_command=True)
def mcp_command(
    ctx: typer.Context,
    eval_id: Annotated[
        str | None,
        option("--eval", "Serve this Agent eval's tools (ARTIFACT/EVAL), in its admitted scope."),
    ] = None,
    artifact: Annotated[
        str | None,
        option("--artifact", "Serve this Artifact's Agent tools, with its children's scope."),
    ] = None,
    http: Annotated[
        str | None,
        option(
            "--http",
            "Serve streamable HTTP on this loopback HOST:PORT (port 0: any free port) "
            "instead of stdio; prints the URL and a bearer token.",
        ),
    ] = None,
    control: Annotated[
        bool,
        option(
            "--control",
            "Serve the control surface instead of an eval's tools: status, verify_start, "
            "run_wait, run_show, run_list, run_cancel, request_list, eval_explain.",
        ),
    ] = False,
    max_tool_calls: Annotated[
        int | None,
        option(
            "--max-tool-calls",
            "Refuse calls past N (default: the eval's maxToolCalls, else no limit).",
        ),
    ] = None,
) -> None:
    """Serve the tools (no subcommand), or show the audit (``mcp log``).

    Exit codes: 0 the client disconnected or the server was stopped (SIGINT/SIGTERM),
    2 refused before serving, or a tool session or audit entry could not be finished
    (each problem on stderr, and in ``mcp log``).
    """
    given = eval_id is not None or artifact is not None or http is not None or control
    if ctx.invoked_subcommand is not None:
        if given or max_tool_calls is not None:
            raise CommandError(OPTIONS_WITH_LOG)
        return
    from artifactize.domain.use_cases.serving import ServeSelection

    address = _listen_address(http) if http is not None else None
    if control:
        if eval_id is not None or artifact is not None or max_tool_calls is not None:
            raise CommandError(CONTROL_ALONE)
        _serve(None, address)
        return
    selection = ServeSelection(eval_id=eval_id, artifact=artifact, max_tool_calls=max_tool_calls)
    _serve(selection, address)


def _listen_address(text: str) -> Any:
    from artifactize.entrypoints.listen_address import ListenError, parse_listen

    try:
        address = parse_listen(text)
    except ListenError as exc:
        raise CommandError(str(exc)) from None
    if not address.is_loopback:
        raise CommandError(
            f"--http {text}: artifactize mcp serves loopback only "
            "(127.0.0.0/8, [::1] or localhost), e.g. --http 127.0.0.1:0."
        )
    return address


def _serve(selection: Any, address: Any) -> None:
    import sys

    sys.setswitchinterval(SERVER_SWITCH_INTERVAL_SECONDS)
    prepared = _prepared(selection, "http" if address is not None else "stdio")
    sock = _bound(address, prepared)
    try:
        # The SDK (with pydantic and starlette: most of a second on a small machine) is
        # imported once the scope, the state and the address are known good, so a refusal
        # answers at once; still before anything is served or recorded.
        import artifactize.entrypoints.mcp.http
        import artifactize.entrypoints.mcp.server  # noqa: F401
    except BaseException:
        if sock is not None:
            sock.close()
        prepared.finish()
        raise
    _freeze_the_heap()
    target = "the control surface" if selection is None else selection.eval_id or selection.artifact
    try:
        _serve_until_signal(prepared.run, sock, target)
    finally:
        if sock is not None:
            sock.close()
        prepared.finish()
    if prepared.run.problems:  # a tool session not cleaned up, an audit write that failed
        for problem in prepared.run.problems:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(ExitCode.ERROR)


def _prepared(selection: Any, transport: str) -> PreparedServer:
    """One eval's (or Artifact's) tools, or the control surface when no selection."""
    services = CliContext.services()
    if selection is None:
        return services.prepare_control(transport)
    return services.prepare_server(selection, transport)


def _bound(address: Any, prepared: PreparedServer) -> socket.socket | None:
    """The listening socket of ``--http`` (None for stdio); a refusal ends the run."""
    if address is None:
        return None
    from artifactize.entrypoints.listen_address import bind

    try:
        return bind(address)
    except OSError as exc:
        prepared.finish()
        raise CommandError(f"Cannot listen on {address}: {exc.strerror or exc}") from None


def _freeze_the_heap() -> None:
    """Everything loaded so far (the SDK, the workspace, the registry) lives as long as the
    server: moved out of the collector's generations, each collection the SDK's per-request
    objects trigger no longer walks it (bench/mcp.py: ~0.3 ms less per served call)."""
    import gc

    gc.collect()
    gc.freeze()


def _serve_until_signal(run: ServingRun, sock: socket.socket | None, target: str | None) -> None:
    """Start the run, say what is served on stderr, serve until the client leaves or a
    signal arrives."""
    import anyio

    from artifactize.domain.use_cases.serving import ServeRefused
    from artifactize.entrypoints.mcp.http import serve_http
    from artifactize.entrypoints.mcp.server import serve_stdio
    from artifactize.entrypoints.signals import until_signal

    async def work() -> None:
        try:
            await run.start()
        except ServeRefused as exc:
            raise CommandError(exc.message) from None
        typer.echo(
            f"artifactize mcp: serving {len(run.served.tools)} tools of {target}; "
            f"MCP session {run.session_id}.",
            err=True,
        )
        if sock is None:
            await serve_stdio(run)
        else:
            await serve_http(run, sock, _announce)

    anyio.run(until_signal, work)


def _announce(url: str, token: str, session_id: str) -> None:
    """The URL and the bearer token, once, on stdout (the only place the token is shown)."""
    if CliContext.options.json:
        typer.echo(json.dumps({"url": url, "token": token, "sessionId": session_id}))
    else:
        typer.echo(f"URL: {url}\nToken: {token}")


@mcp_app.command("log")
def mcp_log(
    session_id: Annotated[
        str | None, argument("One MCP session: its scope, pins and every call.")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="How many sessions to list, newest first.")
    ] = LOG_LIMIT_DEFAULT,
) -> None:
    """The MCP sessions in the state (newest first), or one session's audited calls."""
    services = CliContext.services()
    stores = services.container.mcp_audit_stores()
    from artifactize.ports.state import StateError

    try:
        audit = stores.open(services.state_dir(), create=False)
    except StateError as exc:
        raise CommandError(str(exc)) from None
    try:
        if session_id is None:
            listed = audit.sessions(limit) if audit is not None else []
            data: Any = [dict(record.to_json(), calls=count) for record, count in listed]
            _emit(data, _sessions_text(listed))
            return
        record = audit.session(session_id) if audit is not None else None
        if record is None or audit is None:
            raise CommandError(UNKNOWN_SESSION.format(session_id=session_id))
        calls = audit.calls(session_id)
        _emit(
            {"session": record.to_json(), "calls": [call.to_json() for call in calls]},
            _session_text(record, calls),
        )
    finally:
        if audit is not None:
            audit.close()


def _served(record: McpSessionRecord) -> str:
    data = record.data
    return str(data.get("evalId") or data.get("artifactId") or "-")


def _sessions_text(listed: list[tuple[McpSessionRecord, int]]) -> str:
    if not listed:
        return "No MCP sessions."
    lines = []
    for record, count in listed:
        ended = record.ended_at or "(running or killed)"
        lines.append(
            f"{record.id}  {_served(record)}  {record.data.get('transport', '-')}  "
            f"started {record.started_at}  ended {ended}  calls {count}"
        )
    return "\n".join(lines)


def _session_text(record: McpSessionRecord, calls: list[McpCallRecord]) -> str:
    data = record.data
    lines = [
        f"MCP session: {record.id}",
        f"Serves: {_served(record)} ({data.get('transport', '-')})",
        f"Repository: {record.repo}",
        f"Scope: {', '.join(data.get('scope', []))}",
        f"Started: {record.started_at}",
        f"Ended: {record.ended_at or '(running or killed)'}",
        f"Budget: {data.get('maxToolCalls') or 'none'}",
    ]
    pins = data.get("pins") or {}
    for tool, paths in pins.items():
        for path, digest in paths.items():
            lines.append(f"Pin: {tool} {path} {digest}")
    for problem in data.get("problems", []):
        lines.append(f"Problem: {problem}")
    lines.append(f"Calls: {len(calls)}")
    for call in calls:
        if call.completed_at is None:
            state = "did not complete"
        else:
            state = f"{'error' if call.is_error else 'ok'} {call.duration_ms} ms"
        summary = call.summary or ""
        if len(summary) > SUMMARY_SHOWN_CHARS:
            summary = summary[: SUMMARY_SHOWN_CHARS - 1] + "…"
        lines.append(
            f"  #{call.ordinal} {call.tool} args {call.argument_bytes} B  {state}  {summary}"
        )
    return "\n".join(lines)
