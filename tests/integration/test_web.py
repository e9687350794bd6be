"""``artifactize web`` over real HTTP on 127.0.0.1, without a browser: the lifecycle actions
and their refusals (claimed or settled elsewhere, invalid or oversized verdicts, edited
declarations), the live Tool log, what changed since the last verdict, and a clean stop.

The safety rules are tests/integration/test_web_security.py; the browser flow is
tests/browser/test_web_browser.py.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import psutil
import pytest

from artifactize.domain.use_cases.human_reviews import HUMAN_RESULT_MAX_BYTES
from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.web_server import (
    STOPPED,
    WebServer,
    World,
    environment,
    sleep_mark,
    wait_until,
)

READ_SECONDS = 20


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


@pytest.fixture
def server(world: World) -> Iterator[WebServer]:
    web = WebServer(world)
    try:
        yield web
    finally:
        assert web.stop() == STOPPED


def _log_until(server: WebServer, request_id: str, *wanted: str) -> str:
    """The Tool log's live stream, read until every ``wanted`` text is in one event."""
    deadline = time.monotonic() + READ_SECONDS
    with server.client.stream("GET", f"/request/{request_id}/log") as events:
        assert events.headers["content-type"].startswith("text/event-stream")
        for line in events.iter_lines():
            if all(text in line for text in wanted):
                return line
            assert time.monotonic() < deadline, f"never saw {wanted}: {line}"
    raise AssertionError("the stream ended")


def test_claim_run_a_tool_live_and_submit_an_invalid_then_a_valid_verdict(
    world: World, server: WebServer
) -> None:
    run_id, request_id = world.waiting()
    csrf = server.csrf(request_id)
    before = server.client.get(f"/request/{request_id}").text
    assert re.search(r"<button disabled>show_doc</button>", before)
    refused = server.post(f"/request/{request_id}/tool", {"csrf": csrf, "tool": "show_doc"})
    assert refused.status_code == 409 and "Claim the request first" in refused.text
    assert server.post(f"/request/{request_id}/claim", {"csrf": csrf}).status_code == 303
    started = server.post(
        f"/request/{request_id}/tool", {"tool": "show_doc"}, **{"x-csrf-token": csrf}
    )
    assert started.status_code == 202
    first = _log_until(server, request_id, "The answer is 42.")
    assert "· show · doc" in first and "■" not in first  # live: before the program ended
    world.gate.touch()
    ended = _log_until(server, request_id, "■ exit 0")
    assert '<div class="row stderr" data-stream="stderr">a warning</div>' in ended
    launched = server.post(
        f"/request/{request_id}/tool", {"tool": "serve_doc"}, **{"x-csrf-token": csrf}
    )
    assert launched.status_code == 202
    _log_until(server, request_id, "· serve · doc", "preview on")

    invalid = server.post(
        f"/request/{request_id}/submit", {"csrf": csrf, "verdict": "GREEN", "GREEN-score": "0"}
    )
    assert invalid.status_code == 422
    field = re.search(r'<input id="GREEN-score"[^>]*>', invalid.text)
    assert field is not None
    assert 'aria-invalid="true"' in field[0]
    assert 'aria-describedby="GREEN-score-error GREEN-score-hint"' in field[0]
    assert '<p class="error" id="GREEN-score-error">must be &gt;= 1</p>' in invalid.text
    assert world.show(request_id)["status"] == "WAITING_HUMAN"

    valid = server.post(
        f"/request/{request_id}/submit", {"csrf": csrf, "verdict": "GREEN", "GREEN-score": "3"}
    )
    assert valid.status_code == 200 and "Submitted GREEN for doc/signoff." in valid.text
    assert f"<p>Run {run_id}: GREEN</p>" in valid.text  # the settled verdict and its Run
    view = world.show(request_id)
    assert view["status"] == "GREEN" and view["reviewer"] == "alice"
    assert view["result"] == {"verdict": "GREEN", "approved": True, "score": 3}
    assert view["claim"] is None
    code, run = world.cli("run", "show", run_id)
    assert code == 0 and run["status"] == "GREEN"
    tree = server.client.get(f"/monitor/run/{run_id}").text
    assert "GREEN" in tree and 'class="header"' in tree and 'aria-label="Run tree"' in tree
    assert server.client.get(f"/monitor/run/{run_id}").text == tree  # kept for the same read
    assert f'<a href="/monitor/run/{run_id}">{run_id}</a>' in server.client.get("/monitor").text


