"""The remote review store client on 127.0.0.1 (reviews-and-store.md §5.3-5.6).

The HTTP adapter against a stdlib fake (every fail-open and fail-closed class, chunking,
limits, the token kept secret), the configuration adapter on real files (URL rules,
``remote.json``, the private token file, origin binding), the ``remote`` commands through
``entrypoints.cli.app.main``, and one round trip through the real store server.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import anyio
import pytest
from dependency_injector import providers

from artifactize.adapters.posix.private_files import PosixPrivateFiles
from artifactize.adapters.review_store import http_client as remote_store_http
from artifactize.adapters.review_store.client_config import CONFIG_MAX_BYTES, RemoteConfigStores
from artifactize.adapters.review_store.http_client import (
    ERROR_BODY_MAX_BYTES,
    MESSAGE_MAX_CHARS,
    NO_TOKEN_MESSAGE,
    HttpRemoteStore,
)
from artifactize.adapters.review_store.urls import normalize_store_url
from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.domain.reviews.remote.records import (
    build_record,
    mirror_execution,
    validate_record,
)
from artifactize.entrypoints.bootstrap import Container
from artifactize.entrypoints.cli.progress import CLEAR_LINE
from artifactize.kernel.document_codec import execution_from_json
from artifactize.ports.documents import Execution
from artifactize.ports.review_store import (
    LOOKUP_KEYS_MAX,
    PUBLISH_BATCH_MAX_ENTRIES,
    TOKEN_MAX_CHARS,
    FailureMode,
    RemoteConfigError,
    RemoteFailure,
    RemoteSettings,
)
from artifactize.ports.state import ClaimOutcome, ExecutionRecord
from artifactize.ports.statuses import ExecutionStatus
from tests.support.cli import run_cli
from tests.support.fake_review_store import Canned, FakeReviewStore, fake_store
from tests.support.pty_terminal import run_on_pty
from tests.support.remote_records import KINDS, execution, key_of

__all__ = ["fake_store"]  # the fixture

TOKEN = "tok-a"
SERVED_LOG_SECONDS = 30.0  # a bound for a hung server, only ever waited out by a failure
SECRET = "azt_SECRET-token-0123456789"


def _stores(environment: dict[str, str]) -> RemoteConfigStores:
    """The client configuration over this platform's (POSIX) private files."""
    return RemoteConfigStores(environment, private_files=PosixPrivateFiles())


def settings(url: str, token: str | None = TOKEN, share: str = "summary") -> RemoteSettings:
    return RemoteSettings(url, share, token, "env" if token else "none")


def call(url: str, method: str, *args: Any, token: str | None = TOKEN) -> Any:
    async def main() -> Any:
        store = HttpRemoteStore(settings(url, token))
        try:
            return await getattr(store, method)(*args)
        finally:
            await store.aclose()

    return anyio.run(main)


def failure(
    url: str, method: str = "whoami", *args: Any, token: str | None = TOKEN
) -> RemoteFailure:
    with pytest.raises(RemoteFailure) as caught:
        call(url, method, *args, token=token)
    problem = caught.value
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    if token:
        assert token not in problem.message and token not in str(problem)
    return problem


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- HTTP: the happy paths --------------------------------------------------------------


def test_whoami_lookup_publish_round_trip(fake_store: FakeReviewStore) -> None:
    principal = call(fake_store.url, "whoami")
    assert (principal.name, principal.scopes) == ("alice", ("read", "publish", "human"))
    record = build_record(execution(), KINDS, "summary")
    assert call(fake_store.url, "publish", record["key"], record) is True
    assert call(fake_store.url, "publish", record["key"], record) is False
    [entry] = call(fake_store.url, "lookup", [record["key"], "f" * 64])
    checked = validate_record(entry)
    assert not isinstance(checked, str), checked
    assert checked.publisher == "alice"
    mirror = mirror_execution(checked, fake_store.url)
    assert mirror["origin"]["publisher"] == "alice"
    seen = fake_store.seen[0]
    assert seen.headers["authorization"] == f"Bearer {TOKEN}"
    assert [s.path for s in fake_store.seen] == [
        "/v1/whoami",
        f"/v1/entries/{record['key']}",
        f"/v1/entries/{record['key']}",
        "/v1/lookup",
    ]


def test_a_store_url_with_a_path_prefix(fake_store: FakeReviewStore) -> None:
    fake_store.script(Canned(body={"principal": "p", "scopes": []}))
    call(fake_store.url + "team/", "whoami")
    assert fake_store.seen[0].path == "/team/v1/whoami"


@pytest.mark.parametrize(
    ("count", "sizes"), [(LOOKUP_KEYS_MAX, [1000]), (LOOKUP_KEYS_MAX + 1, [1000, 1])]
)
def test_lookup_is_chunked(fake_store: FakeReviewStore, count: int, sizes: list[int]) -> None:
    keys = [f"{i:064x}" for i in range(count)]
    assert call(fake_store.url, "lookup", keys) == []
    assert [len(s.body["keys"]) for s in fake_store.seen] == sizes
    assert [k for s in fake_store.seen for k in s.body["keys"]] == keys


def test_lookup_of_nothing_asks_nothing(fake_store: FakeReviewStore) -> None:
    assert call(fake_store.url, "lookup", []) == []
    assert fake_store.seen == []


# --- HTTP: fail open ------------------------------------------------------------------------


