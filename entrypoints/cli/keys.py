"""``artifactize login BACKEND`` and ``logout BACKEND``: save or remove an API key.

The key is read from stdin, never from an argument (an argument lands in the shell's
history and the process table): piped in, or typed at a prompt that does not echo it when
stdin is a terminal. It is saved in the OS keyring, else in a private file of the state
home, for the endpoint given (``--base-url``) or the backend's default; the output says
which store and which endpoint, never the key. Exit 0 when done, 2 on bad input.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.options import argument, option
from artifactize.entrypoints.cli.output import emit_json
from artifactize.entrypoints.errors import CommandError

BackendArgument = Annotated[str, argument("openai, anthropic or openai-chat.")]
BaseUrlOption = Annotated[
    str | None, option("--base-url", "The endpoint the key is for (default: the backend's own).")
]


def _read_key() -> str:
    """The key from stdin: a no-echo prompt on a terminal, else all of stdin."""
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass("API key (not shown): ")
    return sys.stdin.read()


def login_command(
    backend: BackendArgument,
    base_url: BaseUrlOption = None,
    key_argument: Annotated[
        list[str] | None, typer.Argument(hidden=True, show_default=False)
    ] = None,
) -> None:
    """Save an API key read from stdin for a backend (and --base-url endpoint)."""
    from artifactize.domain.use_cases.api_keys import ApiKeyError
    from artifactize.ports.secrets import SecretStoreError

    if key_argument:  # refused without echoing it, as the usage error would
        raise CommandError("login reads the API key from stdin, never from an argument.")
    try:
        change = CliContext.services().api_keys().login(backend, base_url, _read_key())
    except (ApiKeyError, SecretStoreError) as exc:
        raise CommandError(str(exc)) from None
    if CliContext.options.json:
        emit_json(change.to_json())
    else:
        typer.echo(f"Saved the {backend} key for {change.base_url} in the {change.store} store.")


def logout_command(backend: BackendArgument, base_url: BaseUrlOption = None) -> None:
    """Remove the API key saved for a backend (and --base-url endpoint)."""
    from artifactize.domain.use_cases.api_keys import ApiKeyError
    from artifactize.ports.secrets import SecretStoreError

    try:
        change = CliContext.services().api_keys().logout(backend, base_url)
    except (ApiKeyError, SecretStoreError) as exc:
        raise CommandError(str(exc)) from None
    if CliContext.options.json:
        emit_json(change.to_json())
    elif change.changed:
        typer.echo(
            f"Removed the {backend} key for {change.base_url} from the {change.store} store."
        )
    else:
        typer.echo(f"No {backend} key was saved for {change.base_url} ({change.store} store).")
