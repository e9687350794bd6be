"""The keyring adapter against the real ``keyring`` library: its backend discovery probes the
system's libraries (``ctypes.util.find_library`` runs ``ldconfig``), so these tests start a
process and live here, not in tests/unit."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.process


def test_keyring_fail_backend_is_not_usable() -> None:
    import keyring
    from keyring.backends import fail

    from artifactize.adapters.keyring_secrets import keyring_usable

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())  # type: ignore[no-untyped-call]
    try:
        assert keyring_usable() is False
    finally:
        keyring.set_keyring(before)


def test_keyring_secrets_round_trip_through_a_usable_keyring() -> None:
    import keyring
    from keyring.backend import KeyringBackend
    from keyring.errors import PasswordDeleteError

    from artifactize.adapters.keyring_secrets import SERVICE, KeyringSecrets, keyring_usable

    class Memory(KeyringBackend):
        priority = 1

        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.items: dict[tuple[str, str], str] = {}

        def get_password(self, service: str, username: str) -> str | None:
            return self.items.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            self.items[(service, username)] = password

        def delete_password(self, service: str, username: str) -> None:
            if self.items.pop((service, username), None) is None:
                raise PasswordDeleteError(username)

    before = keyring.get_keyring()
    memory = Memory()
    keyring.set_keyring(memory)
    try:
        assert keyring_usable() is True
        secrets = KeyringSecrets()
        secrets.put("openai x", "sk-1")
        assert (secrets.get("openai x"), memory.items) == ("sk-1", {(SERVICE, "openai x"): "sk-1"})
        assert (secrets.delete("openai x"), secrets.delete("openai x")) == (True, False)
        assert secrets.get("openai x") is None
    finally:
        keyring.set_keyring(before)