def test_connection_refused_fails_open() -> None:
    problem = failure(f"http://127.0.0.1:{closed_port()}/")
    assert problem.mode is FailureMode.OPEN and problem.status is None
    assert "is unreachable" in problem.message


def test_a_timeout_fails_open(fake_store: FakeReviewStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_store_http, "TOTAL_TIMEOUT_SECONDS", 0.2)
    fake_store.script(Canned(delay=1.0, body={"principal": "p", "scopes": []}))
    problem = failure(fake_store.url)
    assert problem.mode is FailureMode.OPEN and problem.timed_out
    assert "did not answer within 0.2 s" in problem.message


def test_a_dropped_connection_fails_open(fake_store: FakeReviewStore) -> None:
    fake_store.script(Canned(action="disconnect"))
    assert failure(fake_store.url).mode is FailureMode.OPEN


@pytest.mark.parametrize("status", [500, 502, 503, 599])
def test_5xx_fails_open(fake_store: FakeReviewStore, status: int) -> None:
    fake_store.script(Canned(status=status, body={"error": "database is locked"}))
    problem = failure(fake_store.url)
    assert (problem.mode, problem.status, problem.timed_out) == (FailureMode.OPEN, status, False)
    assert problem.message == f"The remote store failed (HTTP {status}): database is locked"


# --- HTTP: fail closed ------------------------------------------------------------------------


def test_401_without_text_is_the_default_message(fake_store: FakeReviewStore) -> None:
    fake_store.script(Canned(status=401, raw=b""))
    problem = failure(fake_store.url)
    assert (problem.mode, problem.status) == (FailureMode.CLOSED, 401)
    assert problem.message == "The remote store rejected the token (HTTP 401)."


def test_401_with_the_stores_text(fake_store: FakeReviewStore) -> None:
    problem = failure(fake_store.url, token="tok-unknown")
    assert problem.mode is FailureMode.CLOSED
    assert (
        problem.message
        == "The remote store rejected the token (HTTP 401): Missing or unknown token."
    )


def test_401_without_a_token_says_how_to_log_in(fake_store: FakeReviewStore) -> None:
    problem = failure(fake_store.url, token=None)
    assert (problem.mode, problem.message) == (FailureMode.CLOSED, NO_TOKEN_MESSAGE)
    assert "authorization" not in fake_store.seen[0].headers


def test_403_shows_the_missing_scope(fake_store: FakeReviewStore) -> None:
    fake_store.tokens["tok-r"] = ("reader", ("read",))
    record = build_record(execution(), KINDS, "summary")
    problem = failure(fake_store.url, "publish", record["key"], record, token="tok-r")
    assert (problem.mode, problem.status) == (FailureMode.CLOSED, 403)
    assert problem.message.endswith("(HTTP 403): This token lacks the publish scope.")


@pytest.mark.parametrize("status", [400, 404, 410, 413, 429])
def test_other_4xx_fail_closed(fake_store: FakeReviewStore, status: int) -> None:
    fake_store.script(Canned(status=status, body={"error": "Upgrade artifactize."}))
    problem = failure(fake_store.url)
    assert (problem.mode, problem.status) == (FailureMode.CLOSED, status)
    assert (
        problem.message
        == f"The remote store refused the request (HTTP {status}): Upgrade artifactize."
    )


def test_a_redirect_is_not_followed(fake_store: FakeReviewStore) -> None:
    fake_store.script(Canned(status=302, raw=b"", headers={"location": "http://127.0.0.1:1/"}))
    problem = failure(fake_store.url)
    assert problem.mode is FailureMode.CLOSED and "redirect (HTTP 302)" in problem.message
    assert len(fake_store.seen) == 1


@pytest.mark.parametrize(
    ("method", "body"),
    [
        ("whoami", b"not json"),
        ("whoami", b"[1]"),
        ("whoami", b'{"principal": 1, "scopes": []}'),
        ("whoami", b'{"principal": "p", "scopes": "read"}'),
        ("whoami", b'{"principal": "p", "scopes": [], "x": NaN}'),
        ("lookup", b'{"entries": {}}'),
        ("lookup", b'{"entries": [1]}'),
        ("publish", b'{"created": "yes"}'),
        ("publish", b"\xff\xfe"),
    ],
)
def test_invalid_answers_fail_closed(fake_store: FakeReviewStore, method: str, body: bytes) -> None:
    fake_store.script(Canned(raw=body))
    arguments: dict[str, list[Any]] = {
        "whoami": [],
        "lookup": [["a" * 64]],
        "publish": ["a" * 64, {}],
    }
    args = arguments[method]
    problem = failure(fake_store.url, method, *args)
    assert problem.mode is FailureMode.CLOSED
    assert "invalid answer" in problem.message


def test_tls_failure_fails_closed(fake_store: FakeReviewStore) -> None:
    """A plain-HTTP server answering a TLS handshake: the handshake fails."""
    url = fake_store.url.replace("http://", "https://")
    problem = failure(url)
    assert problem.mode is FailureMode.CLOSED
    assert problem.message.startswith("TLS with the remote store failed: ")


def test_a_key_that_is_not_a_key_is_never_sent(fake_store: FakeReviewStore) -> None:
    problem = failure(fake_store.url, "publish", "../whoami", {})
    assert problem.mode is FailureMode.CLOSED and fake_store.seen == []


