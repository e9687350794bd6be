"""The reviewer app end to end, headless: urwid on anyio with a scripted screen and a fake
review session (the real lifecycle is exercised through tmux in tests/integration).

``PacedScreen`` feeds one step of keys at a time, each when its condition holds (by
default: when no action is running), so a script can wait for a tool to finish, or press
Esc while one runs.
"""

from __future__ import annotations

import collections
import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
import urwid
import urwid.testing

from artifactize.domain.reviews.human.errors import (
    NOT_CLAIMANT,
    REQUEST_NOT_FOUND,
    HumanReviewError,
)
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.tools.human.lines import LineSink, OutputLine, ProgramEnded
from artifactize.domain.tools.human.results import CANCELLED, HumanToolResult
from artifactize.domain.use_cases.human_reviews import Submitted
from artifactize.entrypoints.review_tui.app import ReviewApp
from artifactize.entrypoints.review_tui.waiting import WaitingRow, claim_text
from artifactize.ports.documents import Execution, Request
from artifactize.ports.ids import EvalId, ExecutionId, RequestId, RunId
from artifactize.ports.state import ExecutionRecord, HumanClaim, RequestRecord

SIZE = (110, 40)
CHANGED = "Human Artifact scope or eval declarations changed since the request was recorded."
REASON_MISSING = 'schema_mismatch: result must match the selected verdict\'s owner schema\n- instancePath "/reason": should not be empty'


def tool(name: str, command: str = "cat") -> dict[str, Any]:
    return {
        "name": name,
        "description": f"The {name} tool.",
        "kind": "output",
        "command": command,
        "args": [],
    }


def request_view(request_id: str, fail_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": request_id,
        "runId": "run-a",
        "evalId": "doc/signoff",
        "title": "Signed off",
        "status": "WAITING_HUMAN",
        "payload": {"instruction": "Sign off the notes."},
        "humanDefinition": {
            "repo": "/repo",
            "eval": {
                "passSchema": {
                    "type": "object",
                    "properties": {"approved": {"const": True}},
                    "required": ["approved"],
                },
                "failSchema": fail_schema
                or {
                    "type": "object",
                    "properties": {"reason": {"type": "string"}},
                    "required": ["reason"],
                },
            },
            "artifacts": {
                "doc": {
                    "declaration": {
                        "humanTools": [
                            tool("gone"),
                            tool("launch"),
                            tool("show"),
                            tool("slow"),
                        ]
                    }
                }
            },
        },
    }


def command(program: str) -> dict[str, Any]:
    return {"repository": "/repo", "program": program, "argv": ["notes.txt"], "cwd": "/repo/doc"}


