"""The web inbox with a team review store: the real store server on 127.0.0.1 (SQLite and
PostgreSQL), a second "machine" (another state home) whose ``verify --wait`` announces its
waiting request, and ``artifactize web`` on the first machine listing it beside its own,
read-only, until it settles. Then a store that is down, and one that never answers.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifactize.domain.reviews.remote.waiting_requests import WAITING_SECONDS
from artifactize.entrypoints.web.team import TEAM_ANSWER_SECONDS
from artifactize.ports.store_server_storage import WaitingEntry
from tests.integration.test_review_store_server import Running, serving
from tests.support import postgres
from tests.support.fake_review_store import Canned, FakeReviewStore
from tests.support.postgres import PostgresServer
from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.web_server import STOPPED, WebServer, World, wait_until

postgresql_server = postgres.postgresql_server
GREEN_FIELDS = '{"approved": true, "score": 3}'
EVAL_LINK = re.compile(r'<a href="(/(?:request|team)/[^"]+)">doc/signoff</a>')


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    database: str | None = None
    server: PostgresServer | None = None
    name = ""
    if request.param == "postgresql":
        server = request.getfixturevalue("postgresql_server")
        name = server.create_database()
        database = server.url(name)
    try:
        with serving(tmp_path / "store", database=database) as running:
            yield running
    finally:
        if server is not None:
            server.drop_database(name)


def remote(url: str, token: str) -> dict[str, str]:
    return {"ARTIFACTIZE_REMOTE": url + "/", "ARTIFACTIZE_REMOTE_TOKEN": token}


def team_rows(page: str) -> list[str]:
    return re.findall(r"<tr><td>.*?</tr>", page)


def title_count(page: str) -> int:
    found = re.search(r"<title>\((\d+)\)", page)
    assert found is not None, page[:300]
    return int(found.group(1))


def test_a_request_waiting_on_another_machine_shows_read_only_until_it_settles(
    tmp_path: Path, store: Running
) -> None:
    bob_token = store.store.add_token("bob", ["read", "publish"]).token
    alice_token = store.store.add_token("alice", ["read"]).token
    here = World(tmp_path / "here", remote(store.url, alice_token))
    there = World(tmp_path / "there", remote(store.url, bob_token))
    _, local_id = here.waiting()
    waiter = subprocess.Popen(
        there.argv("--json", "verify", "--all", "--wait", "--timeout-ms", "120000"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=there.env,
    )
    web: WebServer | None = None
    try:
        announced = wait_until(lambda: store.store.list_waiting("repo", None, 10))
        assert announced, "verify --wait never announced its request"
        (entry,) = announced
        remote_id = entry.request_id
        assert entry.publisher == "bob" and remote_id != local_id
        # A request both local and announced is listed once, as this machine's.
        mine = json.loads(entry.data) | {"requestId": local_id, "machine": "alice@here"}
        store.store.announce_waiting(
            WaitingEntry(local_id, "repo", "alice", entry.created_at, json.dumps(mine)),
            WAITING_SECONDS,
        )
        web = WebServer(here)
        page = web.client.get("/").text
        rows = team_rows(page)
        assert len(rows) == 2 and title_count(page) == 2, page
        assert "alice@here" not in page and "invalid" not in page
        assert [row for row in rows if "this machine" in row and local_id in row]
        [theirs] = [row for row in rows if "team store: someone-else@" in row]
        assert f'href="/team/{remote_id}"' in theirs and "(bob)" in theirs
        # Claimed on the other machine: the announcement follows, and the filters see it.
        code, _ = there.cli("request", "claim", remote_id, "--reviewer", "carol")
        assert code == 0
        assert wait_until(lambda: "carol" in web.client.get("/").text, WAITING_SECONDS)
        others = web.client.get("/", params={"claim": "others"}).text
        assert len(team_rows(others)) == 1 and remote_id in others
        unclaimed = web.client.get("/", params={"claim": "unclaimed"}).text
        assert len(team_rows(unclaimed)) == 1 and local_id in unclaimed
        assert not team_rows(web.client.get("/", params={"q": "nothing"}).text)
        # Read-only here, saying where to act; the lifecycle's routes do not know it.
        detail = web.client.get(f"/team/{remote_id}")
        assert detail.status_code == 200 and "read-only here" in detail.text
        assert "Claim</button>" not in detail.text and "carol" in detail.text
        assert web.client.get(f"/request/{remote_id}").status_code == 404
        # Settled there: verify --wait ends GREEN, withdraws, and the inbox drops it.
        code, settled = there.cli(
            "request", "submit", remote_id, "--reviewer", "carol", "--verdict", "GREEN",
            "--fields", GREEN_FIELDS,
        )  # fmt: skip
        assert code == 0, settled
        assert waiter.wait(60) == 0
        assert [e.request_id for e in store.store.list_waiting("repo", None, 10)] == [local_id]
        page = wait_until(
            lambda: remote_id not in (text := web.client.get("/").text) and text, WAITING_SECONDS
        )
        assert len(team_rows(page)) == 1 and title_count(page) == 1
    finally:
        if waiter.poll() is None:
            waiter.terminate()
            waiter.wait(30)
        if web is not None:
            assert web.stop() == STOPPED


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_store_leaves_the_local_inbox_and_a_notice(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    here = World(tmp_path, remote(url, "azt_x"))
    _, local_id = here.waiting()
    web = WebServer(here)
    try:
        page = web.client.get("/")
        assert page.status_code == 200 and local_id in page.text
        assert title_count(page.text) == 1
        assert re.search(r'role="status">The remote store at [^<]* is unreachable', page.text)
        assert "showing this machine&#x27;s requests only" in page.text
    finally:
        assert web.stop() == STOPPED


def test_a_store_that_never_answers_costs_the_page_a_bounded_wait(tmp_path: Path) -> None:
    with FakeReviewStore({"tok": ("alice", ("read",))}) as fake:
        here = World(tmp_path, {"ARTIFACTIZE_REMOTE": fake.url, "ARTIFACTIZE_REMOTE_TOKEN": "tok"})
        _, local_id = here.waiting()
        fake.script(*[Canned(delay=TEAM_ANSWER_SECONDS * 3, body={}) for _ in range(3)])
        web = WebServer(here)
        try:
            page = web.client.get("/")
            assert page.status_code == 200 and local_id in page.text
            assert f"did not answer within {TEAM_ANSWER_SECONDS:g} s" in page.text
        finally:
            assert web.stop() == STOPPED


def test_a_token_without_read_is_said_once_and_team_pages_need_the_web_token(
    tmp_path: Path,
) -> None:
    token = "azt_writer-0123456789"  # long enough not to be redacted out of the store's text
    with FakeReviewStore({token: ("writer", ("publish",))}) as fake:
        here = World(tmp_path, {"ARTIFACTIZE_REMOTE": fake.url, "ARTIFACTIZE_REMOTE_TOKEN": token})
        _, local_id = here.waiting()
        web = WebServer(here)
        try:
            page = web.client.get("/").text
            assert local_id in page and title_count(page) == 1
            assert "The team store refused the listing: " in page
            assert "This token lacks the read scope; showing this machine" in page
            with web.anonymous() as anonymous:
                assert anonymous.get("/team/run-x-1").status_code == 401
            missing = web.client.get("/team/run-x-1")
            assert missing.status_code == 404 and "lists no waiting request run-x-1" in missing.text
        finally:
            assert web.stop() == STOPPED
