"""``artifactize web``'s safety rules over real HTTP on 127.0.0.1, without a browser: the
token, Host, Origin and CSRF checks, the size of a form, the Content-Security-Policy,
viewers held to the scope (no escape, no symlink), and script in Markdown and SVG.

One server and one waiting request serve the whole module; a test that changes the request
puts it back as it found it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from artifactize.domain.tools.locations import SYMLINK_REFUSED
from artifactize.entrypoints.web.security import FORM_MAX_BYTES, NO_CSRF, NO_TOKEN_TITLE
from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.web_server import STOPPED, WebServer, World


@dataclass(frozen=True)
class Shared:
    world: World
    server: WebServer
    run_id: str
    request_id: str


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    world = World(tmp_path_factory.mktemp("web"))
    run_id, request_id = world.waiting()
    server = WebServer(world)
    try:
        yield Shared(world, server, run_id, request_id)
    finally:
        assert server.stop() == STOPPED


@pytest.fixture(autouse=True)
def no_process_left_behind(shared: Shared) -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


def test_without_the_token_a_page_is_401_and_says_where_the_address_is(shared: Shared) -> None:
    server = shared.server
    with server.anonymous() as anonymous:
        for path in ("/", "/monitor", "/static/web.js"):
            response = anonymous.get(path)
            assert response.status_code == 401
            assert NO_TOKEN_TITLE in response.text and "?token=" in response.text
        assert anonymous.get("/?token=wrong").status_code == 401
        assert anonymous.post("/request/x/claim", data={"csrf": "x"}).status_code == 401


def test_the_token_signs_the_browser_in_and_leaves_the_address(shared: Shared) -> None:
    server = shared.server
    with server.anonymous() as anonymous:
        first = anonymous.get(f"/monitor?token={server.token}", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "/monitor"
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert anonymous.get("/monitor").status_code == 200  # the cookie now


def test_a_foreign_host_or_origin_is_refused(shared: Shared) -> None:
    world = shared.world
    server = shared.server
    request_id = shared.request_id
    csrf = server.csrf(request_id)
    before = world.show(request_id)["claim"]
    rebinding = server.client.get("/", headers={"host": f"evil.example:{server.port}"})
    assert rebinding.status_code == 403 and "not this server" in rebinding.text
    forged = server.post(
        f"/request/{request_id}/claim", {"csrf": csrf}, origin="http://evil.example"
    )
    assert forged.status_code == 403
    assert world.show(request_id)["claim"] == before is None
    own = server.post(f"/request/{request_id}/claim", {"csrf": csrf}, origin=server.base)
    assert own.status_code == 303
    assert world.show(request_id)["claim"]["reviewer"] == "alice"
    server.post(f"/request/{request_id}/unclaim", {"csrf": csrf}, origin=server.base)
    assert world.show(request_id)["claim"] is None  # as the other tests of the module find it


def test_a_post_without_the_csrf_token_is_403_even_from_the_right_origin(shared: Shared) -> None:
    world = shared.world
    server = shared.server
    request_id = shared.request_id
    before = world.show(request_id)["claim"]
    for data in ({}, {"csrf": "0" * 64}):
        refused = server.post(f"/request/{request_id}/claim", data, origin=server.base)
        assert refused.status_code == 403 and NO_CSRF in refused.text
    header = server.post(
        f"/request/{request_id}/claim", {}, origin=server.base, **{"x-csrf-token": "nope"}
    )
    assert header.status_code == 403
    assert world.show(request_id)["claim"] == before


def test_a_form_over_the_limit_is_413(shared: Shared) -> None:
    server = shared.server
    request_id = shared.request_id
    csrf = server.csrf(request_id)
    at_limit = "x" * (FORM_MAX_BYTES - len("csrf=&pad=") - len(csrf))
    fits = server.post(f"/request/{request_id}/stop", {"csrf": csrf, "pad": at_limit})
    assert fits.status_code == 303  # Stop running tools: harmless, nothing runs
    over = server.post(f"/request/{request_id}/stop", {"csrf": csrf, "pad": at_limit + "x"})
    assert over.status_code == 413


def test_every_page_carries_a_strict_content_security_policy(shared: Shared) -> None:
    server = shared.server
    request_id = shared.request_id
    for path in ("/", "/monitor", f"/request/{request_id}", "/nothing-here"):
        policy = server.client.get(path).headers["content-security-policy"]
        assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
        assert "*" not in policy and "object-src 'none'" in policy
        assert "script-src 'self'" in policy
    page = server.client.get(f"/request/{request_id}").text
    assert "<script>" not in page and 'style="' not in page  # nothing inline to allow


def test_a_viewer_shows_nothing_outside_the_scope_or_through_a_symlink(shared: Shared) -> None:
    world = shared.world
    server = shared.server
    request_id = shared.request_id
    (world.repo / "doc" / "link.txt").symlink_to(world.repo / "secret.txt")  # after verify
    notes = server.client.get(f"/request/{request_id}/view", params={"path": "notes.txt"})
    assert notes.status_code == 200 and "The answer is 42." in notes.text
    assert re.search(r'<td class="ln">2</td><td><code>Second line.</code>', notes.text)
    for path in ("../secret.txt", "/etc/passwd", "../../etc/passwd"):
        escaped = server.client.get(f"/request/{request_id}/view", params={"path": path})
        assert escaped.status_code == 404, path
        assert "outside the scope" not in escaped.text and "root:" not in escaped.text
    for action in ("view", "raw"):
        linked = server.client.get(f"/request/{request_id}/{action}", params={"path": "link.txt"})
        assert linked.status_code == 404 and SYMLINK_REFUSED in linked.text
    page = server.client.get(f"/request/{request_id}").text
    assert ">link.txt<" not in page  # a symlink is not offered as a file
    for name in ("notes.txt", "guide.md", "diagram.svg", "pixel.png"):
        assert f">{name}</a>" in page


def test_script_in_markdown_and_svg_cannot_run(shared: Shared) -> None:
    server = shared.server
    request_id = shared.request_id
    guide = server.client.get(f"/request/{request_id}/view", params={"path": "guide.md"})
    assert "<strong>42</strong>" in guide.text  # rendered
    assert "<script>window.pwned" not in guide.text
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in guide.text
    assert 'href="javascript:' not in guide.text
    svg = server.client.get(f"/request/{request_id}/raw", params={"path": "diagram.svg"})
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
    policy = svg.headers["content-security-policy"]
    assert "sandbox" in policy and "default-src 'none'" in policy and "script" not in policy
    assert svg.headers["x-content-type-options"] == "nosniff"
    viewer = server.client.get(f"/request/{request_id}/view", params={"path": "diagram.svg"})
    assert '<img class="image"' in viewer.text and "onload" not in viewer.text
    png = server.client.get(f"/request/{request_id}/raw", params={"path": "pixel.png"})
    assert png.headers["content-type"] == "image/png"
    html_file = server.client.get(f"/request/{request_id}/raw", params={"path": "page.html"})
    assert html_file.status_code == 415  # never served as a page of this origin


def test_a_bad_or_taken_port_is_a_usage_error(shared: Shared) -> None:
    world = shared.world
    server = shared.server
    code, answer = world.cli("web", "--no-browser", "--port", "65536")
    assert code == 2 and answer == {"error": "--port 65536: give 0 (a free port) or 1-65535."}
    code, answer = world.cli("web", "--no-browser", "--port", str(server.port))
    assert code == 2 and answer["error"].startswith(f"--port {server.port}: cannot listen")


def test_the_live_inbox_keeps_its_filters(shared: Shared) -> None:
    server = shared.server
    request_id = shared.request_id
    page = server.client.get("/", params={"claim": "unclaimed", "q": "sign"}).text
    assert 'data-live="/inbox/events?claim=unclaimed&amp;q=sign"' in page
    with server.client.stream(
        "GET", "/inbox/events", params={"claim": "unclaimed", "q": "sign"}
    ) as events:
        first = next(line for line in events.iter_lines() if line.startswith("data:"))
    assert f'href="/request/{request_id}">doc/signoff</a>' in first
    with server.client.stream("GET", "/inbox/events", params={"q": "nothing"}) as events:
        first = next(line for line in events.iter_lines() if line.startswith("data:"))
    assert "No Human reviews are waiting." in first


def test_a_locked_state_is_a_page_saying_so_and_nothing_changes(shared: Shared) -> None:
    world, server, request_id = shared.world, shared.server, shared.request_id
    csrf = server.csrf(request_id)
    lock = sqlite3.connect(world.state / "state.sqlite", timeout=1)
    try:
        lock.execute("BEGIN IMMEDIATE")  # another writer holds the state past the busy wait
        refused = server.post(f"/request/{request_id}/claim", {"csrf": csrf})
    finally:
        lock.rollback()
        lock.close()
    assert refused.status_code == 503
    assert (
        "The state could not be read or written" in refused.text and "Traceback" not in refused.text
    )
    assert world.show(request_id)["claim"] is None