@dataclass
class FakeSession:
    """The lifecycle as the app sees it, in memory."""

    reviewer: str = "alice"
    warnings: list[str] = field(default_factory=list)
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    claims: dict[str, str] = field(default_factory=dict)
    taken: list[str] = field(default_factory=list)
    submitted: list[dict[str, Any]] = field(default_factory=list)
    refuse_release: set[str] = field(default_factory=set)
    stale: set[str] = field(default_factory=set)  # requests whose declarations changed
    cancelled: list[tuple[str, str | None]] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)

    def waiting(self) -> list[WaitingRow]:
        return [
            WaitingRow(rid, v["evalId"], claim_text(self.view(rid), self.reviewer), "1s", "/repo")
            for rid, v in self.requests.items()
            if v["status"] == "WAITING_HUMAN"
        ]

    def view(self, request_id: str) -> dict[str, Any]:
        if request_id not in self.requests:
            raise HumanReviewError(REQUEST_NOT_FOUND)
        found = copy.deepcopy(self.requests[request_id])
        claimant = self.claims.get(request_id)
        found["claim"] = {"reviewer": claimant} if claimant else None
        return found

    async def commands(self, request_id: str) -> dict[str, dict[str, Any]]:
        if request_id in self.stale:
            raise HumanReviewError(CHANGED)
        return {name: command(f"/bin/{name}") for name in ("show_doc", "slow_doc", "launch_doc")}

    def _claim(self, request_id: str) -> None:
        claimant = self.claims.get(request_id)
        if claimant not in (None, self.reviewer):
            raise HumanReviewError(NOT_CLAIMANT)
        if claimant is None:
            self.claims[request_id] = self.reviewer
            self.taken.append(request_id)

    async def run_tool(
        self, request_id: str, tool: str, cancellation: Cancellation, on_line: LineSink
    ) -> HumanToolResult:
        self._claim(request_id)
        if tool == "show_doc":
            on_line(OutputLine("stdout", "The answer is 42."))
            on_line(OutputLine("stderr", "a warning"))
            on_line(ProgramEnded(0, None))
            return HumanToolResult.text("The answer is 42.\nstderr:\na warning")
        if tool == "slow_doc":
            while not cancellation.cancelled:
                await anyio.sleep(0.01)
            return HumanToolResult.error(CANCELLED)
        if tool == "launch_doc":

            def later() -> None:
                time.sleep(0.05)
                on_line(OutputLine("stdout", "from the viewer"))
                on_line(ProgramEnded(0, None))

            thread = threading.Thread(target=later)
            self.threads.append(thread)
            thread.start()
            return HumanToolResult.launched()
        raise HumanReviewError(CHANGED)

    async def release(self, request_id: str) -> HumanClaim:
        if self.claims.get(request_id) != self.reviewer or request_id in self.refuse_release:
            raise HumanReviewError(NOT_CLAIMANT)
        del self.claims[request_id]
        self.taken.remove(request_id)
        return HumanClaim(RequestId(request_id), self.reviewer, "2026-01-01T00:00:00.000000000Z")

    async def cancel(self, request_id: str, reason: str | None) -> tuple[str, ...]:
        if self.claims.get(request_id) not in (None, self.reviewer):
            raise HumanReviewError(NOT_CLAIMANT)
        self.cancelled.append((request_id, reason))
        self.requests[request_id]["status"] = "CANCELLED"
        self.claims.pop(request_id, None)
        return (request_id,)

    async def submit(
        self, request_id: str, result: dict[str, Any], cancellation: Cancellation
    ) -> Submitted:
        self._claim(request_id)
        if result["verdict"] == "RED" and not result.get("reason"):
            raise HumanReviewError(REASON_MISSING)
        self.submitted.append(result)
        self.requests[request_id]["status"] = result["verdict"]
        self.claims.pop(request_id, None)
        self.taken.remove(request_id) if request_id in self.taken else None
        saved = RequestRecord(
            RequestId(request_id),
            RunId("run-a"),
            EvalId("doc/signoff"),
            1,
            None,
            result["verdict"],
            Request(),
        )
        execution = ExecutionRecord(
            ExecutionId("e"), None, "h", result["verdict"], 1, 0.0, None, None, Execution()
        )
        return Submitted(saved, execution, True, ())

    def held(self) -> list[str]:
        return [
            rid
            for rid in self.taken
            if self.claims.get(rid) == self.reviewer
            and self.requests[rid]["status"] == "WAITING_HUMAN"
        ]

    async def release_all(self) -> list[tuple[str, str]]:
        failures = []
        for rid in self.held():
            try:
                await self.release(rid)
            except HumanReviewError as exc:
                failures.append((rid, exc.message))
        return failures


@dataclass
class Step:
    keys: list[str]
    when: Callable[[], bool] | None = None  # default: nothing is running


class PacedScreen(urwid.testing.ScriptedScreen):
    """A ScriptedScreen whose steps wait for a condition; it polls while one does not hold."""

    POLL_SECONDS = 0.01

    def __init__(self, app: ReviewApp, steps: list[Step]) -> None:
        super().__init__(size=SIZE)
        self.app = app
        self.steps = collections.deque(steps)
        self.loop: Any = None

    def hook_event_loop(self, event_loop: Any, callback: Any) -> None:
        super().hook_event_loop(event_loop, callback)
        self.loop = event_loop

    def get_input(self, raw_keys: bool = False) -> Any:
        batch = self._next()
        return (batch, []) if raw_keys else batch

    def _next(self) -> list[str]:
        if not self.steps:
            raise urwid.ExitMainLoop
        if self.app.ending:  # it ended by itself: what is left of the script is never fed
            return []
        step = self.steps[0]
        ready = step.when() if step.when is not None else self.app.busy is None
        if not ready:  # poll again; as the pending feed, so a draw does not feed twice
            self._feed_handle = self.loop.alarm(self.POLL_SECONDS, self._feed)
            return []
        self.steps.popleft()
        return step.keys

    def text(self) -> str:
        return "\n".join(self.last_text)

    def seen(self, part: str) -> bool:
        return any(part in "\n".join(frame.decoded_text) for frame in self.canvases)


