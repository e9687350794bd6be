"""The team review store server on 127.0.0.1: every route and status, tokens through the
CLI, LRU caps over HTTP, ``server run`` as a real process (ready line, SIGTERM/SIGINT), and
token commands racing on the same file while the server runs."""

from __future__ import annotations

import hashlib
import json
import queue
import re
import secrets
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from artifactize.adapters.review_store.database import (
    STORE_RECORDS_MAX,
    SqliteReviewStoreDb,
    open_review_store_db,
)
from artifactize.domain.reviews.remote.server_admission import (
    FULL_RECORD_MAX_BYTES,
    REQUEST_BODY_MAX_BYTES,
    SUMMARY_RECORD_MAX_BYTES,
)
from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.listen_address import bind, parse_listen
from artifactize.entrypoints.store_server import StoreServer, create_app
from artifactize.ports.review_store import LOOKUP_KEYS_MAX, PUBLISH_BATCH_MAX_ENTRIES
from tests.support import postgres
from tests.support.processes import no_process_left_behind
from tests.support.server_cli import run_in_process, subprocess_argv

REPO = Path(__file__).resolve().parents[2]
PUBLISHED_AT = "2030-01-01T00:00:00.000000000Z"
READY = re.compile(
    r"Review store listening on http://(?P<address>\S+) \((?P<where>state|database): (?P<state>.+)\)"
)
# Bounds for a hung process, never speed checks: a loaded 2-core CI machine (beside
# PostgreSQL and Wine lanes) can take many seconds to start our CLI, so each is generous
# and is only ever waited out by a failing test.
START_SECONDS = 60.0
STOP_SECONDS = 30.0
COMMAND_SECONDS = 120.0  # one CLI command started beside others and the traffic thread
TRAFFIC_PAUSE_SECONDS = 0.005
KEY = "ab" * 32
postgresql_server = postgres.postgresql_server
postgresql_url = postgres.postgresql_url


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(CliContext, "options", CliContext.options)  # restored afterwards
    with no_process_left_behind():
        yield


# Helpers


def cli(state: Path, *args: str, as_json: bool = False) -> tuple[int, str, str]:
    flags = ["--json"] if as_json else []
    return run_in_process(["--state-dir", str(state), *flags, "server", *args])


def cli_ok_json(state: Path, *args: str) -> Any:
    code, out, err = cli(state, *args, as_json=True)
    assert code == 0, (out, err)
    return json.loads(out)


def add_token(state: Path, name: str, scopes: str) -> str:
    token = cli_ok_json(state, "token", "add", name, "--scopes", scopes)["token"]
    assert isinstance(token, str)
    return token


@dataclass
class Running:
    url: str
    store: SqliteReviewStoreDb


@contextmanager
def serving(
    state: Path,
    max_records: int = STORE_RECORDS_MAX,
    database: str | None = None,
    log: Callable[[str], None] | None = None,
) -> Iterator[Running]:
    """The real app under uvicorn on 127.0.0.1, port 0, in a thread of its own, on the
    store of ``state`` or on ``database`` (a URL); ``log`` receives its request log."""
    store = open_review_store_db(
        str(state), create=True, max_records=max_records, database=database
    )
    assert store is not None
    server = StoreServer(
        create_app(store, now=lambda: PUBLISHED_AT, log=log), bind(parse_listen("127.0.0.1:0"))
    )
    ready = threading.Event()
    failures: list[BaseException] = []

    def target() -> None:
        try:
            anyio.run(server.serve, lambda _server: ready.set())
        except BaseException as exc:
            failures.append(exc)
            ready.set()

    thread = threading.Thread(target=target, name="review-store", daemon=True)
    thread.start()
    try:
        assert ready.wait(START_SECONDS) and not failures, failures
        yield Running(server.url, store)
    finally:
        server.stop()
        thread.join(STOP_SECONDS * 2)
        store.close()
    assert not thread.is_alive()
    assert not failures, failures


