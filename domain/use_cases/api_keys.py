"""``artifactize login`` / ``logout``: save or remove an API key for a backend's endpoint.

The key is saved under its backend and the endpoint it is for (``key_account``), in the
store the composition root chose (the OS keyring, else a private file); the result says
which store and which endpoint, never the key. The endpoint is resolved as a run resolves
it (``ModelBackends.endpoint``), so the key saved is the key a run at that endpoint finds.
"""

from __future__ import annotations

from dataclasses import dataclass

from artifactize.ports.model import BackendUnavailable, ModelBackends
from artifactize.ports.secrets import SecretStore, key_account

MAX_KEY_CHARS = 4096
"""An API key longer than this is not a key (pasted file, wrong input)."""


class ApiKeyError(Exception):
    """The key or the backend given cannot be saved; the message never holds the key."""


@dataclass(frozen=True)
class KeyChange:
    backend: str
    base_url: str
    store: str
    changed: bool  # saved, or (logout) there was one to remove

    def to_json(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "baseUrl": self.base_url,
            "store": self.store,
            "changed": self.changed,
        }


def checked_key(text: str) -> str:
    """The key without surrounding whitespace; refused when empty, too long or not printable
    ASCII (it travels in an HTTP header)."""
    key = text.strip()
    if not key:
        raise ApiKeyError("No API key on stdin: pipe the key in (e.g. `printenv MY_KEY | ...`).")
    if len(key) > MAX_KEY_CHARS:
        raise ApiKeyError(f"The API key on stdin is longer than {MAX_KEY_CHARS} characters.")
    if any(not (0x21 <= ord(char) <= 0x7E) for char in key):
        raise ApiKeyError(
            "The API key on stdin contains characters that cannot be sent in an HTTP header "
            "(only printable ASCII without spaces is allowed)."
        )
    return key


class ApiKeys:
    def __init__(self, backends: ModelBackends, secrets: SecretStore) -> None:
        self._backends = backends
        self._secrets = secrets

    def _endpoint(self, backend: str, base_url: str | None) -> str:
        try:
            return self._backends.endpoint(backend, base_url).base_url
        except BackendUnavailable as exc:
            raise ApiKeyError(str(exc)) from None

    def login(self, backend: str, base_url: str | None, text: str) -> KeyChange:
        key = checked_key(text)
        url = self._endpoint(backend, base_url)
        self._secrets.put(key_account(backend, url), key)
        return KeyChange(backend, url, self._secrets.store, changed=True)

    def logout(self, backend: str, base_url: str | None) -> KeyChange:
        url = self._endpoint(backend, base_url)
        removed = self._secrets.delete(key_account(backend, url))
        return KeyChange(backend, url, self._secrets.store, changed=removed)
