"""The store server's lease routes, health route and request log, over real HTTP on SQLite
(PostgreSQL: test_review_store_postgresql.py), and ``server run --lease-seconds`` limits."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from artifactize.domain.reviews.remote.leases import LEASE_SECONDS_MAX, LEASE_SECONDS_MIN
from artifactize.entrypoints.cli.context import CliContext
from tests.integration.test_review_store_server import (
    STOP_SECONDS,
    add_token,
    bearer,
    cli,
    client,
    error_of,
    record,
    server_process,
    serving,
)
from tests.support.processes import no_process_left_behind

KEY = "ef" * 32


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(CliContext, "options", CliContext.options)
    with no_process_left_behind():
        yield


def test_lease_routes(tmp_path: Path) -> None:
    state = tmp_path / "state"
    ci = add_token(state, "ci", "read,publish")
    reader = add_token(state, "reader", "read")
    with serving(state) as running, client(running.url) as http:
        took = http.post(f"/v1/leases/{KEY}", json={"holder": "m1"}, headers=bearer(ci))
        assert took.status_code == 200
        lease = took.json()
        assert (lease["granted"], lease["key"], lease["holder"], lease["principal"]) == (
            True,
            KEY,
            "m1",
            "ci",
        )
        assert lease["leaseSeconds"] == 60 and lease["expiresAt"] > lease["acquiredAt"]
        other = http.post(f"/v1/leases/{KEY}", json={"holder": "m2"}, headers=bearer(ci)).json()
        assert (other["granted"], other["holder"]) == (False, "m1")
        listed = http.get("/v1/leases", headers=bearer(reader)).json()
        assert [entry["holder"] for entry in listed["leases"]] == ["m1"]
        # Scopes: leases are taken with publish, listed with read.
        refused = http.post(f"/v1/leases/{KEY}", json={"holder": "m3"}, headers=bearer(reader))
        assert "lacks the publish scope" in error_of(refused, 403)
        assert error_of(http.get("/v1/leases"), 401)
        # Bad input.
        bad_key = http.post("/v1/leases/ABC", json={"holder": "m1"}, headers=bearer(ci))
        assert "not a reuse key" in error_of(bad_key, 400)
        bad_holder = http.post(f"/v1/leases/{KEY}", json={"holder": " "}, headers=bearer(ci))
        assert "holder must be" in error_of(bad_holder, 400)
        not_json = http.post(f"/v1/leases/{KEY}", content=b"{", headers=bearer(ci))
        assert "not valid JSON" in error_of(not_json, 400)
        # Release: only by the holder.
        release = f"/v1/leases/{KEY}/release"
        assert http.post(release, json={"holder": "m2"}, headers=bearer(ci)).json() == {
            "released": False
        }
        assert http.post(release, json={"holder": "m1"}, headers=bearer(ci)).json() == {
            "released": True
        }
        assert http.get("/v1/leases", headers=bearer(reader)).json()["leases"] == []


def test_a_granted_lease_answers_the_keys_latest_record_to_a_reader(tmp_path: Path) -> None:
    state = tmp_path / "state"
    ci = add_token(state, "ci", "read,publish")
    publisher = add_token(state, "pub", "publish")
    stored_key = "ab" * 32
    with serving(state) as running, client(running.url) as http:

        def lease(key: str, holder: str, token: str) -> dict[str, Any]:
            answer = http.post(f"/v1/leases/{key}", json={"holder": holder}, headers=bearer(token))
            assert answer.status_code == 200, answer.text
            found: dict[str, Any] = answer.json()
            return found

        assert lease(KEY, "m1", ci)["latest"] is None  # granted, no record of the key yet
        assert "latest" not in lease(KEY, "m2", ci)  # held by m1: not granted, no record
        sent = record(stored_key)
        put = http.put(f"/v1/entries/{stored_key}", json=sent, headers=bearer(ci))
        assert put.status_code == 201
        latest = lease(stored_key, "m1", ci)["latest"]
        assert latest == {**sent, "publisher": "ci", "publishedAt": latest["publishedAt"]}
        # a token that may publish but not read is told no record
        assert "latest" not in lease("cd" * 32, "m3", publisher)


def test_a_put_releases_the_lease_its_header_names_once_stored(tmp_path: Path) -> None:
    state = tmp_path / "state"
    ci = add_token(state, "ci", "read,publish")
    key = "ab" * 32
    with serving(state) as running, client(running.url) as http:
        taken = http.post(f"/v1/leases/{key}", json={"holder": "m1"}, headers=bearer(ci))
        assert taken.json()["granted"]

        def put(holder: str, execution: str) -> Any:
            headers = {**bearer(ci), "artifactize-release-lease": holder}
            sent = record(key, executionId=execution)
            return http.put(f"/v1/entries/{key}", json=sent, headers=headers)

        bad = put("not a holder", "e-0")
        assert "artifactize-release-lease: holder must be" in error_of(bad, 400)
        assert http.post("/v1/lookup", json={"keys": [key]}, headers=bearer(ci)).json() == {
            "entries": []
        }
        assert put("m2", "e-1").json() == {"created": True, "released": False}  # not m2's
        assert [
            entry["holder"] for entry in http.get("/v1/leases", headers=bearer(ci)).json()["leases"]
        ] == ["m1"]
        assert put("m1", "e-2").json() == {"created": True, "released": True}
        assert http.get("/v1/leases", headers=bearer(ci)).json()["leases"] == []
        plain = http.put(
            f"/v1/entries/{key}", json=record(key, executionId="e-3"), headers=bearer(ci)
        )
        assert plain.json() == {"created": True}  # without the header: as before


@pytest.mark.process  # a real store server process
def test_health_needs_no_token_and_every_request_is_logged(tmp_path: Path) -> None:
    state = tmp_path / "state"
    token = add_token(state, "ci", "read,publish")
    with server_process(state) as server, client(server.url) as http:
        health = http.get("/v1/health")
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        http.get("/v1/whoami", headers=bearer(token))
        http.get(f"/v1/whoami?token={token}")
        http.post("/v1/lookup", json={"keys": [KEY]}, headers=bearer("azt_wrong"))
        # A graceful stop: a line is written as its request ends, which can come just after
        # the client has the response; a killed server could lose the last line.
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(STOP_SECONDS) == 0
    lines = [json.loads(line) for line in server.stderr if line.startswith("{")]
    assert [(line["method"], line["path"], line["status"]) for line in lines] == [
        ("GET", "/v1/health", 200),
        ("GET", "/v1/whoami", 200),
        ("GET", "/v1/whoami", 401),
        ("POST", "/v1/lookup", 401),
    ]
    assert [line["principal"] for line in lines] == [None, "ci", None, None]
    assert all(isinstance(line["durationMs"], float) and line["time"] for line in lines)
    assert token not in "".join(server.stderr) and "azt_wrong" not in "".join(server.stderr)


@pytest.mark.parametrize("seconds", [LEASE_SECONDS_MIN - 1, LEASE_SECONDS_MAX + 1])
def test_lease_seconds_past_the_limits_is_refused(tmp_path: Path, seconds: int) -> None:
    code, out, _err = cli(tmp_path / "state", "run", "--lease-seconds", str(seconds), as_json=True)
    assert code == 2
    assert json.loads(out)["error"].startswith(
        "Invalid --lease-seconds: lease seconds must be 1-60"
    )
    assert not (tmp_path / "state").exists()


@pytest.mark.process  # a real store server process
def test_lease_seconds_at_the_limit_is_served(tmp_path: Path) -> None:
    state = tmp_path / "state"
    token = add_token(state, "ci", "read,publish")
    extra = ("--lease-seconds", str(LEASE_SECONDS_MIN))
    with server_process(state, extra=extra) as server, client(server.url) as http:
        lease = http.post(f"/v1/leases/{KEY}", json={"holder": "m1"}, headers=bearer(token))
        assert lease.json()["leaseSeconds"] == LEASE_SECONDS_MIN
