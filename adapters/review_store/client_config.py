"""Where the remote review store is configured: ``<state>/remote.json``, a stored token,
and three environment variables. Never from project declarations: a repository under review
must not be able to send its verdicts, or its reviewers' token, anywhere.

- ``<state>/remote.json``: ``{"url": URL, "share": "summary"|"full"}``, nothing else; a
  regular file (no symlink) of at most 64 KiB.
- ``<state>/auth/remote-token.json``: ``{"origin": ORIGIN, "token": TOKEN}``; the directory
  is 0700, the file 0600 with a single link, neither is ever followed through a symlink. The
  token is bound to the origin it was issued for: used with another origin it is refused.
- ``ARTIFACTIZE_REMOTE`` (a URL, or ``off`` to use no store at all), ``ARTIFACTIZE_REMOTE_TOKEN``
  and ``ARTIFACTIZE_REMOTE_SHARE`` override the files; an empty variable counts as unset.

The environment is given to the constructor (the composition root passes ``os.environ``);
nothing here reads ``os.environ``. So are the platform's private files (``PrivateFiles``): how
a file is opened without following links and kept private differs between POSIX and Windows.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from artifactize.adapters.review_store.urls import (
    check_share,
    check_token,
    normalize_store_url,
    url_origin,
)
from artifactize.kernel.bounded_json import read_json
from artifactize.ports.private_files import PrivateFileError, PrivateFiles
from artifactize.ports.review_store import RemoteConfigError, RemoteSettings, RemoteStore

ENV_URL = "ARTIFACTIZE_REMOTE"
ENV_TOKEN = "ARTIFACTIZE_REMOTE_TOKEN"
ENV_SHARE = "ARTIFACTIZE_REMOTE_SHARE"
OFF = "off"
DEFAULT_SHARE = "summary"
CONFIG_FILE = "remote.json"
CONFIG_FIELDS = ("url", "share")
TOKEN_DIR = "auth"
TOKEN_FILE = "remote-token.json"
TOKEN_FIELDS = ("origin", "token")
CONFIG_MAX_BYTES = 64 * 1024
"""Both files are a few hundred bytes; anything larger is not ours."""


@contextlib.contextmanager
def _config_errors() -> Iterator[None]:
    """A file that cannot be used is a configuration error (it names the path and rule)."""
    try:
        yield
    except PrivateFileError as exc:
        raise RemoteConfigError(str(exc)) from None


class RemoteConfigStores:
    """``RemoteStores`` over the state directory's files and the given environment."""

    def __init__(self, environment: Mapping[str, str], *, private_files: PrivateFiles) -> None:
        self._environment = environment
        self._files = private_files

    def _env(self, name: str) -> str | None:
        value = self._environment.get(name, "")
        return value or None

    def check_login(self, url: str, share: str) -> str:
        normalized = normalize_store_url(url, "The store URL")
        check_share(share, "--share")
        return normalized

    def check_token(self, token: str, source: str) -> str:
        return check_token(token, source)

    def switched_off(self) -> str | None:
        return f"{ENV_URL}={OFF}" if self._env(ENV_URL) == OFF else None

    def settings(self, state_dir: str) -> RemoteSettings | None:
        env_url = self._env(ENV_URL)
        if env_url == OFF:
            return None
        config = self._read_config(state_dir)
        if env_url is not None:
            url = normalize_store_url(env_url, ENV_URL)
        elif config is not None:
            url = config["url"]
        else:
            return None
        env_share = self._env(ENV_SHARE)
        if env_share is not None:
            share = check_share(env_share, ENV_SHARE)
        else:
            share = config["share"] if config is not None else DEFAULT_SHARE
        env_token = self._env(ENV_TOKEN)
        if env_token is not None:
            return RemoteSettings(url, share, check_token(env_token, ENV_TOKEN), "env")
        stored = self._read_token(state_dir)
        if stored is None:
            return RemoteSettings(url, share, None, "none")
        origin, token = stored
        if origin != url_origin(url):
            raise RemoteConfigError(
                f"{_token_path(state_dir)}: the stored remote token was issued for {origin}, "
                f"not {url_origin(url)}; run `artifactize remote login {url}` to log in again."
            )
        return RemoteSettings(url, share, token, "file")

    def open(self, settings: RemoteSettings) -> RemoteStore:
        # httpx2 is imported only when a store is used, so the CLI starts fast.
        from artifactize.adapters.review_store.http_client import HttpRemoteStore

        return HttpRemoteStore(settings)

    def login(self, state_dir: str, url: str, token: str, share: str) -> RemoteSettings:
        url = normalize_store_url(url, "The store URL")
        token = check_token(token, "The token")
        share = check_share(share, "The share mode")
        token_data = _encode({"origin": url_origin(url), "token": token})
        config_data = _encode({"url": url, "share": share})
        token_dir = Path(state_dir) / TOKEN_DIR
        had_token_dir = token_dir.is_dir()
        with _config_errors():
            try:
                self._files.write(state_dir, (TOKEN_DIR, TOKEN_FILE), token_data)
                self._files.write(state_dir, (CONFIG_FILE,), config_data)
            except PrivateFileError:
                # A login that could not be saved (a full disk) leaves nothing half-made:
                # no token without its configuration, no empty auth/ folder.
                with contextlib.suppress(PrivateFileError):
                    self._files.remove(state_dir, (TOKEN_DIR, TOKEN_FILE))
                if not had_token_dir:
                    with contextlib.suppress(OSError):
                        token_dir.rmdir()  # only if empty
                raise
        return RemoteSettings(url, share, token, "file")

    def logout(self, state_dir: str) -> bool:
        with _config_errors():
            removed = self._files.remove(state_dir, (TOKEN_DIR, TOKEN_FILE))
            return self._files.remove(state_dir, (CONFIG_FILE,)) or removed

    def _read_object(
        self, state_dir: str, names: tuple[str, ...], fields: tuple[str, ...], *, private: bool
    ) -> dict[str, Any] | None:
        """The JSON object with exactly ``fields`` in the file ``names`` below the state
        directory, or None when the directory or the file is missing."""
        path = str(Path(state_dir, *names))
        with _config_errors():
            data = self._files.read(state_dir, names, CONFIG_MAX_BYTES, private=private)
        return None if data is None else _load_object(data, path, fields)

    def _read_config(self, state_dir: str) -> dict[str, str] | None:
        """The validated ``remote.json`` (``url`` normalized), or None when there is none."""
        path = _config_path(state_dir)
        value = self._read_object(state_dir, (CONFIG_FILE,), CONFIG_FIELDS, private=False)
        if value is None:
            return None
        return {
            "url": normalize_store_url(value["url"], f"{path}: field `url`"),
            "share": check_share(value["share"], f"{path}: field `share`"),
        }

    def _read_token(self, state_dir: str) -> tuple[str, str] | None:
        """``(origin, token)`` of the stored token, or None when there is none."""
        path = _token_path(state_dir)
        names = (TOKEN_DIR, TOKEN_FILE)
        value = self._read_object(state_dir, names, TOKEN_FIELDS, private=True)
        if value is None:
            return None
        token = check_token(value["token"], f"{path}: field `token`")
        origin = url_origin(normalize_store_url(value["origin"], f"{path}: field `origin`"))
        return origin, token


def _config_path(state_dir: str) -> str:
    return str(Path(state_dir) / CONFIG_FILE)


def _token_path(state_dir: str) -> str:
    return str(Path(state_dir) / TOKEN_DIR / TOKEN_FILE)


def _encode(data: Mapping[str, str]) -> bytes:
    return (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def _load_object(data: bytes, path: str, fields: tuple[str, ...]) -> dict[str, Any]:
    """A JSON object with exactly ``fields``, each a string."""
    try:
        value = read_json(data)
    except (UnicodeDecodeError, ValueError):
        raise RemoteConfigError(f"{path}: is not valid UTF-8 JSON.") from None
    if not isinstance(value, dict):
        raise RemoteConfigError(f"{path}: must be a JSON object.")
    extra = sorted(set(value) - set(fields))
    if extra:
        raise RemoteConfigError(
            f"{path}: unknown field {json.dumps(extra[0][:64])}; only {', '.join(fields)} "
            "are allowed."
        )
    for name in fields:
        if not isinstance(value.get(name), str):
            raise RemoteConfigError(f"{path}: field `{name}` must be a string.")
    return value