def test_a_missing_field_and_a_wrong_number_are_shown_at_their_field(
    world: World, server: WebServer
) -> None:
    request_id, csrf = server.claimed(world)
    empty = server.post(f"/request/{request_id}/submit", {"csrf": csrf, "verdict": "RED"})
    assert empty.status_code == 422
    assert re.search(r'<input id="RED-reason"[^>]*aria-invalid="true"', empty.text)
    assert ">must be at least 1 character long</p>" in empty.text
    missing = server.post(f"/request/{request_id}/submit", {"csrf": csrf, "verdict": "GREEN"})
    assert re.search(r'<input id="GREEN-score"[^>]*aria-invalid="true"', missing.text)
    assert ">must have the required properties [&quot;score&quot;]</p>" in missing.text
    text = server.post(
        f"/request/{request_id}/submit", {"csrf": csrf, "verdict": "GREEN", "GREEN-score": "x"}
    )
    assert text.status_code == 422 and "score: enter an integer." in text.text
    assert world.show(request_id)["status"] == "WAITING_HUMAN"


def test_a_verdict_over_the_size_limit_is_refused_and_the_request_keeps_waiting(
    world: World, server: WebServer
) -> None:
    request_id, csrf = server.claimed(world)
    reason = "r" * HUMAN_RESULT_MAX_BYTES
    over = server.post(
        f"/request/{request_id}/submit", {"csrf": csrf, "verdict": "RED", "RED-reason": reason}
    )
    assert over.status_code == 422 and "exceeds" in over.text
    view = world.show(request_id)
    assert view["status"] == "WAITING_HUMAN" and view["claim"]["reviewer"] == "alice"


def test_a_request_settled_elsewhere_refuses_the_page_and_stays_settled(
    world: World, server: WebServer
) -> None:
    _, request_id = world.waiting()
    csrf = server.csrf(request_id)
    assert world.cli("request", "claim", request_id, "--reviewer", "bob")[0] == 0
    taken = server.post(f"/request/{request_id}/claim", {"csrf": csrf})
    assert taken.status_code == 409 and "Only the Human claimant" in taken.text
    code, _ = world.cli(
        "request", "submit", request_id, "--reviewer", "bob", "--verdict", "RED",
        "--fields", json.dumps({"reason": "not yet"}),
    )  # fmt: skip
    assert code == 0
    late = server.post(
        f"/request/{request_id}/submit", {"csrf": csrf, "verdict": "GREEN", "GREEN-score": "2"}
    )
    assert late.status_code == 409
    view = world.show(request_id)
    assert view["status"] == "RED" and view["reviewer"] == "bob"
    page = server.client.get(f"/request/{request_id}").text
    assert "Settled by bob" in page and "<button>Submit</button>" not in page


def test_unclaim_and_cancel_end_as_the_lifecycle_says(world: World, server: WebServer) -> None:
    request_id, csrf = server.claimed(world)
    page = server.client.get(f"/request/{request_id}").text
    assert 'data-dialog="unclaim-dialog">Unclaim</button>' in page
    assert page.count("<button>Confirm</button>") == 2
    assert server.post(f"/request/{request_id}/unclaim", {"csrf": csrf}).status_code == 303
    assert world.show(request_id)["claim"] is None
    cancelled = server.post(f"/request/{request_id}/cancel", {"csrf": csrf, "reason": "moved"})
    assert cancelled.status_code == 303
    view = world.show(request_id)
    assert view["status"] == "CANCELLED" and view["endedBy"] == "alice"


def test_the_inbox_counts_and_links_waiting_requests(world: World, server: WebServer) -> None:
    _, request_id = world.waiting()
    inbox = server.client.get("/").text
    assert "<title>(1) Inbox" in inbox
    assert f'<a href="/request/{request_id}">doc/signoff</a>' in inbox
    assert "<title>(1) " in server.client.get("/monitor").text
    assert 'href="/monitor">Monitor</a>' in server.client.get(f"/request/{request_id}").text
    mine = server.client.get("/", params={"claim": "mine"}).text
    assert "No Human reviews are waiting." in mine


def sleepers() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info.get("cmdline") or []
        if len(cmdline) == 2 and cmdline[0].endswith("sleep") and cmdline[1] == sleep_mark():
            found.append(process)
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT])
def test_a_stop_signal_ends_a_running_tool_and_exits_2(world: World, sig: int) -> None:
    _, request_id = world.waiting()
    web = WebServer(world)
    try:
        csrf = web.csrf(request_id)
        web.post(f"/request/{request_id}/claim", {"csrf": csrf})
        started = web.post(
            f"/request/{request_id}/tool", {"tool": "wait_doc"}, **{"x-csrf-token": csrf}
        )
        assert started.status_code == 202
        assert wait_until(sleepers), "the tool never started"
    finally:
        assert web.stop(sig) == STOPPED
    assert wait_until(lambda: not sleepers()), "the tool outlived the server"
    assert world.show(request_id)["claim"]["reviewer"] == "alice"  # claims stay


