"""``SecretStore`` in the OS keyring through the ``keyring`` package (macOS Keychain,
Windows Credential Locker, Secret Service on a Linux desktop).

A headless Linux has no usable backend: keyring then selects its fail (priority 0) or null
(negative priority) backend, and ``keyring_usable`` says so from keyring's public API, so
the composition root falls back to the private file.
"""

from __future__ import annotations

from artifactize.ports.secrets import KEYRING_STORE, SecretStoreError

SERVICE = "artifactize"


def keyring_usable() -> bool:
    """Whether the keyring keyring selected can hold a secret (its priority is positive)."""
    import keyring

    try:
        return float(keyring.get_keyring().priority) > 0
    except Exception:  # a broken keyring configuration is no keyring
        return False


class KeyringSecrets:
    store = KEYRING_STORE

    def get(self, account: str) -> str | None:
        import keyring
        from keyring.errors import KeyringError

        try:
            return keyring.get_password(SERVICE, account)
        except KeyringError as exc:
            raise SecretStoreError(
                f"The OS keyring could not be read: {type(exc).__name__}."
            ) from None

    def put(self, account: str, secret: str) -> None:
        import keyring
        from keyring.errors import KeyringError

        try:
            keyring.set_password(SERVICE, account, secret)
        except KeyringError as exc:
            raise SecretStoreError(
                f"The OS keyring refused the key: {type(exc).__name__}."
            ) from None

    def delete(self, account: str) -> bool:
        import keyring
        from keyring.errors import KeyringError, PasswordDeleteError

        try:
            keyring.delete_password(SERVICE, account)
        except PasswordDeleteError:
            return False
        except KeyringError as exc:
            raise SecretStoreError(
                f"The OS keyring could not be changed: {type(exc).__name__}."
            ) from None
        return True