def run_app(app: ReviewApp, steps: list[Step]) -> PacedScreen:
    screen = PacedScreen(app, steps)

    async def main() -> None:
        with anyio.fail_after(10):
            await app.run(screen=screen)

    anyio.run(main, backend="asyncio")
    return screen


def new_app(session: FakeSession, first: str | None = None) -> ReviewApp:
    return ReviewApp(session, first, clock_text=lambda: "12:00:00", environment={})


def log_texts(app: ReviewApp, request_id: str = "run-a-1") -> list[str]:
    return [row.text for row in app.logs[request_id].rows()]


def running(app: ReviewApp) -> bool:
    return app.busy is not None and app.busy.cancellation is not None


@pytest.fixture
def session() -> FakeSession:
    return FakeSession(
        requests={"run-a-1": request_view("run-a-1"), "run-a-2": request_view("run-a-2")}
    )


def test_open_run_after_confirm_and_submit_green(session: FakeSession) -> None:
    app = new_app(session)
    screen = run_app(
        app,
        [
            Step(["enter"]),  # open run-a-1
            Step(["j", "j", "t"]),  # show_doc: resolve, then Confirm
            Step(["y"]),
            Step(["t"]),  # the same command line again: no Confirm this time
            Step(["s"]),
            Step(["g"]),
            Step(["enter"]),  # the form: approved is fixed
            Step(["q"]),
        ],
    )
    assert screen.seen("Run show_doc?") and screen.seen("program     /bin/show_doc")
    assert log_texts(app) == [
        "▶ 12:00:00 · show · doc",
        "The answer is 42.",
        "a warning",
        "■ exit 0",
        "▶ 12:00:00 · show · doc",
        "The answer is 42.",
        "a warning",
        "■ exit 0",
    ]
    assert screen.seen("show_doc finished.") and screen.seen("Claim alice (you)")
    assert screen.seen("Output · show_doc") and screen.seen("approved  true (fixed)")
    assert session.submitted == [{"verdict": "GREEN", "approved": True}]
    assert app.final_message == "Submitted GREEN for doc/signoff (run-a-1)."
    assert screen.seen("Submitted GREEN for doc/signoff (run-a-1).")  # back on the list
    assert "run-a-2" in screen.text() and not screen.steps


def test_a_launched_program_keeps_logging_after_its_call(session: FakeSession) -> None:
    app = new_app(session, "run-a-1")
    screen = run_app(
        app,
        [
            Step(["j", "enter"]),
            Step(["y"]),
            Step([], when=lambda: "■ exit 0" in log_texts(app)),
            Step(["esc"]),  # back to the list
            Step(["q"]),  # the claim is still held: Leave
            Step(["k"]),  # keep it
        ],
    )
    for thread in session.threads:
        thread.join(timeout=2)
    assert log_texts(app) == ["▶ 12:00:00 · launch · doc", "from the viewer", "■ exit 0"]
    assert screen.seen("launch_doc launched.") and screen.seen("■ launched")
    assert screen.seen("You claimed these requests in this review and did not submit them:")
    assert session.claims == {"run-a-1": "alice"}


def test_esc_cancels_a_running_tool_and_other_keys_wait(session: FakeSession) -> None:
    app = new_app(session, "run-a-1")
    screen = run_app(
        app,
        [
            Step(["j", "j", "j", "t"]),
            Step(["y"]),
            Step(["s"], when=lambda: running(app)),
            Step(["page up", "esc"], when=lambda: running(app)),
            Step(["ctrl c"]),  # quit: Leave (a claim was taken)
            Step(["u"]),  # release all and quit
        ],
    )
    assert screen.seen("Busy: Running slow_doc…") and screen.seen("Running slow_doc…")
    assert log_texts(app) == ["▶ 12:00:00 · slow · doc", "■ cancelled"]
    assert screen.seen("slow_doc · tool error")
    assert session.claims == {} and session.submitted == []


