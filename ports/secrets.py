"""Saved API keys (``artifactize login``): a small store of secrets by account name.

The OS keyring when the machine has a usable one, else a private (0600) file in the state
home; the composition root chooses (``entrypoints/container.py``). ``store`` names which,
so the command and ``doctor`` can say where a key lives. A secret's value is never in a
message of ``SecretStoreError``.
"""

from __future__ import annotations

from typing import Protocol

KEYRING_STORE = "keyring"
FILE_STORE = "file"
ENV_SOURCE = "env"


class SecretStoreError(Exception):
    """The store could not be read or written; the message names the store, never a key."""


def key_account(backend: str, base_url: str) -> str:
    """The account a backend's key is saved under: one per backend and endpoint, so a key
    saved for one endpoint is never sent to another."""
    return f"{backend} {base_url.rstrip('/')}"


class SecretStore(Protocol):
    @property
    def store(self) -> str:
        """``"keyring"`` or ``"file"``."""
        ...

    def get(self, account: str) -> str | None:
        """The secret saved for ``account``, None when there is none."""
        ...

    def put(self, account: str, secret: str) -> None:
        """Save ``secret`` for ``account``, replacing any earlier one."""
        ...

    def delete(self, account: str) -> bool:
        """Remove the secret for ``account``; False when there was none."""
        ...
