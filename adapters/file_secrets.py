"""``SecretStore`` in a private file of the state home, for a machine without a usable OS
keyring (a headless Linux): ``api-keys.json``, mode 0600 in a 0700 folder, written whole
(``PrivateFiles``), under a lock so two ``login`` at once do not lose one.
"""

from __future__ import annotations

import json

from artifactize.ports.private_files import PrivateFileError, PrivateFiles
from artifactize.ports.secrets import FILE_STORE, SecretStoreError

KEYS_FILE = "api-keys.json"
KEYS_LOCK = "api-keys.lock"
MAX_KEYS_FILE_BYTES = 1024 * 1024
"""A keys file larger than this is not ours."""


class FileSecrets:
    store = FILE_STORE

    def __init__(self, state_dir: str, private_files: PrivateFiles) -> None:
        self._state_dir = state_dir
        self._files = private_files

    def _load(self) -> dict[str, str]:
        try:
            data = self._files.read(self._state_dir, [KEYS_FILE], MAX_KEYS_FILE_BYTES, private=True)
        except PrivateFileError as exc:
            raise SecretStoreError(str(exc)) from None
        if data is None:
            return {}
        try:
            keys = json.loads(data)
        except ValueError:
            keys = None
        if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
            raise SecretStoreError(
                f"{self._state_dir}/{KEYS_FILE} is not a saved-keys file "
                "(a JSON object of strings); remove it and log in again."
            )
        return keys

    def _save(self, keys: dict[str, str]) -> None:
        try:
            self._files.write(self._state_dir, [KEYS_FILE], json.dumps(keys).encode())
        except PrivateFileError as exc:
            raise SecretStoreError(str(exc)) from None

    def get(self, account: str) -> str | None:
        return self._load().get(account)

    def put(self, account: str, secret: str) -> None:
        try:
            with self._files.locked(self._state_dir, [KEYS_LOCK]):
                self._save({**self._load(), account: secret})
        except PrivateFileError as exc:
            raise SecretStoreError(str(exc)) from None

    def delete(self, account: str) -> bool:
        try:
            with self._files.locked(self._state_dir, [KEYS_LOCK]):
                keys = self._load()
                if keys.pop(account, None) is None:
                    return False
                self._save(keys)
                return True
        except PrivateFileError as exc:
            raise SecretStoreError(str(exc)) from None
