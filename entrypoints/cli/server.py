"""``artifactize server …``: run the team review store and manage its tokens.

The store lives in ``<state-dir>/review-store.sqlite``, or in the database ``--database
URL`` names (``sqlite:///PATH`` or ``postgresql+psycopg://…``; also
``$ARTIFACTIZE_STORE_DATABASE``, which keeps a password off the command line). Token
commands and ``rm`` work while servers use the same database. A token is printed once, by ``token add``, and never again.
The server module (uvicorn, starlette) is imported only by ``run``, so other commands and
``--help`` stay fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from artifactize.domain.reviews.remote.leases import (
    LEASE_SECONDS_DEFAULT,
    LEASE_SECONDS_MAX,
    LEASE_SECONDS_MIN,
    check_lease_seconds,
)
from artifactize.domain.reviews.remote.server_admission import is_reuse_key
from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.options import argument, option
from artifactize.entrypoints.cli.output import emit_json as _emit_json
from artifactize.entrypoints.cli.usage import ConventionalTyper
from artifactize.entrypoints.errors import CommandError
from artifactize.entrypoints.listen_address import DEFAULT_LISTEN, ListenError, bind, parse_listen
from artifactize.ports.store_server_storage import (
    ReviewStoreDb,
    ReviewStoreDbError,
    TokenInfo,
    TokenRequestError,
)

if TYPE_CHECKING:
    from artifactize.entrypoints.store_server import StoreServer

NOT_REVOKED = "-"
NOT_LOOPBACK_WARNING = (
    "warning: {address} is not a loopback address; the review store speaks plain "
    "HTTP, so tokens and records cross the network unencrypted. "
    "Put a TLS proxy in front of it."
)
DATABASE_ENV = "ARTIFACTIZE_STORE_DATABASE"

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        envvar=DATABASE_ENV,
        show_envvar=True,
        help="SQLAlchemy URL of the store: sqlite:///PATH or "
        "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE "
        "(default: review-store.sqlite in the state directory).",
    ),
]

server_app = ConventionalTyper(
    help="Run the team review store and manage its tokens.", no_args_is_help=True
)
token_app = ConventionalTyper(
    help="Issue, list and revoke review store tokens.", no_args_is_help=True
)
server_app.add_typer(token_app, name="token")


def _open(*, create: bool, database: str | None) -> ReviewStoreDb | None:
    with _store_errors():
        return CliContext.services().review_store_db(create=create, database=database)


@contextmanager
def _store_errors() -> Iterator[None]:
    """Storage and token-rule failures become exit 2 with their message."""
    try:
        yield
    except (ReviewStoreDbError, TokenRequestError) as exc:
        raise CommandError(str(exc)) from None


@server_app.command("run")
def run(
    listen: Annotated[
        str, option("--listen", "HOST:PORT to serve plain HTTP on; port 0 picks a free port.")
    ] = DEFAULT_LISTEN,
    database: DatabaseOption = None,
    lease_seconds: Annotated[
        int,
        option(
            "--lease-seconds",
            f"How long a review lease lives unless its holder renews it "
            f"({LEASE_SECONDS_MIN}-{LEASE_SECONDS_MAX}): a dead holder's lease lapses "
            "within this time.",
        ),
    ] = LEASE_SECONDS_DEFAULT,
) -> None:
    """Serve the review store until Ctrl-C or SIGTERM (then stop gracefully).

    Every request is logged on stderr as one JSON line (method, path, status, durationMs,
    principal; never a token)."""
    try:
        address = parse_listen(listen)
        check_lease_seconds(lease_seconds)
    except ListenError as exc:
        raise CommandError(str(exc)) from None
    except ValueError as exc:
        raise CommandError(f"Invalid --lease-seconds: {exc}") from None
    services = CliContext.services()
    where = (
        f"state: {services.state_dir()}"
        if database is None
        else f"database: {services.review_store_location(database)}"
    )
    store = _open(create=True, database=database)
    assert store is not None
    try:
        _serve_store(store, address, where, lease_seconds)
    finally:
        store.close()


def _serve_store(store: ReviewStoreDb, address: Any, where: str, lease_seconds: int) -> None:
    """Bind, say where on stderr, serve until a signal (then stop gracefully)."""
    import anyio

    from artifactize.entrypoints import store_server as http

    if not address.is_loopback:
        typer.echo(NOT_LOOPBACK_WARNING.format(address=address), err=True)
    try:
        sock = bind(address)
    except OSError as exc:
        raise CommandError(f"Cannot listen on {address}: {exc.strerror}") from None

    def ready(server: StoreServer) -> None:
        typer.echo(f"Review store listening on {server.url} ({where})", err=True)

    def log(line: str) -> None:
        typer.echo(line, err=True)

    now = CliContext.container.stored_now()
    app = http.create_app(store, now=now, lease_seconds=lease_seconds, log=log)
    anyio.run(http.serve_until_signal, http.StoreServer(app, sock), ready)


@token_app.command("add")
def token_add(
    name: Annotated[str, argument("1-64 characters of A-Z a-z 0-9 . _ -")],
    scopes: Annotated[str, option("--scopes", "Comma-separated: read, publish, human.")],
    database: DatabaseOption = None,
) -> None:
    """Issue a token and print it once (only its SHA-256 is kept)."""
    wanted = [scope.strip() for scope in scopes.split(",")]
    if any(not scope for scope in wanted):
        raise CommandError(f"Invalid --scopes {scopes!r}: give scope names separated by commas.")
    store = _open(create=True, database=database)
    assert store is not None
    try:
        with _store_errors():
            issued = store.add_token(name, wanted)
    finally:
        store.close()
    if CliContext.options.json:
        _emit_json(
            {
                "name": issued.name,
                "scopes": list(issued.scopes),
                "token": issued.token,
                "createdAt": issued.created_at,
            }
        )
        return
    typer.echo(issued.token)
    typer.echo(
        f"Token {issued.name} ({', '.join(issued.scopes)}) created; it is shown only this once.",
        err=True,
    )


def _token_view(info: TokenInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "scopes": list(info.scopes),
        "createdAt": info.created_at,
        "revokedAt": info.revoked_at,
    }


@token_app.command("list")
def token_list(database: DatabaseOption = None) -> None:
    """Every token with its scopes and dates (never the token itself)."""
    store = _open(create=False, database=database)
    try:
        with _store_errors():
            tokens = store.list_tokens() if store is not None else []
    finally:
        if store is not None:
            store.close()
    if CliContext.options.json:
        _emit_json([_token_view(info) for info in tokens])
        return
    if not tokens:
        typer.echo("No tokens.")
        return
    rows = [("NAME", "SCOPES", "CREATED", "REVOKED")] + [
        (t.name, ",".join(t.scopes), t.created_at, t.revoked_at or NOT_REVOKED) for t in tokens
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        typer.echo("  ".join([*cells, row[3]]))


@token_app.command("revoke")
def token_revoke(
    name: Annotated[str, argument("The token's name.")],
    purge: Annotated[
        bool, option("--purge", "Also delete every record this token published.")
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Revoke a token at once; repeating it keeps the first revocation time."""
    store = _open(create=False, database=database)
    if store is None:
        raise CommandError(f"No token is named {name!r}.")
    try:
        with _store_errors():
            revocation = store.revoke_token(name, purge=purge)
    finally:
        store.close()
    _emit_json(
        {
            "name": revocation.name,
            "revokedAt": revocation.revoked_at,
            "purgedEntries": revocation.purged_entries,
        }
    )


@server_app.command("rm")
def remove(
    key: Annotated[str, argument("A reuse key (64 lowercase hex).")],
    database: DatabaseOption = None,
) -> None:
    """Delete every record of KEY from the store."""
    if not is_reuse_key(key):
        raise CommandError(f"Invalid key {key!r}: a reuse key is 64 lowercase hex characters.")
    store = _open(create=False, database=database)
    try:
        with _store_errors():
            removed = store.remove(key) if store is not None else False
    finally:
        if store is not None:
            store.close()
    _emit_json({"removed": removed})
