"""The review store on PostgreSQL as a team runs it: ``server token … --database URL``, two
``server run`` processes (replicas) on one database serving one store consistently, the
health route without a token, and one JSON log line per request that never holds a token."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from artifactize.entrypoints.cli.context import CliContext
from tests.integration.test_review_store_server import (
    bearer,
    cli,
    client,
    compact,
    record,
    server_process,
)
from tests.support import postgres
from tests.support.processes import no_process_left_behind

postgresql_server = postgres.postgresql_server
postgresql_url = postgres.postgresql_url

KEY = "cd" * 32
RACERS = 8


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(CliContext, "options", CliContext.options)
    with no_process_left_behind():
        yield


def cli_json(state: Path, database: str, *args: str):
    code, out, err = cli(state, *args, "--database", database, as_json=True)
    assert code == 0, (out, err)
    return json.loads(out)


def test_token_commands_and_rm_take_the_database(tmp_path: Path, postgresql_url: str) -> None:
    state = tmp_path / "state"
    issued = cli_json(state, postgresql_url, "token", "add", "ci", "--scopes", "read,publish")
    assert [t["name"] for t in cli_json(state, postgresql_url, "token", "list")] == ["ci"]
    assert cli_json(state, postgresql_url, "rm", KEY) == {"removed": False}
    revoked = cli_json(state, postgresql_url, "token", "revoke", "ci")
    assert revoked["name"] == "ci" and issued["token"]
    assert not state.exists() or not any(state.iterdir())  # nothing written locally


def test_a_bad_database_url_is_a_clear_error(tmp_path: Path) -> None:
    state = tmp_path / "state"
    secret = "hunter2-secret"
    for url, rule in (
        ("mysql://u@h/db", "Unsupported --database URL scheme 'mysql'"),
        ("postgresql+psycopg://u@127.0.0.1:1", "name the PostgreSQL database"),
        ("sqlite://", "needs a file path"),
        (f"postgresql+psycopg://u:{secret}@127.0.0.1:1/db", "Cannot open the review store"),
    ):
        code, out, _err = cli(state, "token", "list", "--database", url, as_json=True)
        assert code == 2, out
        assert rule in json.loads(out)["error"]
        assert secret not in out


@pytest.mark.process  # a real store server process
def test_two_servers_on_one_database_serve_one_store(tmp_path: Path, postgresql_url: str) -> None:
    state = tmp_path / "state"
    token = cli_json(state, postgresql_url, "token", "add", "ci", "--scopes", "read,publish")[
        "token"
    ]
    extra = ("--database", postgresql_url)
    with (
        server_process(tmp_path / "a", extra=extra) as first,
        server_process(tmp_path / "b", extra=extra) as second,
    ):
        urls = [first.url, second.url]
        with client(first.url) as http:
            health = http.get("/v1/health")
            assert (health.status_code, health.json()) == (200, {"status": "ok"})
        # Eight clients race to publish one (key, execution) through both replicas.
        barrier = threading.Barrier(RACERS)
        statuses: list[int] = [0] * RACERS

        def publish(index: int) -> None:
            body = compact(record(key=KEY, executionId="one", result={"verdict": "GREEN"}))
            with client(urls[index % 2]) as own:
                barrier.wait()
                statuses[index] = own.put(
                    f"/v1/entries/{KEY}", content=body, headers=bearer(token)
                ).status_code

        threads = [threading.Thread(target=publish, args=(i,)) for i in range(RACERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert sorted(statuses) == [200] * (RACERS - 1) + [201]
        # A lease taken through one replica is seen and refused through the other.
        with client(first.url) as a, client(second.url) as b:
            took = a.post(f"/v1/leases/{KEY}", json={"holder": "m1"}, headers=bearer(token))
            assert took.json()["granted"] is True
            other = b.post(f"/v1/leases/{KEY}", json={"holder": "m2"}, headers=bearer(token))
            assert other.json()["granted"] is False and other.json()["holder"] == "m1"
            found = b.post("/v1/lookup", content=compact({"keys": [KEY]}), headers=bearer(token))
            assert [e["executionId"] for e in found.json()["entries"]] == ["one"]
            listed = b.get("/v1/leases", headers=bearer(token)).json()
            assert [lease["key"] for lease in listed["leases"]] == [KEY]
            assert listed["leaseSeconds"] == 60
    # The stderr lists are complete once the servers stopped.
    logged = [json.loads(line) for line in first.stderr[1:] if line.startswith("{")]
    assert {"method", "path", "status", "durationMs", "principal", "time", "key"} <= set(logged[0])
    health_line = next(line for line in logged if line["path"] == "/v1/health")
    assert health_line["principal"] is None and health_line["status"] == 200
    assert any(line["principal"] == "ci" and line["key"] == KEY for line in logged)
    assert token not in "".join(first.stderr + second.stderr)