def test_the_files_changed_since_the_last_verdict_link_to_their_viewers(
    world: World, server: WebServer
) -> None:
    _, first = world.waiting()
    page = server.client.get(f"/request/{first}").text
    assert "This eval has no earlier verdict." in page
    csrf = server.csrf(first)
    server.post(f"/request/{first}/claim", {"csrf": csrf})
    done = server.post(
        f"/request/{first}/submit", {"csrf": csrf, "verdict": "GREEN", "GREEN-score": "1"}
    )
    assert done.status_code == 200
    doc = world.repo / "doc"
    (doc / "notes.txt").write_text("The answer is 43.\n", encoding="utf-8")
    (doc / "new.txt").write_text("new\n", encoding="utf-8")
    (doc / "pixel.png").unlink()
    _, second = world.waiting()
    page = server.client.get(f"/request/{second}").text
    assert "Since the last verdict (GREEN of Run" in page
    assert f'<a href="/request/{second}/view?path=notes.txt">notes.txt</a> changed' in page
    assert f'<a href="/request/{second}/view?path=new.txt">new.txt</a> added' in page
    assert "<li>pixel.png removed</li>" in page
    assert "index.artf" not in page.split("Since the last verdict", 1)[1].split("</ul>", 1)[0]


def test_stop_ends_a_tool_that_never_ends_and_the_claim_stays(
    world: World, server: WebServer
) -> None:
    request_id, csrf = server.claimed(world)
    idle = server.post(f"/request/{request_id}/stop", {}, **{"x-csrf-token": csrf})
    assert idle.text == "No tool of this request is running."
    server.post(f"/request/{request_id}/tool", {"tool": "wait_doc"}, **{"x-csrf-token": csrf})
    assert wait_until(sleepers), "the tool never started"
    again = server.post(
        f"/request/{request_id}/tool", {"tool": "wait_doc"}, **{"x-csrf-token": csrf}
    )
    assert again.status_code == 409 and again.text == "wait_doc is already running."
    stopped = server.post(f"/request/{request_id}/stop", {}, **{"x-csrf-token": csrf})
    assert stopped.text == "Stopping 1 running tool(s)."
    _log_until(server, request_id, "· wait · doc", "■ cancelled")
    assert wait_until(lambda: not sleepers()), "the tool kept running"
    view = world.show(request_id)
    assert view["status"] == "WAITING_HUMAN" and view["claim"]["reviewer"] == "alice"


def test_an_array_is_one_item_a_line_and_its_errors_show_at_it(
    world: World, server: WebServer
) -> None:
    request_id, csrf = server.claimed(world)
    page = server.client.get(f"/request/{request_id}").text
    assert re.search(r'<label for="RED-problems">problems</label><textarea id="RED-problems"', page)
    data = {"csrf": csrf, "verdict": "RED", "RED-reason": "not yet"}
    three = server.post(f"/request/{request_id}/submit", {**data, "RED-problems": "a\nb\nc"})
    assert three.status_code == 422
    assert re.search(r'<textarea id="RED-problems"[^>]*aria-invalid="true"', three.text)
    assert ">a\nb\nc</textarea>" in three.text  # what was typed stays
    two = server.post(f"/request/{request_id}/submit", {**data, "RED-problems": "a\n\nb\n"})
    assert two.status_code == 200
    assert world.show(request_id)["result"] == {
        "verdict": "RED",
        "reason": "not yet",
        "problems": ["a", "b"],
    }


def test_a_declaration_edited_under_an_open_page_refuses_tools_and_verdicts(
    world: World, server: WebServer
) -> None:
    request_id, csrf = server.claimed(world)
    index = world.repo / "doc" / "index.artf"
    index.write_text(index.read_text(encoding="utf-8").replace("Signed off", "Edited"))
    page = server.client.get(f"/request/{request_id}").text
    assert "Cancel request ends it without a verdict." in page
    server.post(f"/request/{request_id}/tool", {"tool": "show_doc"}, **{"x-csrf-token": csrf})
    ended = _log_until(server, request_id, "■ error:")
    assert "The answer is 42." not in ended  # nothing ran
    late = server.post(
        f"/request/{request_id}/submit", {"csrf": csrf, "verdict": "GREEN", "GREEN-score": "2"}
    )
    assert late.status_code == 422 and "changed" in late.text.lower()
    assert world.show(request_id)["status"] == "WAITING_HUMAN"
    cancelled = server.post(f"/request/{request_id}/cancel", {"csrf": csrf})
    assert cancelled.status_code == 303
    assert world.show(request_id)["status"] == "CANCELLED"


def test_with_json_the_url_is_a_json_line_and_the_reviewer_defaults_to_user(
    world: World,
) -> None:
    process = subprocess.Popen(
        world.argv("--json", "web", "--no-browser"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(world.state),
    )
    try:
        assert process.stdout is not None
        url = json.loads(process.stdout.readline())["url"]
        base, _, query = url.partition("/?token=")
        port = base.rsplit(":", 1)[1]
        with httpx2.Client(base_url=base, timeout=30) as client:
            client.cookies.set(f"artifactize_web_{port}", query)
            assert "Reviewer <strong>someone-else</strong>" in client.get("/").text  # $USER
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=15)
    assert process.returncode == STOPPED and out == ""