def test_answer_size_at_the_limit_and_one_past(
    fake_store: FakeReviewStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = json.dumps({"principal": "p", "scopes": [], "pad": ""}).encode()
    monkeypatch.setattr(remote_store_http, "ANSWER_MAX_BYTES", len(body))
    fake_store.script(Canned(raw=body), Canned(raw=body + b" "))
    assert call(fake_store.url, "whoami").name == "p"
    assert "exceeds" in failure(fake_store.url).message


def test_error_body_at_the_limit_and_one_past(fake_store: FakeReviewStore) -> None:
    def body(size: int) -> bytes:
        text = json.dumps({"error": "E"}).encode()
        return text[:-1] + b" " * (size - len(text)) + b"}"

    fake_store.script(Canned(status=400, raw=body(ERROR_BODY_MAX_BYTES)))
    assert failure(fake_store.url).message.endswith("(HTTP 400): E")
    fake_store.script(Canned(status=400, raw=body(ERROR_BODY_MAX_BYTES + 1)))
    assert failure(fake_store.url).message.endswith("(HTTP 400).")


def test_the_stores_text_is_cleaned_bounded_and_redacted(fake_store: FakeReviewStore) -> None:
    fake_store.tokens[SECRET] = ("ci", ("read",))
    fake_store.script(
        Canned(status=400, body={"error": f"bad \x1b[31mtoken {SECRET}\n" + "x" * 1000}),
        Canned(status=400, body={"error": "y" * MESSAGE_MAX_CHARS}),
    )
    problem = failure(fake_store.url, token=SECRET)
    assert "\x1b" not in problem.message and "\n" not in problem.message
    assert "[REDACTED]" in problem.message
    text = problem.message.split(": ", 1)[1]
    assert len(text) == MESSAGE_MAX_CHARS and text.endswith("…")
    text = failure(fake_store.url, token=SECRET).message.split(": ", 1)[1]
    assert text == "y" * MESSAGE_MAX_CHARS


def test_the_token_is_in_no_repr() -> None:
    secret_settings = settings("https://store.example/", SECRET)
    store = HttpRemoteStore(secret_settings)
    try:
        assert SECRET not in repr(secret_settings) and SECRET not in repr(store)
    finally:
        anyio.run(store.aclose)


# --- configuration: URLs and tokens -------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("https://store.example", "https://store.example/"),
        ("HTTPS://Store.Example:443/team", "https://store.example/team/"),
        ("https://store.example:8443/a/b/", "https://store.example:8443/a/b/"),
        ("http://localhost:8417", "http://localhost:8417/"),
        ("http://127.0.0.1", "http://127.0.0.1/"),
        ("http://127.255.0.9:80/x", "http://127.255.0.9/x/"),
        ("http://[::1]:8417/", "http://[::1]:8417/"),
    ],
)
def test_accepted_urls(url: str, normalized: str) -> None:
    assert normalize_store_url(url, "X") == normalized


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://store.example/", "plain http is allowed only on this machine"),
        ("http://128.0.0.1/", "plain http is allowed only on this machine"),
        ("http://[::2]/", "plain http is allowed only on this machine"),
        ("ftp://store.example/", "scheme is not https or http"),
        ("store.example", "scheme is not https or http"),
        ("https://user:hunter2@store.example/", "must not contain user info"),
        ("https://store.example/?token=hunter2", "must not contain a query"),
        ("https://store.example/?", "must not contain a query"),
        ("https://store.example/#hunter2", "must not contain a fragment"),
        ("https:///path", "has no host"),
        ("https://store.example:99999/", "not a valid URL"),
        ("https://store.example/a b", "whitespace"),
        ("https://store.example/\tx", "whitespace"),
    ],
)
def test_refused_urls_name_the_source_and_the_rule(url: str, words: str) -> None:
    with pytest.raises(RemoteConfigError) as caught:
        normalize_store_url(url, "ARTIFACTIZE_REMOTE")
    message = str(caught.value)
    assert message.startswith("ARTIFACTIZE_REMOTE must be an https:// URL")
    assert words in message and "hunter2" not in message


@pytest.mark.parametrize(
    ("token", "ok"),
    [
        ("a", True),
        ("~" * TOKEN_MAX_CHARS, True),
        ("a" * (TOKEN_MAX_CHARS + 1), False),
        ("has space", False),
        ("tab\there", False),
        ("non-ascii-é", False),
    ],
)
def test_token_rules(tmp_path: Path, token: str, ok: bool) -> None:
    stores = _stores({"ARTIFACTIZE_REMOTE": "https://s.example", "ARTIFACTIZE_REMOTE_TOKEN": token})
    if ok:
        got = stores.settings(str(tmp_path))
        assert got is not None and (got.token, got.token_source) == (token, "env")
        return
    with pytest.raises(RemoteConfigError) as caught:
        stores.settings(str(tmp_path))
    assert str(caught.value).startswith("ARTIFACTIZE_REMOTE_TOKEN ")
    assert token not in str(caught.value)


# --- configuration: sources --------------------------------------------------------------------


def write_config(state: Path, data: Any) -> Path:
    state.mkdir(parents=True, exist_ok=True)
    path = state / "remote.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_nothing_configured_is_none(tmp_path: Path) -> None:
    assert _stores({}).settings(str(tmp_path / "missing")) is None
    assert _stores({"ARTIFACTIZE_REMOTE": ""}).settings(str(tmp_path)) is None


def test_off_wins_over_everything(tmp_path: Path) -> None:
    write_config(tmp_path, {"url": "ftp://broken", "share": "x"})
    env = {"ARTIFACTIZE_REMOTE": "off", "ARTIFACTIZE_REMOTE_TOKEN": "t"}
    assert _stores(env).settings(str(tmp_path)) is None