def test_a_refused_run_is_logged_and_runs_nothing(session: FakeSession) -> None:
    app = new_app(session, "run-a-1")
    screen = run_app(app, [Step(["t"]), Step(["q"]), Step(["u"])])  # gone_doc: no command line
    assert log_texts(app) == ["▶ 12:00:00 · gone · doc", f"■ error: {CHANGED}"]
    assert screen.seen("gone_doc · failed") and screen.seen("gone_doc did not run.")


def test_form_errors_stay_in_the_form_until_the_submission_is_valid(session: FakeSession) -> None:
    del session.requests["run-a-2"]
    app = new_app(session, "run-a-1")
    screen = run_app(
        app,
        [
            Step(["s", "r"]),
            Step(["enter"]),  # reason is empty: refused, the form stays
            Step(list("tests fail")),
            Step(["enter"]),
            Step(["q"]),  # never reached: nothing else waits, so the review ends
        ],
    )
    assert screen.seen('- instancePath "/reason": should not be empty')
    assert screen.seen("* reason  tests fail")
    assert session.submitted == [{"verdict": "RED", "reason": "tests fail"}]
    assert app.final_message == "Submitted RED for doc/signoff (run-a-1)."
    assert [step.keys for step in screen.steps] == [["q"]]


def test_release_and_read_only_requests(session: FakeSession) -> None:
    session.claims["run-a-2"] = "bob"
    app = new_app(session)
    screen = run_app(
        app,
        [
            Step(["enter", "u"]),  # nothing claimed yet
            Step(["j", "t"]),
            Step(["y"]),
            Step(["u"]),  # release the claim the run took
            Step(["esc", "j", "enter"]),  # run-a-2, claimed by bob
            Step(["s"]),
            Step(["t"]),
            Step(["q"]),  # nothing held: quits at once
        ],
    )
    assert screen.seen("The request is not claimed.")
    assert screen.seen("Released your claim on run-a-1.")
    assert screen.seen("Claimed by bob; read-only for alice.")
    assert not screen.seen("Which verdict")
    assert session.claims == {"run-a-2": "bob"} and not screen.steps


def test_leave_escape_stays_and_failed_releases_are_listed(session: FakeSession) -> None:
    session.refuse_release.add("run-a-1")
    app = new_app(session, "run-a-1")
    screen = run_app(
        app,
        [
            Step(["j", "j", "t"]),
            Step(["y"]),
            Step(["q"]),
            Step(["esc"]),  # stay
            Step(["q"]),
            Step(["u"]),  # the release fails: listed, kept
            Step(["k"]),
        ],
    )
    assert screen.seen("run-a-1: Only the Human claimant may perform this action.")
    assert session.claims == {"run-a-1": "alice"} and not screen.steps


def test_an_unknown_request_shows_why_and_the_list(session: FakeSession) -> None:
    app = new_app(session, "run-zzz")
    screen = run_app(app, [Step(["r"]), Step(["q"])])
    assert screen.seen(REQUEST_NOT_FOUND) and screen.seen("doc/signoff")


def test_a_request_that_cannot_reconnect_says_why_and_offers_cancel(
    session: FakeSession,
) -> None:
    session.stale.add("run-a-1")
    app = new_app(session, "run-a-1")
    screen = run_app(
        app,
        [
            Step([], when=lambda: app.request is not None and bool(app.request.commands_problem)),
            Step(["x"]),
            Step(["esc"]),  # keep it
            Step(["x"]),
            Step(["y"]),
            Step(["q"]),
        ],
    )
    assert screen.seen("This request cannot reconnect: Human Artifact scope or eval")
    assert screen.seen("Press x to cancel it (artifactize request cancel run-a-1)")
    assert screen.seen("Cancel request run-a-1?") and screen.seen("Reason: Human Artifact")
    assert session.cancelled == [("run-a-1", CHANGED)]
    assert screen.seen("Cancelled run-a-1.") and "run-a-1 " not in screen.text()


def test_cancel_of_a_request_that_reconnects_records_no_reason(session: FakeSession) -> None:
    app = new_app(session, "run-a-2")
    run_app(app, [Step(["x"]), Step(["y"]), Step(["q"])])
    assert session.cancelled == [("run-a-2", None)]