def client(url: str) -> httpx2.Client:
    return httpx2.Client(base_url=url, trust_env=False, timeout=10.0, follow_redirects=False)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def record(key: str = KEY, **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema": 2,
        "key": key,
        "evalDefHash": "cd" * 32,
        "fingerprints": {"doc": "content:" + "ef" * 32},
        "verdict": "GREEN",
        "evalId": "doc/review",
        "runId": "run-Abc123",
        "requestId": "run-Abc123-1",
        "executionId": "execution-run-Abc123-1",
        "profile": {"kind": "agent"},
        "options": {},
        "result": {"verdict": "GREEN"},
        "usage": None,
        "startedAt": "2026-01-02T03:04:00.000000000Z",
        "completedAt": "2026-01-02T03:04:05.000000000Z",
    }
    base.update(changes)
    return base


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def sized_body(key: str, size: int, *, full: bool) -> bytes:
    """A valid record's compact JSON of exactly ``size`` bytes."""
    padded = record(key, execution={"pad": ""}) if full else record(key)
    holder = padded["execution"] if full else padded["result"]
    holder["pad"] = ""
    holder["pad"] = "x" * (size - len(compact(padded)))
    body = compact(padded)
    assert len(body) == size
    return body


def error_of(response: httpx2.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["error"] and isinstance(body["error"], str) and body["error"]
    return str(body["error"])


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@dataclass
class Api:
    http: httpx2.Client
    running: Running
    state: Path
    tokens: dict[str, str]
    database: str | None

    def store_options(self) -> tuple[str, ...]:
        """What ``server token …`` needs to reach this server's store."""
        return ("--database", self.database) if self.database else ()

    def token(self, name: str, scopes: str) -> str:
        """A token of its own for a test that changes it (revocation)."""
        return self.running.store.add_token(name, scopes.split(",")).token


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def engine_database(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """Each engine once per module: None (the SQLite file) or a PostgreSQL database URL."""
    if request.param == "sqlite":
        yield None
        return
    server: postgres.PostgresServer = request.getfixturevalue("postgresql_server")
    name = server.create_database()
    try:
        yield server.url(name)
    finally:
        server.drop_database(name)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, engine_database: str | None) -> Iterator[Api]:
    """One server per engine for the route tests; each test uses keys of its own
    (``fresh_key``)."""
    state = tmp_path_factory.mktemp("api") / "state"
    with serving(state, database=engine_database) as running, client(running.url) as http:
        scopes = {
            "all": "read,publish,human",
            "reader": "read",
            "publisher": "publish",
            "agents": "read,publish",
        }
        tokens = {
            name: running.store.add_token(name, s.split(",")).token for name, s in scopes.items()
        }
        yield Api(http, running, state, tokens, engine_database)


def fresh_key() -> str:
    return secrets.token_hex(32)


def put(api: Api, token: str, body: Any, key: str | None = None) -> httpx2.Response:
    """PUT ``body`` to the entry of ``key`` (default: the record's own key, else KEY)."""
    content = body if isinstance(body, bytes) else compact(body)
    if key is None:
        key = body["key"] if isinstance(body, dict) else KEY
    return api.http.put(f"/v1/entries/{key}", content=content, headers=bearer(api.tokens[token]))


def post_batch(api: Api, token: str, body: Any) -> httpx2.Response:
    content = body if isinstance(body, bytes) else compact(body)
    return api.http.post("/v1/entries", content=content, headers=bearer(api.tokens[token]))


def batch_of(*records: dict[str, Any]) -> dict[str, Any]:
    return {"entries": [{"key": r["key"], "record": r} for r in records]}


def stored_keys(api: Api, keys: list[str]) -> list[str]:
    return [e["key"] for e in lookup(api, "reader", {"keys": keys}).json()["entries"]]


def lookup(api: Api, token: str, body: Any) -> httpx2.Response:
    content = body if isinstance(body, bytes) else compact(body)
    return api.http.post("/v1/lookup", content=content, headers=bearer(api.tokens[token]))


def put_at_and_past_the_limit(api: Api, limit: int, *, full: bool) -> str:
    """Publish a record of exactly ``limit`` bytes (201), then one of ``limit + 1`` under the
    same key (413, naming the limit); the key."""
    key = fresh_key()
    at_limit = sized_body(key, limit, full=full)
    assert put(api, "all", at_limit, key=key).status_code == 201
    over = sized_body(key, limit + 1, full=full)
    message = error_of(put(api, "all", over, key=key), 413)
    assert str(limit) in message
    return key


# Authentication


class TestAuthentication:
    def test_whoami_names_the_principal_and_scopes(self, api: Api) -> None:
        response = api.http.get("/v1/whoami", headers=bearer(api.tokens["agents"]))
        assert response.status_code == 200
        assert response.json() == {"principal": "agents", "scopes": ["read", "publish"]}
        lower = api.http.get(
            "/v1/whoami", headers={"Authorization": f"bearer {api.tokens['reader']}"}
        )
        assert lower.json()["principal"] == "reader"

    @pytest.mark.parametrize(
        "headers",
        [
            {},
            {"Authorization": "Bearer"},
            {"Authorization": ""},
            {"Authorization": "Basic YWxpY2U6cHc="},
            {"Authorization": "Bearer azt_" + "A" * 43},
            {"Authorization": "Token azt_x"},
        ],
    )
    def test_missing_malformed_or_unknown_tokens_get_401(
        self, api: Api, headers: dict[str, str]
    ) -> None:
        routes = (("GET", "/v1/whoami"), ("POST", "/v1/lookup"), ("PUT", f"/v1/entries/{KEY}"))
        for method, path in routes:
            response = api.http.request(method, path, headers=headers, content=b"{}")
            error_of(response, 401)
            assert response.headers["www-authenticate"] == "Bearer"

    def test_a_token_in_the_query_string_or_a_cookie_is_ignored(self, api: Api) -> None:
        token = api.tokens["all"]
        for query in ("access_token", "token", "bearer"):
            error_of(api.http.get(f"/v1/whoami?{query}={token}"), 401)
        error_of(api.http.get("/v1/whoami", headers={"Cookie": f"token={token}"}), 401)

    def test_a_wrong_token_with_a_valid_prefix_is_refused(self, api: Api) -> None:
        token = api.tokens["all"]
        flipped = token[:-1] + ("A" if token[-1] != "A" else "B")
        error_of(api.http.get("/v1/whoami", headers=bearer(flipped)), 401)
        error_of(api.http.get("/v1/whoami", headers=bearer(token + "x")), 401)

    def test_revocation_takes_effect_at_once_while_serving(self, api: Api) -> None:
        headers = bearer(api.token("short-lived", "read"))
        assert api.http.get("/v1/whoami", headers=headers).status_code == 200
        revoked = cli_ok_json(api.state, "token", "revoke", "short-lived", *api.store_options())
        assert revoked["name"] == "short-lived" and revoked["purgedEntries"] == 0
        message = error_of(api.http.get("/v1/whoami", headers=headers), 401)
        assert message == "Unknown or revoked token."

    def test_missing_scopes_get_403_naming_the_scope(self, api: Api) -> None:
        denied = lookup(api, "publisher", {"keys": [fresh_key()]})
        assert error_of(denied, 403) == "This token lacks the read scope."
        denied = put(api, "reader", record(fresh_key()))
        assert error_of(denied, 403) == "This token lacks the publish scope."


# Lookup


class TestLookup:
    def test_unknown_keys_give_no_entries(self, api: Api) -> None:
        response = lookup(api, "reader", {"keys": [fresh_key()]})
        assert response.status_code == 200
        assert response.json() == {"entries": []}

    def test_returns_the_latest_record_per_found_key(self, api: Api) -> None:
        key, other, missing = fresh_key(), fresh_key(), fresh_key()
        # Text order and time order differ here: 03:00+05:00 is 22:00 the day before.
        early = record(key, executionId="early", completedAt="2026-01-02T03:00:00+05:00")
        late = record(key, executionId="late", completedAt="2026-01-01T23:00:00Z")
        assert put(api, "agents", late).status_code == 201
        assert put(api, "agents", early).status_code == 201
        assert put(api, "agents", record(other, executionId="other")).status_code == 201
        found = lookup(api, "reader", {"keys": [missing, key, other]}).json()["entries"]
        assert [entry["executionId"] for entry in found] == ["late", "other"]
        assert found[0]["completedAt"] == "2026-01-01T23:00:00Z"  # stored as sent

    def test_equal_completion_times_return_the_last_stored(self, api: Api) -> None:
        key = fresh_key()
        for execution in ("first", "second"):
            assert put(api, "agents", record(key, executionId=execution)).status_code == 201
        (found,) = lookup(api, "reader", {"keys": [key]}).json()["entries"]
        assert found["executionId"] == "second"

    def test_key_count_at_the_limit_and_one_past(self, api: Api) -> None:
        keys = [fresh_key() for _ in range(LOOKUP_KEYS_MAX)]
        assert lookup(api, "reader", {"keys": keys}).status_code == 200
        message = error_of(lookup(api, "reader", {"keys": [*keys, fresh_key()]}), 400)
        assert str(LOOKUP_KEYS_MAX) in message

    @pytest.mark.parametrize(
        "body",
        [
            {"keys": ["AB" * 32]},
            {"keys": ["a" * 63]},
            {"keys": ["a" * 65]},
            {"keys": [KEY], "limit": 5},
            {"keys": KEY},
            {},
            [KEY],
            b"{not json",
            b'{"keys": [NaN]}',
            b"\xff\xfe",
            b"[" * 100_000,
        ],
    )
    def test_malformed_lookups_get_400(self, api: Api, body: Any) -> None:
        error_of(lookup(api, "reader", body), 400)

    def test_object_keys_of_an_old_client_get_410(self, api: Api) -> None:
        message = error_of(lookup(api, "reader", {"keys": [{"hash": "a", "fp": "b"}]}), 410)
        assert "Upgrade artifactize" in message


# Publishing


class TestPublish:
    def test_created_then_existing(self, api: Api) -> None:
        key = fresh_key()
        first = put(api, "agents", record(key))
        assert (first.status_code, first.json()) == (201, {"created": True})
        again = put(api, "agents", record(key, verdict="RED", result={"verdict": "RED"}))
        assert (again.status_code, again.json()) == (200, {"created": False})
        stored = lookup(api, "reader", {"keys": [key]}).json()["entries"]
        assert [entry["verdict"] for entry in stored] == ["GREEN"]

    def test_the_server_sets_publisher_and_published_at(self, api: Api) -> None:
        key = fresh_key()
        sent = record(key, publisher="mallory", publishedAt="1999-01-01T00:00:00Z")
        assert put(api, "agents", sent).status_code == 201
        (stored,) = lookup(api, "reader", {"keys": [key]}).json()["entries"]
        assert stored["publisher"] == "agents"
        assert stored["publishedAt"] == PUBLISHED_AT
        server_fields = ("publisher", "publishedAt")
        assert {k: v for k, v in stored.items() if k not in server_fields} == {
            k: v for k, v in sent.items() if k not in server_fields
        }

    def test_human_sign_offs_need_the_human_scope(self, api: Api) -> None:
        key = fresh_key()
        human = record(key, profile={"kind": "human"}, reviewer="alice")
        denied = put(api, "agents", human)
        assert error_of(denied, 403) == "Human sign-offs require the human scope."
        assert lookup(api, "reader", {"keys": [key]}).json() == {"entries": []}
        assert put(api, "all", human).status_code == 201

    @pytest.mark.parametrize(
        "changes",
        [
            {"schema": 1},
            {"key": "cd" * 32},
            {"verdict": "PASS", "result": {"verdict": "PASS"}},
            {"result": {"verdict": "RED"}},
            {"profile": {"kind": "robot"}},
            {"executionId": ""},
            {"executionId": "e" * 201},
            {"completedAt": "2026-01-02"},
        ],
    )
    def test_invalid_envelopes_get_400(self, api: Api, changes: dict[str, Any]) -> None:
        error_of(put(api, "all", record(**changes), key=KEY), 400)

    def test_execution_id_of_200_characters_is_accepted(self, api: Api) -> None:
        assert put(api, "all", record(fresh_key(), executionId="e" * 200)).status_code == 201

    def test_a_bad_path_key_or_body_gets_400(self, api: Api) -> None:
        error_of(put(api, "all", record(key="AB" * 32)), 400)
        error_of(put(api, "all", b"[1]"), 400)
        error_of(put(api, "all", b"not json"), 400)
        error_of(put(api, "all", b'{"schema": Infinity}'), 400)

    def test_summary_size_at_the_limit_and_one_past(self, api: Api) -> None:
        put_at_and_past_the_limit(api, SUMMARY_RECORD_MAX_BYTES, full=False)

    def test_full_size_at_the_limit_and_one_past(self, api: Api) -> None:
        key = put_at_and_past_the_limit(api, FULL_RECORD_MAX_BYTES, full=True)
        (stored,) = lookup(api, "reader", {"keys": [key]}).json()["entries"]
        assert len(stored["execution"]["pad"]) > FULL_RECORD_MAX_BYTES - 1024

    def test_bodies_past_the_request_limit_get_413_declared_or_chunked(self, api: Api) -> None:
        key = fresh_key()
        body = b"x" * (REQUEST_BODY_MAX_BYTES + 1)
        message = error_of(put(api, "all", body, key=key), 413)
        assert str(REQUEST_BODY_MAX_BYTES) in message

        def chunks() -> Iterator[bytes]:
            step = 1 << 16
            for start in range(0, len(body), step):
                yield body[start : start + step]

        chunked = api.http.put(
            f"/v1/entries/{key}", content=chunks(), headers=bearer(api.tokens["all"])
        )
        error_of(chunked, 413)
        error_of(lookup(api, "reader", body), 413)
        error_of(post_batch(api, "agents", body), 413)
        # A body exactly at the request limit is read, then judged as a record.
        at_limit = sized_body(key, REQUEST_BODY_MAX_BYTES, full=True)
        assert "record is" in error_of(put(api, "all", at_limit, key=key), 413)
        assert lookup(api, "reader", {"keys": [key]}).json() == {"entries": []}

    def test_an_anonymous_oversize_body_is_refused_before_reading_it(self, api: Api) -> None:
        body = b"x" * (REQUEST_BODY_MAX_BYTES + 1)
        error_of(api.http.put(f"/v1/entries/{KEY}", content=body), 401)
        error_of(api.http.post("/v1/entries", content=body), 401)


class TestBatchPublish:
    def test_each_record_is_created_or_already_there_in_order(self, api: Api) -> None:
        keys = [fresh_key() for _ in range(3)]
        assert put(api, "agents", record(keys[1])).status_code == 201
        sent = [record(keys[0]), record(keys[1]), record(keys[2]), record(keys[0])]
        answer = post_batch(api, "agents", batch_of(*sent))
        assert (answer.status_code, answer.json()) == (200, {"created": [True, False, True, False]})
        stored = lookup(api, "reader", {"keys": keys}).json()["entries"]
        assert [e["key"] for e in stored] == keys
        assert {(e["publisher"], e["publishedAt"]) for e in stored} == {("agents", PUBLISHED_AT)}
        server_fields = ("publisher", "publishedAt")
        assert {k: v for k, v in stored[2].items() if k not in server_fields} == sent[2]

    def test_entries_at_the_limit_and_one_past(self, api: Api) -> None:
        keys = [fresh_key() for _ in range(PUBLISH_BATCH_MAX_ENTRIES + 1)]
        past = post_batch(api, "agents", batch_of(*(record(k) for k in keys)))
        assert str(PUBLISH_BATCH_MAX_ENTRIES) in error_of(past, 400)
        assert stored_keys(api, keys[:LOOKUP_KEYS_MAX]) == []
        at = post_batch(api, "agents", batch_of(*(record(k) for k in keys[:-1])))
        assert at.json() == {"created": [True] * PUBLISH_BATCH_MAX_ENTRIES}
        assert stored_keys(api, keys) == keys[:-1]

    @pytest.mark.parametrize(
        ("bad", "status", "words"),
        [
            ({"verdict": "PASS", "result": {"verdict": "PASS"}}, 400, "entries[1]: "),
            ({"schema": 1}, 400, "entries[1]: schema must be 2"),
            ({"key": "cd" * 32}, 400, "key must equal entries[1].key"),
            ({"profile": {"kind": "human"}, "reviewer": "al"}, 403, "entries[1]: Human sign-offs"),
        ],
    )
    def test_one_refused_record_refuses_the_whole_batch_naming_it(
        self, api: Api, bad: dict[str, Any], status: int, words: str
    ) -> None:
        keys = [fresh_key() for _ in range(3)]
        sent = [record(keys[0]), {**record(keys[1]), **bad}, record(keys[2])]
        body = {"entries": [{"key": k, "record": r} for k, r in zip(keys, sent, strict=True)]}
        assert words in error_of(post_batch(api, "agents", body), status)
        assert stored_keys(api, keys) == []

    def test_a_record_size_at_the_limit_and_one_past(self, api: Api) -> None:
        keys = [fresh_key() for _ in range(3)]
        at_limit = json.loads(sized_body(keys[1], SUMMARY_RECORD_MAX_BYTES, full=False))
        over = json.loads(sized_body(keys[1], SUMMARY_RECORD_MAX_BYTES + 1, full=False))
        past = post_batch(api, "agents", batch_of(record(keys[0]), over, record(keys[2])))
        message = error_of(past, 413)
        assert message.startswith("entries[1]: ") and str(SUMMARY_RECORD_MAX_BYTES) in message
        assert stored_keys(api, keys) == []
        at = post_batch(api, "agents", batch_of(record(keys[0]), at_limit, record(keys[2])))
        assert at.json() == {"created": [True, True, True]}

    @pytest.mark.parametrize(
        "body",
        [
            b"[]",
            b"not json",
            {"entries": []},
            {"entries": {}},
            {"entries": [], "more": 1},
            {"entries": [{"key": KEY}]},
            {"entries": [{"key": KEY, "record": record(), "extra": 1}]},
            {"entries": [{"key": "AB" * 32, "record": record(key="AB" * 32)}]},
            {"entries": [{"key": KEY, "record": [1]}]},
        ],
    )
    def test_malformed_batches_get_400(self, api: Api, body: Any) -> None:
        error_of(post_batch(api, "agents", body), 400)

    def test_the_publish_scope_is_needed_and_a_token_first(self, api: Api) -> None:
        body = batch_of(record(fresh_key()))
        assert "publish" in error_of(post_batch(api, "reader", body), 403)
        error_of(api.http.post("/v1/entries", content=compact(body)), 401)


class TestRoutes:
    def test_the_legacy_route_is_gone(self, api: Api) -> None:
        response = api.http.put(
            f"/v1/entries/{KEY}/content:abc", headers=bearer(api.tokens["all"]), content=b"{}"
        )
        assert "Upgrade artifactize" in error_of(response, 410)
        error_of(api.http.put(f"/v1/entries/{KEY}/fp", content=b"{}"), 410)

    def test_unknown_routes_and_methods_answer_json_errors(self, api: Api) -> None:
        headers = bearer(api.tokens["all"])
        error_of(api.http.get("/v2/whoami", headers=headers), 404)
        error_of(api.http.get("/v1/lookup", headers=headers), 405)
        error_of(api.http.delete(f"/v1/entries/{KEY}", headers=headers), 405)


# LRU over HTTP


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_lru_caps_evict_the_least_recently_used_over_http(
    state: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    database: str | None = None
    if engine == "postgresql":
        database = request.getfixturevalue("postgresql_url")
    keys = [f"{n:064x}" for n in range(4)]
    with serving(state, max_records=3, database=database) as running, client(running.url) as http:
        token = running.store.add_token("ci", ["read", "publish"]).token
        for key in keys[:3]:
            body = compact(record(key=key, executionId=f"e-{key[-1]}"))
            assert (
                http.put(f"/v1/entries/{key}", content=body, headers=bearer(token)).status_code
                == 201
            )
        at_cap = http.post("/v1/lookup", content=compact({"keys": keys}), headers=bearer(token))
        assert len(at_cap.json()["entries"]) == 3
        touched = http.post(
            "/v1/lookup", content=compact({"keys": keys[:1]}), headers=bearer(token)
        )
        assert len(touched.json()["entries"]) == 1  # key 0 used again: key 1 is now the oldest
        body = compact(record(key=keys[3], executionId="e-3"))
        assert (
            http.put(f"/v1/entries/{keys[3]}", content=body, headers=bearer(token)).status_code
            == 201
        )
        after = http.post("/v1/lookup", content=compact({"keys": keys}), headers=bearer(token))
        assert [e["key"] for e in after.json()["entries"]] == [keys[0], keys[2], keys[3]]


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_batch_past_the_caps_evicts_as_its_records_one_by_one_would(
    state: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    database = request.getfixturevalue("postgresql_url") if engine == "postgresql" else None
    keys = [f"{n:064x}" for n in range(4)]
    with serving(state, max_records=3, database=database) as running, client(running.url) as http:
        token = running.store.add_token("ci", ["read", "publish"]).token
        body = {
            "entries": [{"key": k, "record": record(key=k, executionId=f"e-{k[-1]}")} for k in keys]
        }
        answer = http.post("/v1/entries", content=compact(body), headers=bearer(token))
        assert answer.json() == {"created": [True] * 4}
        after = http.post("/v1/lookup", content=compact({"keys": keys}), headers=bearer(token))
        # every record of the batch was used at once: the first key is the least recent
        assert [e["key"] for e in after.json()["entries"]] == keys[1:]


# Token and rm commands


class TestTokenCommands:
    def test_add_prints_the_token_once_on_stdout(self, state: Path) -> None:
        code, out, err = cli(state, "token", "add", "alice", "--scopes", "read,publish")
        assert code == 0
        token = out.strip()
        assert re.fullmatch(r"azt_[A-Za-z0-9_-]{43}", token)
        assert token not in err and "alice" in err
        code, out, err = cli(state, "token", "list")
        assert code == 0 and token not in out + err
        assert re.search(r"alice\s+read,publish\s+\S+Z\s+-", out)

    def test_add_json_and_list_json(self, state: Path) -> None:
        added = cli_ok_json(state, "token", "add", "ci", "--scopes", "publish, read")
        assert set(added) == {"name", "scopes", "token", "createdAt"}
        assert added["scopes"] == ["read", "publish"]
        listed = cli_ok_json(state, "token", "list")
        assert listed == [
            {
                "name": "ci",
                "scopes": ["read", "publish"],
                "createdAt": added["createdAt"],
                "revokedAt": None,
            }
        ]
        digest = hashlib.sha256(added["token"].encode()).hexdigest()
        _, text_list, _ = cli(state, "token", "list")
        assert digest not in json.dumps(listed) + text_list

    def test_list_and_rm_on_a_missing_store_create_nothing(self, state: Path) -> None:
        assert cli_ok_json(state, "token", "list") == []
        assert cli(state, "token", "list")[1].strip() == "No tokens."
        assert cli_ok_json(state, "rm", KEY) == {"removed": False}
        code, out, _ = cli(state, "token", "revoke", "ghost", as_json=True)
        assert code == 2 and "ghost" in json.loads(out)["error"]
        assert not state.exists()

    @pytest.mark.parametrize(
        ("args", "needle"),
        [
            (("token", "add", "n" * 65, "--scopes", "read"), "Invalid token name"),
            (("token", "add", "a b", "--scopes", "read"), "Invalid token name"),
            (("token", "add", "ok", "--scopes", "read,admin"), "Unknown scope 'admin'"),
            (("token", "add", "ok", "--scopes", "read,,publish"), "Invalid --scopes"),
            (("token", "add", "ok", "--scopes", ""), "Invalid --scopes"),
            (("rm", "AB" * 32), "Invalid key"),
            (("run", "--listen", "example.com:80"), "Invalid listen address"),
            (("run", "--listen", "127.0.0.1:65536"), "Invalid listen address"),
            (("run", "--listen", "::1:80"), "brackets"),
        ],
    )
    def test_invalid_input_exits_2_naming_the_rule(
        self, state: Path, args: tuple[str, ...], needle: str
    ) -> None:
        code, out, _ = cli(state, *args, as_json=True)
        assert code == 2
        assert needle in json.loads(out)["error"]

    def test_a_64_character_name_is_accepted(self, state: Path) -> None:
        assert cli_ok_json(state, "token", "add", "n" * 64, "--scopes", "human")["name"] == "n" * 64

    def test_names_are_never_reused_and_revoke_is_repeatable(self, state: Path) -> None:
        add_token(state, "ci", "publish")
        first = cli_ok_json(state, "token", "revoke", "ci")
        again = cli_ok_json(state, "token", "revoke", "ci", "--purge")
        assert again == {"name": "ci", "revokedAt": first["revokedAt"], "purgedEntries": 0}
        code, out, _ = cli(state, "token", "add", "ci", "--scopes", "read", as_json=True)
        assert code == 2 and "already used" in json.loads(out)["error"]
        _, text, _ = cli(state, "token", "revoke", "ci")
        assert json.loads(text)["revokedAt"] == first["revokedAt"]  # JSON even without --json

    def test_revoke_purge_and_rm_through_a_running_server(self, state: Path) -> None:
        bad = add_token(state, "bad", "publish")
        good = add_token(state, "good", "read,publish")
        other = "0" * 64
        with serving(state) as running, client(running.url) as http:
            for token, key, execution in ((bad, KEY, "b1"), (bad, other, "b2"), (good, KEY, "g1")):
                body = compact(record(key=key, executionId=execution))
                assert (
                    http.put(f"/v1/entries/{key}", content=body, headers=bearer(token)).status_code
                    == 201
                )
            revoked = cli_ok_json(state, "token", "revoke", "bad", "--purge")
            assert revoked["purgedEntries"] == 2
            found = http.post(
                "/v1/lookup", content=compact({"keys": [KEY, other]}), headers=bearer(good)
            )
            assert [e["executionId"] for e in found.json()["entries"]] == ["g1"]
            assert cli_ok_json(state, "rm", KEY) == {"removed": True}
            assert cli_ok_json(state, "rm", KEY) == {"removed": False}
            empty = http.post("/v1/lookup", content=compact({"keys": [KEY]}), headers=bearer(good))
            assert empty.json() == {"entries": []}


# ``server run`` as a real process


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    url: str
    stderr: list[str]


def _pump(stream: Any, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


@contextmanager
def server_process(
    state: Path, listen: str = "127.0.0.1:0", extra: tuple[str, ...] = ()
) -> Iterator[ServerProcess]:
    argv = subprocess_argv(["--state-dir", str(state), "server", "run", "--listen", listen, *extra])
    process = subprocess.Popen(
        argv,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    readers = [
        threading.Thread(target=_pump, args=(process.stderr, lines), daemon=True),
    ]
    for reader in readers:
        reader.start()
    seen: list[str] = []
    try:
        while True:
            line = lines.get(timeout=START_SECONDS)
            assert line is not None, f"server exited before it was ready: {seen}"
            seen.append(line)
            match = READY.search(line)
            if match:
                if match["where"] == "state":
                    assert match["state"] == str(state)
                break
        yield ServerProcess(process, f"http://{match['address']}", seen)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(STOP_SECONDS)
        for reader in readers:
            reader.join(STOP_SECONDS)
        while True:
            try:
                line = lines.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                seen.append(line)
        assert process.stdout is not None
        seen.append(process.stdout.read())
        process.stdout.close()
        assert process.stderr is not None
        process.stderr.close()


@pytest.mark.process  # a real store server process
def test_server_run_serves_then_stops_gracefully_on_sigterm(state: Path) -> None:
    token = add_token(state, "alice", "read,publish,human")
    with server_process(state) as server:
        address = server.url.removeprefix("http://")
        assert re.fullmatch(r"127\.0\.0\.1:\d+", address) and not address.endswith(":0")
        with client(server.url) as http:
            whoami = http.get("/v1/whoami", headers=bearer(token))
            assert whoami.json() == {"principal": "alice", "scopes": ["read", "publish", "human"]}
            # A token sent where it does not belong must not end up in any log.
            http.get(f"/v1/whoami?access_token={token}")
            http.get(f"/v1/{token}")
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(STOP_SECONDS) == 0
    output = "".join(server.stderr)
    assert token not in output
    assert "Traceback" not in output
    assert not any("warning" in line for line in server.stderr)


@pytest.mark.process  # a real store server process
def test_server_run_warns_off_loopback_and_stops_on_ctrl_c(state: Path) -> None:
    with server_process(state, "0.0.0.0:0") as server:
        assert "warning: 0.0.0.0:0 is not a loopback address" in server.stderr[0]
        assert "plain HTTP" in server.stderr[0]
        port = server.url.rsplit(":", 1)[1]
        with client(f"http://127.0.0.1:{port}") as http:
            error_of(http.get("/v1/whoami"), 401)
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(STOP_SECONDS) == 0
    assert "Traceback" not in "".join(server.stderr)
    assert "KeyboardInterrupt" not in "".join(server.stderr)


def test_server_run_reports_a_taken_port(state: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, _ = cli(state, "run", "--listen", f"127.0.0.1:{port}", as_json=True)
    assert code == 2
    assert json.loads(out)["error"].startswith(f"Cannot listen on 127.0.0.1:{port}")


# Concurrency


@pytest.mark.process  # a real server process and racing commands
def test_token_commands_race_on_the_same_file_while_the_server_runs(state: Path) -> None:
    seed = add_token(state, "seed", "read,publish")
    with serving(state) as running, client(running.url) as http:
        stop_traffic = threading.Event()
        statuses: list[int] = []

        def traffic() -> None:
            with client(running.url) as own:
                n = 0
                while not stop_traffic.is_set():
                    key = f"{n:064x}"
                    body = compact(record(key=key, executionId=f"t{n}"))
                    statuses.append(
                        own.put(
                            f"/v1/entries/{key}", content=body, headers=bearer(seed)
                        ).status_code
                    )
                    statuses.append(
                        own.post(
                            "/v1/lookup", content=compact({"keys": [key]}), headers=bearer(seed)
                        ).status_code
                    )
                    n += 1
                    stop_traffic.wait(TRAFFIC_PAUSE_SECONDS)  # leave CPU to the commands

        load = threading.Thread(target=traffic)
        load.start()
        commands = [["token", "add", f"w{n}", "--scopes", "read"] for n in range(2)]
        commands += [["token", "add", "dup", "--scopes", "publish"] for _ in range(2)]
        processes = [
            subprocess.Popen(
                subprocess_argv(["--state-dir", str(state), "--json", "server", *args]),
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for args in commands
        ]
        results = [(p.communicate(timeout=COMMAND_SECONDS), p.returncode) for p in processes]
        stop_traffic.set()
        load.join(STOP_SECONDS)

        added = [json.loads(out) for (out, _err), code in results[:2] if code == 0]
        assert [a["name"] for a in added] == ["w0", "w1"], results
        for issued in added:
            whoami = http.get("/v1/whoami", headers=bearer(issued["token"]))
            assert whoami.json() == {"principal": issued["name"], "scopes": ["read"]}
        assert sorted(code for _output, code in results[2:]) == [0, 2], results[2:]
        (loser,) = [json.loads(out)["error"] for (out, _e), code in results[2:] if code == 2]
        assert "already used" in loser
        names = [t["name"] for t in cli_ok_json(state, "token", "list")]
        assert names == ["dup", "seed", "w0", "w1"]
        assert statuses and set(statuses) <= {200, 201}, set(statuses)