def test_remote_json_and_environment_overrides(tmp_path: Path) -> None:
    write_config(tmp_path, {"url": "https://a.example/team", "share": "full"})
    got = _stores({}).settings(str(tmp_path))
    assert got == RemoteSettings("https://a.example/team/", "full", None, "none")
    env = {"ARTIFACTIZE_REMOTE": "https://b.example", "ARTIFACTIZE_REMOTE_SHARE": "summary"}
    got = _stores(env).settings(str(tmp_path))
    assert got == RemoteSettings("https://b.example/", "summary", None, "none")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ({"url": "https://a.example", "share": "summary", "token": "x"}, 'unknown field "token"'),
        ({"url": "https://a.example"}, "field `share` must be a string"),
        ({"url": "http://a.example", "share": "summary"}, "field `url` must be an https:// URL"),
        ({"url": "https://a.example", "share": "all"}, "field `share` must be summary or full"),
        ("[1]", "must be a JSON object"),
        ("{", "is not valid UTF-8 JSON"),
    ],
)
def test_invalid_remote_json_names_the_file(tmp_path: Path, content: Any, words: str) -> None:
    path = write_config(tmp_path, content)
    with pytest.raises(RemoteConfigError) as caught:
        _stores({}).settings(str(tmp_path))
    assert str(caught.value).startswith(str(path)) and words in str(caught.value)


def test_invalid_share_variable(tmp_path: Path) -> None:
    env = {"ARTIFACTIZE_REMOTE": "https://a.example", "ARTIFACTIZE_REMOTE_SHARE": "everything"}
    with pytest.raises(RemoteConfigError, match="ARTIFACTIZE_REMOTE_SHARE must be summary or full"):
        _stores(env).settings(str(tmp_path))


def test_remote_json_size_at_the_limit_and_one_past(tmp_path: Path) -> None:
    text = json.dumps({"url": "https://a.example", "share": "full"})
    write_config(tmp_path, text + " " * (CONFIG_MAX_BYTES - len(text)))
    assert _stores({}).settings(str(tmp_path)) is not None
    write_config(tmp_path, text + " " * (CONFIG_MAX_BYTES + 1 - len(text)))
    with pytest.raises(RemoteConfigError, match=f"larger than {CONFIG_MAX_BYTES} bytes"):
        _stores({}).settings(str(tmp_path))


@pytest.mark.parametrize("kind", ["symlink", "directory", "fifo"])
def test_remote_json_must_be_a_regular_file(tmp_path: Path, kind: str) -> None:
    real = write_config(tmp_path / "elsewhere", {"url": "https://a.example", "share": "full"})
    path = tmp_path / "remote.json"
    if kind == "symlink":
        path.symlink_to(real)
    elif kind == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)
    with pytest.raises(RemoteConfigError) as caught:
        _stores({}).settings(str(tmp_path))
    assert str(caught.value).startswith(str(path))


# --- configuration: the stored token ------------------------------------------------------------


def token_file(state: Path) -> Path:
    return state / "auth" / "remote-token.json"


def test_login_stores_a_private_token_bound_to_the_origin(tmp_path: Path) -> None:
    state = tmp_path / "state"
    stores = _stores({})
    got = stores.login(str(state), "https://Store.example/team", SECRET, "full")
    assert got == RemoteSettings("https://store.example/team/", "full", SECRET, "file")
    assert stat.S_IMODE((state / "auth").stat().st_mode) == 0o700
    assert stat.S_IMODE(token_file(state).stat().st_mode) == 0o600
    assert json.loads(token_file(state).read_text()) == {
        "origin": "https://store.example",
        "token": SECRET,
    }
    assert json.loads((state / "remote.json").read_text()) == {
        "url": "https://store.example/team/",
        "share": "full",
    }
    assert stores.settings(str(state)) == got
    assert sorted(p.name for p in state.iterdir()) == ["auth", "remote.json"]  # no temp files
    # the same origin under another path still uses the token
    other_path = _stores({"ARTIFACTIZE_REMOTE": "https://store.example/other"})
    assert other_path.settings(str(state)).token == SECRET  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "url", ["https://other.example/team", "https://store.example:8443/team", "http://localhost/"]
)
def test_the_stored_token_is_refused_for_another_origin(tmp_path: Path, url: str) -> None:
    _stores({}).login(str(tmp_path), "https://store.example/team", SECRET, "summary")
    with pytest.raises(RemoteConfigError) as caught:
        _stores({"ARTIFACTIZE_REMOTE": url}).settings(str(tmp_path))
    message = str(caught.value)
    assert "was issued for https://store.example" in message and "log in again" in message
    assert SECRET not in message


def test_the_environment_token_wins_over_the_stored_one(tmp_path: Path) -> None:
    _stores({}).login(str(tmp_path), "https://store.example", SECRET, "summary")
    env = {"ARTIFACTIZE_REMOTE": "https://other.example", "ARTIFACTIZE_REMOTE_TOKEN": "t2"}
    got = _stores(env).settings(str(tmp_path))
    assert got is not None and (got.token, got.token_source) == ("t2", "env")


def test_a_symlinked_token_file_is_refused(tmp_path: Path) -> None:
    _stores({}).login(str(tmp_path), "https://store.example", SECRET, "summary")
    planted = tmp_path / "planted.json"
    planted.write_text(token_file(tmp_path).read_text())
    planted.chmod(0o600)
    token_file(tmp_path).unlink()
    token_file(tmp_path).symlink_to(planted)
    with pytest.raises(RemoteConfigError, match="symbolic link, which is never followed") as caught:
        _stores({}).settings(str(tmp_path))
    assert SECRET not in str(caught.value)


