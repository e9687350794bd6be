"""``remote login/logout/status/push``: the client side of the team review store.

The token is read from one line of standard input (not echoed on a terminal), verified
with ``whoami`` before anything is stored, and never printed. ``status`` exits 0 only when
the store accepts the token. ``push`` never fails open: any remote failure is exit 2.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.exit_codes import ExitCode
from artifactize.entrypoints.cli.options import argument, option
from artifactize.entrypoints.cli.output import emit as _emit
from artifactize.entrypoints.cli.progress import CLEAR_LINE, is_live_terminal
from artifactize.entrypoints.cli.usage import ConventionalTyper
from artifactize.entrypoints.errors import CommandError
from artifactize.ports.review_store import (
    SCOPE_READ,
    TOKEN_MAX_CHARS,
    Principal,
    RemoteConfigError,
    RemoteFailure,
    RemoteLease,
    RemoteSettings,
    RemoteStore,
    RemoteStores,
)

TOKEN_LINE_MAX_CHARS = TOKEN_MAX_CHARS + 2  # room for CR LF; a longer line fails the check
TOKEN_PROMPT = "Remote store token: "
NOT_CONFIGURED = (
    "No remote review store is configured; run `artifactize remote login URL` "
    "or set ARTIFACTIZE_REMOTE."
)

T = TypeVar("T")

remote_app = ConventionalTyper(
    help="Share verdicts through a team review store: login, logout, status, push.",
    no_args_is_help=True,
)


def _stores() -> RemoteStores:
    stores: RemoteStores = CliContext.container.remote_stores()
    return stores


def _settings(stores: RemoteStores) -> RemoteSettings | None:
    try:
        return stores.settings(CliContext.services().state_dir())
    except RemoteConfigError as exc:
        raise CommandError(str(exc)) from None


def _with_store(
    stores: RemoteStores, settings: RemoteSettings, work: Callable[[RemoteStore], Awaitable[T]]
) -> T:
    """Run ``work`` against an open store, closing it on every path."""
    import anyio

    async def main() -> T:
        store = stores.open(settings)
        try:
            return await work(store)
        finally:
            with anyio.CancelScope(shield=True):
                await store.aclose()

    return anyio.run(main)


def _read_token() -> str:
    """One line of standard input without its line break; not echoed on a terminal."""
    if sys.stdin.isatty():
        return getpass.getpass(TOKEN_PROMPT)
    line = sys.stdin.readline(TOKEN_LINE_MAX_CHARS + 1)
    return line.removesuffix("\n").removesuffix("\r")


@remote_app.command("login")
def login(
    url: Annotated[str, argument("The store URL (https://, or http:// on loopback).")],
    share: Annotated[
        str, option("--share", "What to publish: summary (default) or full.")
    ] = "summary",
) -> None:
    """Read a token from stdin, verify it with the store, then save it and the store URL."""
    stores = _stores()
    try:
        normalized = stores.check_login(url, share)
        token = stores.check_token(_read_token(), "The token read from standard input")
    except RemoteConfigError as exc:
        raise CommandError(str(exc)) from None
    candidate = RemoteSettings(normalized, share, token, "file")
    try:
        principal = _with_store(stores, candidate, lambda store: store.whoami())
    except RemoteFailure as exc:
        raise CommandError(f"Login failed, nothing was saved: {exc.message}") from None
    try:
        stores.login(CliContext.services().state_dir(), normalized, token, share)
    except RemoteConfigError as exc:
        raise CommandError(str(exc)) from None
    _emit(
        {
            "url": normalized,
            "share": share,
            "principal": principal.name,
            "scopes": list(principal.scopes),
        },
        f"Logged in to {normalized} as {principal.name} "
        f"(scopes: {', '.join(principal.scopes) or 'none'}; share: {share}).",
    )


@remote_app.command("logout")
def logout() -> None:
    """Delete the saved token and remote.json of this state."""
    try:
        removed = _stores().logout(CliContext.services().state_dir())
    except RemoteConfigError as exc:
        raise CommandError(str(exc)) from None
    _emit(
        {"removed": removed},
        "Logged out." if removed else "Nothing to remove: not logged in.",
    )


@remote_app.command("status")
def status() -> None:
    """The store, share mode, token source, whether the store accepts the token, and the
    review leases held in the store (with the read scope; null from a store without leases).

    Exit codes: 0 the store accepts the token, 1 it does not (or none is configured),
    2 invalid configuration.
    """
    from artifactize.entrypoints.cli.render import remote as render

    stores = _stores()
    settings = _settings(stores)
    if settings is None:
        _emit(*render.unused_status(stores.switched_off(), NOT_CONFIGURED))
        raise typer.Exit(ExitCode.NOT_READY)
    principal: Principal | None = None
    failure: RemoteFailure | None = None
    leases: list[RemoteLease] | None = None

    async def ask(store: RemoteStore) -> tuple[Principal, list[RemoteLease] | None]:
        who = await store.whoami()
        held = await store.list_leases() if SCOPE_READ in who.scopes else None
        return who, held

    try:
        principal, leases = _with_store(stores, settings, ask)
    except RemoteFailure as exc:
        failure = exc
    _emit(*render.store_status(settings, principal, leases, failure))
    raise typer.Exit(ExitCode.OK if principal is not None else ExitCode.NOT_READY)


def _push_progress(sent: int, total: int) -> None:
    """One line on the terminal, redrawn after each batch (cleared at the end)."""
    sys.stderr.write(f"{CLEAR_LINE}Sending records: {sent:,} of {total:,}")
    sys.stderr.flush()


@remote_app.command("push")
def push_command(
    dry_run: Annotated[
        bool, option("--dry-run", "Count what would be sent; send nothing.")
    ] = False,
) -> None:
    """Publish the newest local GREEN/RED record of every key that the store lacks.

    Needs the publish scope (human for Human sign-offs). Records go in batches of up to 500;
    on a terminal a line on stderr counts them as they go. Any remote failure is exit 2.
    """
    from artifactize.domain.use_cases.remote_push import (
        PushError,
        PushReport,
        local_candidates,
        push,
    )

    stores = _stores()
    settings = _settings(stores)
    if settings is None:
        raise CommandError(NOT_CONFIGURED)
    state = CliContext.services().open_state(create=False)
    candidates = local_candidates(state) if state is not None else []
    report = PushReport(dry_run=dry_run)
    live = is_live_terminal(sys.stderr, os.environ)
    progress = _push_progress if live and not dry_run else None
    try:
        _with_store(stores, settings, lambda store: push(candidates, store, report, progress))
    except (RemoteFailure, PushError) as exc:
        message = exc.message if isinstance(exc, RemoteFailure) else str(exc)
        raise CommandError(
            f"Push failed: {message} (pushed {report.pushed} before the failure)"
        ) from None
    finally:
        if progress is not None:
            sys.stderr.write(CLEAR_LINE)
            sys.stderr.flush()
        for reason in report.reasons:
            typer.echo(reason, err=True)
    _emit(report.to_json(), report.text())
