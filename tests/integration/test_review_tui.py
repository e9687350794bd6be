"""``artifactize review`` in a real terminal (tmux), against real state and real tool processes.

A temporary repository declares the Human eval ``doc/signoff`` (pass schema: ``approved``
const true; fail schema: a required string ``reason``) with two output tools: ``show``
(``cat {artifactPath}/notes.txt``) and ``wait`` (``sleep``, to cancel). ``verify`` leaves
the request waiting; the reviewer runs in a detached tmux session of a fixed size, keys
are sent with ``send-keys`` and the screen is read with ``capture-pane``. The outcome is
checked with ``request show --json``. Every tmux server is killed in a ``finally``.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from artifactize.adapters.sqlite import state as sqlite_state
from artifactize.adapters.sqlite.rows import run_record
from artifactize.entrypoints.cli.app import main
from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.terminal_reviewer import (
    ALL_WITH_REPO,
    JSON_REFUSED,
    NEEDS_TERMINAL,
)
from artifactize.entrypoints.review_tui.session import ReviewSession
from artifactize.ports.ids import RequestId
from artifactize.ports.state import StateStore
from tests.support.counting import counted
from tests.support.human_workspace import artifact, human_tool, show_tool, signoff_eval
from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.tmux import EXITED as COMMAND_EXITED
from tests.support.tmux import Terminal, needs_tmux

REPO_ROOT = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 15
POLL_SECONDS = 0.05
# The argument of the ``wait`` tool's sleep, to find it among all processes: unique to this
# test process, so concurrent runs (xdist workers, other checkouts) never see each other's.
SLEEP_MARK = f"987.{os.getpid()}"
EXITED = f"{COMMAND_EXITED} with status"

DOC = artifact(
    "doc",
    show_tool(),
    human_tool("wait", "Wait for a long time.", "sleep", [SLEEP_MARK]),
    signoff_eval("Read the notes of {doc}, then sign off."),
)


class Review:
    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.repo = root / "repo"
        self.state = root / "state"
        self.capsys = capsys
        (self.repo / "doc").mkdir(parents=True)
        (self.repo / "doc" / "index.artf").write_text(DOC, encoding="utf-8")
        (self.repo / "doc" / "notes.txt").write_text("The answer is 42.\n", encoding="utf-8")

    def cli(self, *args: str, json_output: bool = True) -> tuple[int, Any]:
        """``artifactize ARGS`` in this process: the exit code and the JSON printed."""
        self.capsys.readouterr()
        flags = ["--json"] if json_output else []
        with pytest.raises(SystemExit) as info:
            main(["--repo", str(self.repo), "--state-dir", str(self.state), *flags, *args])
        captured = self.capsys.readouterr()
        code = int(info.value.code or 0)
        return code, json.loads(captured.out) if json_output else captured.err

    def waiting(self) -> str:
        code, run = self.cli("verify", "--all")
        assert code == 4, run
        (request,) = run["requests"]
        assert request["status"] == "WAITING_HUMAN"
        return str(request["id"])

    def show(self, request_id: str) -> Any:
        code, view = self.cli("request", "show", request_id)
        assert code == 0, view
        return view

    def review_argv(self, *args: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "artifactize.entrypoints.cli.app",
            "--repo",
            str(self.repo),
            "--state-dir",
            str(self.state),
            "review",
            "--reviewer",
            "alice",
            *args,
        ]


def environment() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    return {
        "PATH": keep.get("PATH", "/usr/bin:/bin"),
        "HOME": keep.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "ARTIFACTIZE_REMOTE": "off",
        "USER": "someone-else",  # --reviewer wins
    }


@pytest.fixture
def review(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Review:
    for key in [k for k in os.environ if k.startswith("ARTIFACTIZE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ARTIFACTIZE_REMOTE", "off")
    return Review(tmp_path, capsys)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal("review", cwd=REPO_ROOT)
    try:
        yield term
    finally:
        term.kill()


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


def sleepers() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        cmdline = process.info.get("cmdline") or []
        if len(cmdline) == 2 and cmdline[0].endswith("sleep") and cmdline[1] == SLEEP_MARK:
            found.append(process)
    return found


@needs_tmux
def test_run_a_tool_and_submit_green_through_the_form(review: Review, terminal: Terminal) -> None:
    request_id = review.waiting()
    terminal.start(review.review_argv(), environment())
    terminal.wait_for("EVAL", "doc/signoff", request_id, str(review.repo))
    terminal.keys("Enter")
    terminal.wait_for(
        "Read the notes of {doc}, then sign off.", "show_doc", "wait_doc", "Claim none"
    )
    terminal.keys("t")  # show_doc is selected first
    terminal.wait_for("Run show_doc?", f"directory   {review.repo / 'doc'}")
    terminal.keys("y")
    screen = terminal.wait_for("The answer is 42.", "■ exit 0", "show_doc finished.")
    assert "▶ " in screen and " · show · doc" in screen and "Claim alice (you)" in screen
    terminal.keys("s")
    terminal.wait_for("Which verdict for doc/signoff?")
    terminal.keys("g")
    terminal.wait_for("GREEN verdict for doc/signoff", "approved  true (fixed)")
    terminal.keys("Enter")
    screen = terminal.wait_for(f"{EXITED} 0")
    assert f"Submitted GREEN for doc/signoff ({request_id})." in screen
    view = review.show(request_id)
    assert view["status"] == "GREEN" and view["reviewer"] == "alice"
    assert view["result"] == {"verdict": "GREEN", "approved": True}
    assert view["claim"] is None


@needs_tmux
def test_quitting_after_a_claim_offers_leave_and_release_clears_it(
    review: Review, terminal: Terminal
) -> None:
    request_id = review.waiting()
    terminal.start(review.review_argv(request_id), environment())
    terminal.wait_for("wait_doc", "Claim none")
    terminal.keys("j", "Enter")  # wait_doc: sleep until cancelled
    terminal.wait_for("Run wait_doc?")
    terminal.keys("y")
    terminal.wait_for("Running wait_doc…")
    deadline = time.monotonic() + WAIT_SECONDS
    while not sleepers() and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
    assert sleepers(), "the tool never started"
    terminal.keys("Escape")
    terminal.wait_for("■ cancelled", "Claim alice (you)")
    assert review.show(request_id)["claim"]["reviewer"] == "alice"
    assert not sleepers(), "cancelling left the tool running"
    terminal.keys("q")
    terminal.wait_for("You claimed these requests in this review", request_id)
    terminal.keys("u")
    terminal.wait_for(f"{EXITED} 0")
    view = review.show(request_id)
    assert view["status"] == "WAITING_HUMAN" and view["claim"] is None


def test_review_refuses_json_a_missing_terminal_and_all_with_repo(
    review: Review, monkeypatch: pytest.MonkeyPatch
) -> None:
    request_id = review.waiting()
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # not a terminal, even under pytest -s
    assert review.cli("review") == (2, {"error": JSON_REFUSED})
    code, err = review.cli("review", request_id, json_output=False)
    assert (code, err) == (2, f"error: {NEEDS_TERMINAL}\n")
    code, err = review.cli("review", "--all", json_output=False)
    assert (code, err) == (2, f"error: {ALL_WITH_REPO}\n")


def test_the_session_lists_a_follower_as_its_original_and_releases_what_it_took(
    review: Review, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = review.waiting()
    code, run = review.cli("verify", "doc/signoff")  # a second Run follows the first
    assert code == 4
    (follower,) = [r["id"] for r in run["requests"]]
    assert follower != original
    store = CliContext.container.state_stores().open(str(review.state), create=False)
    assert store is not None
    listed_at = CliContext.container.clock().now()

    def now() -> datetime:  # one instant for every listing: no age ticks over between them
        return listed_at

    def session(repo: str | None) -> ReviewSession:
        return ReviewSession(
            store, CliContext.services().human_reviews(store), "alice", None, repo, now
        )

    decoded: list[str] = []  # a live inbox lists ten times a second: no Run decoded
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_state, "run_record", counted(run_record, "Run", decoded))
        rows = session(os.path.realpath(review.repo)).waiting()
        views = session(None).waiting_views()
    assert decoded == []
    assert [(row.request_id, row.eval_id, row.claim) for row in rows] == [
        (original, "doc/signoff", "-")
    ]
    assert [view["id"] for view in views] == [original]
    assert session(None).waiting() == rows
    assert session("/elsewhere").waiting() == []
    mine = session(None)
    assert mine.view(follower)["id"] == original
    assert anyio.run(mine.ensure_claim, follower) is True
    assert anyio.run(mine.ensure_claim, original) is False  # already yours: nothing taken
    assert mine.taken == [original] and mine.held() == [original]
    assert mine.waiting()[0].claim == "alice (you)"
    assert anyio.run(mine.release_all) == []
    assert mine.held() == [] and review.show(original)["claim"] is None


def _session_on(review: Review) -> tuple[StateStore, ReviewSession]:
    """A review session of every repository on ``review``'s state, as the web server's."""
    store = CliContext.container.state_stores().open(str(review.state), create=False)
    assert store is not None
    reviews = CliContext.services().human_reviews(store)
    return store, ReviewSession(store, reviews, "alice", None, None, datetime.now)


def test_the_waiting_list_is_read_again_only_when_the_state_changed(
    review: Review, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A web page counts the waiting list on every poll, ten a second: it is read once
    while the state holds (with 909 waiting at 10,000 Artifacts a read took ~1 s), each
    request's execution in one statement, and read again after any change (a claim)."""
    original = review.waiting()
    review.cli("verify", "doc/signoff")  # a follower: listed as its original
    store, session = _session_on(review)
    reads: list[str] = []
    with monkeypatch.context() as patch:
        for name in ("all_requests", "get_request", "get_execution", "get_executions"):
            patch.setattr(store, name, counted(getattr(store, name), name, reads))
        first = session.waiting_views()
        # the list's executions, then the waiting ones' (whose claim each shows), in a
        # statement each; the follower's original once; no read per request
        assert sorted(reads) == ["all_requests", "get_executions", "get_executions", "get_request"]
        assert session.waiting_views() == first and len(reads) == 4  # nothing read again
        store.claim_human(RequestId(original), "bob", "2026-12-06T00:00:00.000000000Z")
        (claimed,) = session.waiting_views()
    claim = claimed["claim"]
    assert claimed["id"] == original and claim is not None and claim["reviewer"] == "bob"
    assert len(reads) == 8


def test_a_request_view_is_read_again_only_when_the_state_changed(
    review: Review, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's web page asks for its view ten times a second (~0.17 s a read at 10,000
    Artifacts): the same view while the state holds, a fresh one after a change."""
    request_id = review.waiting()
    store, session = _session_on(review)
    reads: list[str] = []
    with monkeypatch.context() as patch:
        patch.setattr(store, "get_request", counted(store.get_request, "get_request", reads))
        first = session.view(request_id)
        read_once = len(reads)
        assert read_once >= 1
        assert session.view(request_id) is first and len(reads) == read_once
        store.claim_human(RequestId(request_id), "bob", "2026-12-06T00:00:00.000000000Z")
        claimed = session.view(request_id)
    assert len(reads) == 2 * read_once
    claim = claimed["claim"]
    assert claim is not None and claim["reviewer"] == "bob" and first["claim"] is None