def test_login_replaces_a_planted_symlink_without_writing_its_target(tmp_path: Path) -> None:
    (tmp_path / "auth").mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    token_file(tmp_path).symlink_to(victim)
    _stores({}).login(str(tmp_path), "https://store.example", SECRET, "summary")
    assert victim.read_text() == "keep me"
    assert token_file(tmp_path).is_file() and not token_file(tmp_path).is_symlink()


def test_a_symlinked_auth_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "auth").symlink_to(elsewhere)
    with pytest.raises(RemoteConfigError, match="must be a directory, not a symbolic link"):
        _stores({}).login(str(tmp_path / "state"), "https://s.example", SECRET, "full")
    assert list(elsewhere.iterdir()) == []
    env = {"ARTIFACTIZE_REMOTE": "https://s.example"}
    with pytest.raises(RemoteConfigError, match="must be a directory"):
        _stores(env).settings(str(tmp_path / "state"))


def test_a_hard_linked_or_readable_token_file_is_refused(tmp_path: Path) -> None:
    _stores({}).login(str(tmp_path), "https://store.example", SECRET, "summary")
    os.link(token_file(tmp_path), tmp_path / "second-link")
    with pytest.raises(RemoteConfigError, match="single link"):
        _stores({}).settings(str(tmp_path))
    (tmp_path / "second-link").unlink()
    token_file(tmp_path).chmod(0o644)
    with pytest.raises(RemoteConfigError, match="must be private"):
        _stores({}).settings(str(tmp_path))
    token_file(tmp_path).chmod(0o600)
    (tmp_path / "auth").chmod(0o755)
    with pytest.raises(RemoteConfigError, match="directory must be private"):
        _stores({}).settings(str(tmp_path))


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ({"origin": "https://store.example", "token": "a b"}, "field `token` contains a space"),
        ({"origin": "https://store.example", "token": "t", "url": "x"}, 'unknown field "url"'),
        ({"token": "t"}, "field `origin` must be a string"),
    ],
)
def test_an_invalid_token_file_names_the_file(tmp_path: Path, content: Any, words: str) -> None:
    _stores({}).login(str(tmp_path), "https://store.example", SECRET, "summary")
    token_file(tmp_path).write_text(json.dumps(content))
    with pytest.raises(RemoteConfigError) as caught:
        _stores({}).settings(str(tmp_path))
    assert str(caught.value).startswith(str(token_file(tmp_path))) and words in str(caught.value)


def test_logout_removes_both_files(tmp_path: Path) -> None:
    stores = _stores({})
    assert stores.logout(str(tmp_path / "missing")) is False
    stores.login(str(tmp_path), "https://store.example", SECRET, "summary")
    assert stores.logout(str(tmp_path)) is True
    assert not token_file(tmp_path).exists() and not (tmp_path / "remote.json").exists()
    assert stores.logout(str(tmp_path)) is False
    assert stores.settings(str(tmp_path)) is None


# --- the CLI ---------------------------------------------------------------------------------------


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> Iterator[Any]:
    """``artifactize --state-dir S remote …`` in process (``tests/support/cli.py``), the
    container's environment exactly ``env``."""
    state = tmp_path / "state"

    def invoke(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> Outcome:
        container = Container()
        container.environment.override(providers.Object(env or {}))
        done = run_cli("--state-dir", str(state), "remote", *args, stdin=stdin, container=container)
        return Outcome(done.code, done.stdout, done.stderr)

    invoke.state = state  # type: ignore[attr-defined]
    yield invoke


def test_login_status_logout(run: Any, fake_store: FakeReviewStore) -> None:
    fake_store.tokens[SECRET] = ("alice", ("read", "publish"))
    done = run("login", fake_store.url, stdin=SECRET + "\n")
    assert done.code == 0, done
    assert done.out.strip() == (
        f"Logged in to {fake_store.url} as alice (scopes: read, publish; share: summary)."
    )
    assert SECRET not in done.out + done.err
    status = run("status", "--json")
    assert status.code == 0, status
    assert status.json() == {
        "configured": True,
        "off": False,
        "url": fake_store.url,
        "share": "summary",
        "tokenSource": "file",
        "reachable": True,
        "accepted": True,
        "principal": "alice",
        "scopes": ["read", "publish"],
        "leases": None,  # the fake serves no lease routes, like a store before leases
        "error": None,
    }
    text = run("status")
    assert text.code == 0 and "Principal: alice" in text.out and SECRET not in text.out
    assert run("logout").out.strip() == "Logged out."
    after = run("status")
    assert after.code == 1 and "not in use" in after.out


def test_login_with_share_full_and_json(run: Any, fake_store: FakeReviewStore) -> None:
    done = run("--json", "login", fake_store.url, "--share", "full", stdin=TOKEN + "\r\n")
    assert done.code == 0, done
    assert done.json() == {
        "url": fake_store.url,
        "share": "full",
        "principal": "alice",
        "scopes": ["read", "publish", "human"],
    }
    assert json.loads((run.state / "remote.json").read_text())["share"] == "full"


@pytest.mark.parametrize(
    ("stdin", "words"),
    [
        (
            "tok-unknown\n",
            "Login failed, nothing was saved: The remote store rejected the token (HTTP 401)",
        ),
        ("\n", "The token read from standard input is empty"),
        ("a b\n", "contains a space"),
        ("x" * (TOKEN_MAX_CHARS + 1) + "\n", f"has {TOKEN_MAX_CHARS + 1} characters"),
    ],
)
def test_login_saves_nothing_unless_the_store_accepts_the_token(
    run: Any, fake_store: FakeReviewStore, stdin: str, words: str
) -> None:
    done = run("login", fake_store.url, stdin=stdin)
    assert done.code == 2 and words in done.err, done
    assert stdin.strip() not in done.err or not stdin.strip()
    assert not (run.state / "remote.json").exists()


def test_login_to_an_unreachable_store_saves_nothing(run: Any) -> None:
    done = run("--json", "login", f"http://127.0.0.1:{closed_port()}", stdin=TOKEN + "\n")
    assert done.code == 2 and "is unreachable" in done.json()["error"]
    assert not (run.state / "remote.json").exists()


def test_login_refuses_plain_http_elsewhere(run: Any) -> None:
    done = run("login", "http://store.example/", stdin=TOKEN + "\n")
    assert done.code == 2 and "plain http is allowed only on this machine" in done.err


def test_status_exit_codes(run: Any, fake_store: FakeReviewStore) -> None:
    env = {"ARTIFACTIZE_REMOTE": fake_store.url, "ARTIFACTIZE_REMOTE_TOKEN": "tok-unknown"}
    rejected = run("--json", "status", env=env)
    assert rejected.code == 1
    view = rejected.json()
    assert (view["reachable"], view["accepted"], view["tokenSource"]) == (True, False, "env")
    assert "rejected the token (HTTP 401)" in view["error"]
    no_token = run("status", env={"ARTIFACTIZE_REMOTE": fake_store.url})
    assert no_token.code == 1 and "Token: none" in no_token.out and NO_TOKEN_MESSAGE in no_token.out
    down = run(
        "--json",
        "status",
        env={
            "ARTIFACTIZE_REMOTE": f"http://127.0.0.1:{closed_port()}/",
            "ARTIFACTIZE_REMOTE_TOKEN": TOKEN,
        },
    )
    assert down.code == 1 and down.json()["reachable"] is False
    off = run("--json", "status", env={"ARTIFACTIZE_REMOTE": "off"})
    assert off.code == 1 and off.json()["off"] is True
    invalid = run("--json", "status", env={"ARTIFACTIZE_REMOTE": "http://store.example"})
    assert invalid.code == 2 and "ARTIFACTIZE_REMOTE must be" in invalid.json()["error"]


def seed_state(state: Path, *executions: dict[str, Any]) -> None:
    store = SqliteStateStores().open(str(state), create=True)
    assert store is not None
    try:
        for data in executions:
            running = ExecutionRecord(
                id=data["id"],
                key=data["key"],
                eval_def_hash=data["evalDefHash"],
                status=ExecutionStatus.RUNNING,
                owner_pid=os.getpid(),
                owner_start_time=1.0,
                backend="openai",
                completed_at=None,
                data=Execution(id=data["id"]),
            )
            assert store.claim(running, lambda _pid, _start: True).outcome is ClaimOutcome.OWNED
            done = replace(
                running,
                status=data["status"],
                completed_at=data["completedAt"],
                data=execution_from_json(data),
            )
            assert store.complete_execution(done, record=True)
    finally:
        store.close()


def keyed(number: int, **changes: Any) -> Any:
    fingerprints = {"doc": f"v{number}", "lib": "v1"}
    base = {
        "id": f"execution-run-Abc-{number}",
        "fingerprints": fingerprints,
        "key": key_of("b" * 64, fingerprints, KINDS),
        "kinds": KINDS,
    }
    return execution(**{**base, **changes})


def test_push_publishes_what_the_store_lacks(run: Any, fake_store: FakeReviewStore) -> None:
    seed_state(run.state, keyed(1), keyed(2), keyed(3, profile={"kind": "human"}, reviewer="al"))
    fake_store.tokens["tok-p"] = ("ci", ("read", "publish"))
    env = {"ARTIFACTIZE_REMOTE": fake_store.url, "ARTIFACTIZE_REMOTE_TOKEN": "tok-p"}
    dry = run("--json", "push", "--dry-run", env=env)
    assert dry.code == 0, dry
    assert dry.json() == {"dryRun": True, "pushed": 2, "existing": 0, "skipped": 1}
    assert "lacks the human scope" in dry.err
    assert fake_store.entries == {}
    done = run("push", env=env)
    assert done.code == 0, done
    assert done.out.strip() == "Pushed 2, already in the store 0, skipped 1."
    assert sorted(fake_store.entries) == sorted([keyed(1)["key"], keyed(2)["key"]])
    sent = fake_store.entries[keyed(1)["key"]][0]
    assert "toolCalls" not in sent and "repoPath" not in json.dumps(sent)
    assert sent["executionPaths"] == keyed(1)["provenance"]["executionPaths"]
    again = run("push", env=env)
    assert again.out.strip() == "Pushed 0, already in the store 2, skipped 1."
    assert [s.method for s in fake_store.seen].count("PUT") == 2
    # this stand-in is a store from before the batch route: asked once, then one PUT each
    asked = [(s.method, s.path) for s in fake_store.seen if s.path.startswith("/v1/entries")]
    assert asked[0] == ("POST", "/v1/entries") and asked[1:] == [("PUT", ANY), ("PUT", ANY)]


def test_push_fails_on_any_remote_failure(run: Any, fake_store: FakeReviewStore) -> None:
    seed_state(run.state, keyed(1))
    env = {"ARTIFACTIZE_REMOTE": fake_store.url, "ARTIFACTIZE_REMOTE_TOKEN": TOKEN}
    fake_store.script(
        Canned(body={"principal": "alice", "scopes": ["publish"]}),
        Canned(status=503, body={"error": "busy"}),
    )
    done = run("--json", "push", env=env)
    assert done.code == 2
    assert done.json()["error"] == (
        "Push failed: The remote store failed (HTTP 503): busy (pushed 0 before the failure)"
    )
    fake_store.tokens["tok-r"] = ("reader", ("read",))
    refused = run("push", env={**env, "ARTIFACTIZE_REMOTE_TOKEN": "tok-r"})
    assert refused.code == 2 and "lacks the publish scope" in refused.err
    unconfigured = run("push")
    assert unconfigured.code == 2 and "No remote review store is configured" in unconfigured.err


def test_push_without_a_state_pushes_nothing(run: Any, fake_store: FakeReviewStore) -> None:
    env = {"ARTIFACTIZE_REMOTE": fake_store.url, "ARTIFACTIZE_REMOTE_TOKEN": TOKEN}
    done = run("push", env=env)
    assert done.code == 0 and done.out.strip() == "Pushed 0, already in the store 0, skipped 0."
    assert not run.state.exists()


# --- a round trip through the real store server -------------------------------------------------


@pytest.fixture
def served_lines() -> list[str]:
    """The request log of ``real_store``: one JSON line per request served."""
    return []


@pytest.fixture
def real_store(tmp_path: Path, served_lines: list[str]) -> Iterator[tuple[str, str, str]]:
    """The real server (``entrypoints/store_server.py``) on 127.0.0.1, port 0."""
    server_module = pytest.importorskip("artifactize.entrypoints.store_server")
    from artifactize.adapters.review_store.database import open_review_store_db
    from artifactize.adapters.utc_timestamps import utc_now
    from artifactize.entrypoints.listen_address import bind, parse_listen

    db = open_review_store_db(str(tmp_path / "server"), create=True)
    assert db is not None
    publisher = db.add_token("a", ["read", "publish", "human"]).token
    reader = db.add_token("ci", ["read"]).token
    server = server_module.StoreServer(
        server_module.create_app(db, now=utc_now, log=served_lines.append),
        bind(parse_listen("127.0.0.1:0")),
    )
    ready = threading.Event()
    thread = threading.Thread(
        target=lambda: anyio.run(server.serve, lambda _server: ready.set()), daemon=True
    )
    thread.start()
    try:
        assert ready.wait(15)
        yield server.url + "/", publisher, reader
    finally:
        server.stop()
        thread.join(10)
        db.close()


def test_round_trip_through_the_real_server(real_store: tuple[str, str, str]) -> None:
    url, publisher, reader = real_store
    human = build_record(keyed(1, profile={"kind": "human"}, reviewer="alice"), KINDS, "full")
    assert call(url, "publish", human["key"], human, token=publisher) is True
    assert call(url, "publish", human["key"], human, token=publisher) is False
    assert call(url, "whoami", token=reader).scopes == ("read",)
    [entry] = call(url, "lookup", [human["key"], "0" * 64], token=reader)
    checked = validate_record(entry)
    assert not isinstance(checked, str), checked
    assert (checked.publisher, checked.reviewer, checked.kind) == ("a", "alice", "human")
    mirror = mirror_execution(checked, url)
    assert mirror["origin"]["publisher"] == "a"
    assert mirror["provenance"]["executionPaths"] == human["executionPaths"]
    problem = failure(url, "publish", human["key"], human, token=reader)
    assert (problem.mode, problem.status) == (FailureMode.CLOSED, 403)
    assert failure(url, token="azt_unknown").message.startswith(
        "The remote store rejected the token"
    )


def served(lines: list[str], last: tuple[str, str], count: int = 1) -> list[tuple[str, str, int]]:
    """The requests served, once ``count`` of them were ``last`` (method, path): the server
    logs a request after its answer is sent, so the client can have it first."""
    deadline = time.monotonic() + SERVED_LOG_SECONDS
    while True:
        seen = [(d["method"], d["path"], d["status"]) for d in map(json.loads, list(lines))]
        if sum((m, p) == last for m, p, _ in seen) >= count or time.monotonic() > deadline:
            return seen
        time.sleep(0.01)


def test_a_batch_publish_through_the_real_server(
    real_store: tuple[str, str, str], served_lines: list[str]
) -> None:
    url, publisher, reader = real_store
    records = [build_record(keyed(n), KINDS, "summary") for n in (1, 2)]
    batch = [(r["key"], r) for r in [*records, records[0]]]
    assert call(url, "publish_batch", batch, token=publisher) == [True, True, False]
    assert [e["key"] for e in call(url, "lookup", [r["key"] for r in records], token=reader)] == [
        r["key"] for r in records
    ]
    problem = failure(url, "publish_batch", batch, token=reader)
    assert (problem.mode, problem.status) == (FailureMode.CLOSED, 403)
    too_many = [batch[0]] * (PUBLISH_BATCH_MAX_ENTRIES + 1)
    for wrong in ([], too_many, [("A" * 64, records[0])]):
        assert failure(url, "publish_batch", wrong, token=publisher).status is None
    posts = [(m, p) for m, p, _ in served(served_lines, ("POST", "/v1/entries"), 2)]
    assert posts.count(("POST", "/v1/entries")) == 2


def test_push_sends_batches_to_the_real_server(
    run: Any, real_store: tuple[str, str, str], served_lines: list[str]
) -> None:
    url, publisher, _reader = real_store
    seed_state(run.state, keyed(1), keyed(2), keyed(3))
    env = {"ARTIFACTIZE_REMOTE": url, "ARTIFACTIZE_REMOTE_TOKEN": publisher}
    done = run("push", env=env)
    assert done.code == 0, done
    assert done.out.strip() == "Pushed 3, already in the store 0, skipped 0."
    entries = served(served_lines, ("POST", "/v1/entries"))
    assert [(m, p, s) for m, p, s in entries if p.startswith("/v1/entries")] == [
        ("POST", "/v1/entries", 200)
    ]
    again = run("push", env=env)
    assert again.out.strip() == "Pushed 0, already in the store 3, skipped 0."
    assert "Sending records" not in done.err  # off a terminal: no progress line


@pytest.mark.process  # stderr on a real pseudo-terminal
def test_push_counts_its_records_on_a_terminal(
    tmp_path: Path, real_store: tuple[str, str, str]
) -> None:
    url, publisher, _reader = real_store
    state = tmp_path / "pushing"
    seed_state(state, keyed(1), keyed(2), keyed(3))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    env |= {"ARTIFACTIZE_REMOTE": url, "ARTIFACTIZE_REMOTE_TOKEN": publisher, "TERM": "xterm"}
    argv = [sys.executable, "-m", "artifactize.entrypoints.cli.app", "--state-dir", str(state)]
    code, out, terminal = run_on_pty([*argv, "remote", "push"], env)
    assert (code, out.strip()) == (0, "Pushed 3, already in the store 0, skipped 0.")
    assert f"{CLEAR_LINE}Sending records: 3 of 3{CLEAR_LINE}" in terminal
    assert publisher not in terminal


def test_a_granted_lease_brings_the_keys_latest_record(real_store: tuple[str, str, str]) -> None:
    url, publisher, _reader = real_store
    record = build_record(keyed(7), KINDS, "summary")
    first = call(url, "acquire_lease", record["key"], "m1", token=publisher)
    assert first.granted and first.latest == ()
    assert call(url, "publish", record["key"], record, token=publisher) is True
    again = call(url, "acquire_lease", record["key"], "m1", token=publisher)  # renewed
    (latest,) = again.latest
    assert latest["executionId"] == record["executionId"] and latest["publisher"] == "a"


@pytest.mark.parametrize("latest", [5, "record", [1]])
def test_a_lease_with_a_latest_that_is_no_record_fails_closed(
    fake_store: FakeReviewStore, latest: Any
) -> None:
    lease = {"granted": True, "key": "a" * 64, "holder": "m1", "principal": "ci"}
    lease |= {"acquiredAt": "t0", "expiresAt": "t1", "leaseSeconds": 60, "latest": latest}
    fake_store.script(Canned(body=lease))
    problem = failure(fake_store.url, "acquire_lease", "a" * 64, "m1")
    assert problem.mode is FailureMode.CLOSED and "latest" in problem.message


def test_a_put_that_releases_the_lease_says_so(real_store: tuple[str, str, str]) -> None:
    url, publisher, _reader = real_store
    record = build_record(keyed(8), KINDS, "summary")
    assert call(url, "acquire_lease", record["key"], "m1", token=publisher).granted
    released = call(url, "publish_releasing", record["key"], record, "m1", token=publisher)
    assert released == (True, True)
    assert call(url, "list_leases", token=publisher) == []


@contextmanager
def body_limited_proxy(upstream: str, limit: int) -> Iterator[tuple[str, list[int]]]:
    """A real HTTP proxy on 127.0.0.1 in front of ``upstream`` that refuses a request body
    over ``limit`` bytes with 413 and an HTML page, as nginx's ``client_max_body_size``
    does; (its URL, the sizes it refused)."""
    target = urllib.parse.urlsplit(upstream)
    refused: list[int] = []

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _relay(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(size)
            if size > limit:
                refused.append(size)
                page = b"<html><body>413 Request Entity Too Large</body></html>"
                self.send_response(413)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return
            connection = http.client.HTTPConnection(str(target.hostname), target.port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            connection.request(self.command, self.path, body=body, headers=headers)
            answer = connection.getresponse()
            payload = answer.read()
            self.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            connection.close()

        do_GET = do_POST = do_PUT = _relay

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", refused
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_push_behind_a_proxy_with_a_small_body_limit_halves_its_batches(
    run: Any, real_store: tuple[str, str, str]
) -> None:
    url, publisher, reader = real_store
    rows = [keyed(n) for n in range(10, 16)]
    seed_state(run.state, *rows)
    one = len(json.dumps(build_record(rows[0], KINDS, "summary"), separators=(",", ":")))
    with body_limited_proxy(url, limit=one * 5 // 2) as (proxied, refused):
        env = {"ARTIFACTIZE_REMOTE": proxied, "ARTIFACTIZE_REMOTE_TOKEN": publisher}
        done = run("push", env=env)
    assert done.code == 0, done
    assert done.out.strip() == "Pushed 6, already in the store 0, skipped 0."
    assert len(refused) == 2  # six records, then three; then one PUT each passes
    stored = call(url, "lookup", [r["key"] for r in rows], token=reader)
    assert sorted(e["key"] for e in stored) == sorted(r["key"] for r in rows)
