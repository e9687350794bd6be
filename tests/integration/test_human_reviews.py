"""The Human review flow through the real CLI, real SQLite state and real tool processes:
reference cases 1-7, 11 and 14 (reviews-and-store.md §8), a follower across two Runs,
a submit race, a changed input, the wait timeout and publishing.

Fixture F: Artifact ``doc`` (a folder with ``notes.txt``; artifactsum fingerprint) with the
Human eval ``doc/signoff`` (pass: ``approved`` const true; fail: required string
``reason``) and the Human tools ``show`` (output: ``cat {artifactPath}/notes.txt``) and
``fail`` (output: ``false``); Artifact ``app`` with the runtime eval ``app/check``
(``true {doc}``), which consumes ``doc``: its gate opens only once ``doc/signoff`` is GREEN
(a RED sign-off blocks it), and under ``--wait`` it runs in the same Run after the submit.

Most commands run in this process through ``tests/support/cli.py`` (same option parsing, dispatch
and error formatting); case 11 and the race need other processes and use subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.sqlite import dead_runs
from artifactize.adapters.sqlite import state as sqlite_state
from artifactize.domain.reviews.human.errors import REQUEST_ID_NOT_FOUND
from artifactize.domain.use_cases.request_views import list_line
from tests.support.cli import run_cli
from tests.support.counting import counted
from tests.support.fake_review_store import FakeReviewStore
from tests.support.human_workspace import artifact, human_tool, show_tool, signoff_eval
from tests.support.processes import no_process_left_behind as no_process_left_behind_in

REPO_ROOT = Path(__file__).resolve().parents[2]
NOT_WAITING = "Request is not waiting for a Human review."
NOT_CLAIMANT = "Only the Human claimant may perform this action."
WAITING = "Waiting for a Human claim and submission."
FOLLOWING = "Waiting for the active Human execution of this reuse key."
NOTES = "The answer is 42.\n"
GREEN_FIELDS = '{"approved":true}'

DOC = artifact(
    "doc",
    show_tool(),
    human_tool("fail", "Always fails.", "false", []),
    signoff_eval(),
)
APP = """name = "app"

[evals.check]
title = "Check"
profile = { kind = "runtime", command = "true", args = ["{doc}"] }
payload.instruction = "Check the app against {doc}."
"""


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str

    @property
    def data(self) -> Any:
        return json.loads(self.out)

    @property
    def error(self) -> str:
        return str(self.data["error"])


class Fixture:
    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root = root
        self.repo = root / "repo"
        self.state = root / "state"
        self.capsys = capsys
        (self.repo / "doc").mkdir(parents=True)
        (self.repo / "app").mkdir()
        (self.repo / "doc" / "index.artf").write_text(DOC, encoding="utf-8")
        (self.repo / "doc" / "notes.txt").write_text(NOTES, encoding="utf-8")
        (self.repo / "app" / "index.artf").write_text(APP, encoding="utf-8")

    def base(self, json_output: bool) -> list[str]:
        line = ["--repo", str(self.repo), "--state-dir", str(self.state)]
        return [*line, "--json"] if json_output else line

    def cli(self, *args: str, json_output: bool = True) -> Outcome:
        """``artifactize ARGS`` in this process."""
        done = run_cli(*self.base(json_output), *args)
        return Outcome(done.code, done.stdout, done.stderr)

    def command(self, *args: str, json_output: bool = True) -> list[str]:
        """``artifactize ARGS`` as another process runs it."""
        return [
            sys.executable,
            "-m",
            "artifactize.entrypoints.cli.app",
            *self.base(json_output),
            *args,
        ]

    def spawn(self, *args: str, json_output: bool = True) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(*args, json_output=json_output),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
            env=dict(os.environ),
        )

    def requests(self) -> list[dict[str, Any]]:
        outcome = self.cli("request", "list")
        assert outcome.code == 0, outcome
        return list(outcome.data)

    def signoff(self) -> dict[str, Any]:
        """The newest request of ``doc/signoff``."""
        return next(r for r in self.requests() if r["evalId"] == "doc/signoff")

    def waiting(self) -> str:
        """Run ``verify --all`` (case 1) and give the waiting request's ID."""
        outcome = self.cli("verify", "--all")
        assert outcome.code == 4, outcome
        request = self.signoff()
        assert request["status"] == "WAITING_HUMAN"
        return str(request["id"])

    def claimed(self) -> str:
        request_id = self.waiting()
        assert self.cli("request", "claim", request_id).code == 0
        return request_id

    def submit(self, request_id: str, *args: str) -> Outcome:
        return self.cli("request", "submit", request_id, *args)


@pytest.fixture
def fx(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Fixture:
    for key in [k for k in os.environ if k.startswith("ARTIFACTIZE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ARTIFACTIZE_REMOTE", "off")
    monkeypatch.setenv("USER", "alice")
    return Fixture(tmp_path, capsys)


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


# --- reference §8 ----------------------------------------------------------------------------


def test_case_1_a_human_eval_waits_without_wait(fx: Fixture) -> None:
    outcome = fx.cli("verify", "--all")
    assert outcome.code == 4
    run = outcome.data
    assert run["status"] == "INCOMPLETE" and run["executionsStarted"] == 0
    check = next(r for r in run["requests"] if r["evalId"] == "app/check")
    assert check["status"] == "WAIT_DEPENDENCY" and check["executionId"] is None
    assert check["blockedReason"] == "Waiting for doc (doc/signoff WAITING_HUMAN)."
    assert run["validation"]["unmetObligations"] == ["app", "doc"]
    (waiting,) = [r for r in fx.requests() if r["status"] == "WAITING_HUMAN"]
    assert waiting["evalId"] == "doc/signoff" and waiting["blockedReason"] == WAITING
    assert waiting["claim"] is None and waiting["execution"]["status"] == "WAITING_HUMAN"
    assert waiting["definition"]["eval"]["qualifiedId"] == "doc/signoff"
    text = fx.cli("verify", "doc/signoff", json_output=False)
    assert text.code == 4
    assert f"doc/signoff [{text.out.split()[1]}-1]: WAITING_HUMAN — {FOLLOWING}" in text.out


def test_case_2_claim_rules(fx: Fixture) -> None:
    request_id = fx.waiting()
    first = fx.cli("request", "claim", request_id)
    assert first.code == 0 and first.data["reviewer"] == "alice"
    again = fx.cli("request", "claim", request_id)
    assert again.code == 0 and again.data == first.data
    bob = fx.cli("request", "claim", request_id, "--reviewer", "bob")
    assert (bob.code, bob.error) == (2, NOT_CLAIMANT)
    bob = fx.cli("request", "unclaim", request_id, "--reviewer", "bob")
    assert (bob.code, bob.error) == (2, NOT_CLAIMANT)
    released = fx.cli("request", "unclaim", request_id)
    assert released.code == 0 and released.data == first.data
    listed = fx.cli("request", "list", json_output=False)
    assert f"{request_id}\t{request_id.rsplit('-', 1)[0]}\tdoc/signoff\tWAITING_HUMAN\t-" in (
        listed.out.splitlines()
    )
    assert listed.out.splitlines()[0] == "REQUEST\tRUN\tEVAL\tSTATUS\tREVIEWER"


def test_case_3_the_claimant_runs_tools(fx: Fixture) -> None:
    request_id = fx.claimed()
    shown = fx.cli("request", "tool", request_id, "show_doc", json_output=False)
    assert (shown.code, shown.out) == (0, NOTES + "\n")
    as_json = fx.cli("request", "tool", request_id, "show")
    assert as_json.code == 0
    assert as_json.data == {"content": [{"type": "text", "text": NOTES}], "isError": False}
    failed = fx.cli("request", "tool", request_id, "fail_doc")
    assert failed.code == 2 and failed.data["isError"] is True
    assert "exit status: 1" in failed.data["content"][0]["text"]
    assert fx.signoff()["status"] == "WAITING_HUMAN"


def test_case_4_non_claimants_and_unknown_tools_are_refused(fx: Fixture) -> None:
    request_id = fx.claimed()
    bob = fx.cli("request", "tool", request_id, "show_doc", "--reviewer", "bob")
    assert (bob.code, bob.error) == (2, NOT_CLAIMANT)
    unknown = fx.cli("request", "tool", request_id, "nope_doc")
    assert (unknown.code, unknown.error) == (
        2,
        "Unknown Human tool `nope_doc`; this request's Human tools: fail_doc, show_doc.",
    )
    bob = fx.submit(request_id, "--verdict", "GREEN", "--fields", GREEN_FIELDS, "--reviewer", "bob")
    assert (bob.code, bob.error) == (2, NOT_CLAIMANT)
    request = fx.signoff()
    assert request["status"] == "WAITING_HUMAN" and request["claim"]["reviewer"] == "alice"


def test_case_5_submit_green_then_reuse(fx: Fixture) -> None:
    request_id = fx.claimed()
    submitted = fx.submit(request_id, "--verdict", "GREEN", "--fields", GREEN_FIELDS)
    assert submitted.code == 0
    view = submitted.data
    assert (view["id"], view["status"], view["claim"], view["reviewer"]) == (
        request_id,
        "GREEN",
        None,
        "alice",
    )
    assert view["result"] == {"verdict": "GREEN", "approved": True}
    assert view["execution"]["status"] == "GREEN"
    again = fx.cli("verify", "--all")
    assert again.code == 0 and again.data["summary"]["reused"]["human"] == 1
    check = next(r for r in again.data["requests"] if r["evalId"] == "app/check")
    assert (check["status"], check["source"]) == ("GREEN", None)  # its gate opened: executed
    assert again.data["executionsStarted"] == 1
    assert again.data["validation"]["status"] == "SATISFIED"
    text = fx.cli("verify", "--all", json_output=False)
    run_id = request_id.rsplit("-", 1)[0]
    assert f"GREEN (reused: local cache, {run_id} by alice)" in text.out and text.code == 0
    assert "Validation: SATISFIED" in text.out.splitlines()


def test_case_6_a_red_submission_exits_0_and_blocks_verify(fx: Fixture) -> None:
    request_id = fx.claimed()
    submitted = fx.submit(request_id, "--verdict", "RED", "--fields", '{"reason":"typo"}')
    assert submitted.code == 0 and submitted.data["status"] == "RED"
    again = fx.cli("verify", "--all")
    assert again.code == 1 and again.data["status"] == "RED"
    check = next(r for r in again.data["requests"] if r["evalId"] == "app/check")
    assert (check["status"], check["executionId"]) == ("BLOCKED", None)
    assert check["blockedBy"] == ["doc", "doc/signoff"]
    assert again.data["executionsStarted"] == 0
    text = fx.cli("verify", "--all", json_output=False)
    assert "Validation: NOT SATISFIED" in text.out.splitlines()
    assert "  Unmet obligation: doc" in text.out.splitlines()


def test_case_7_invalid_submissions_stay_correctable(fx: Fixture, tmp_path: Path) -> None:
    request_id = fx.claimed()
    folder = tmp_path / "folder"
    folder.mkdir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    too_big = tmp_path / "big.json"
    too_big.write_text('{"note":"' + "n" * (256_001 - 11) + '"}', encoding="utf-8")
    assert too_big.stat().st_size == 256_001
    cases = [
        (["--fields", '{"verdict":"GREEN"}'], "Use --verdict, not a verdict inside --fields."),
        (["--fields", "[1]"], "Human fields must be a JSON object."),
        (["--fields", '{"approved":false}'], '- instancePath "/approved": must equal true'),
        (["--fields", '{"approved":true,"x":1}'], '- field "x" is not declared.'),
        (["--fields", "{}", "--fields-file", str(too_big)], "not both"),
        (["--fields-file", str(folder)], "must be a regular file"),
        (["--fields-file", str(fifo)], "must be a regular file"),
        (["--fields-file", str(too_big)], "Human fields exceed 256000 bytes."),
        (["--fields-file", str(tmp_path / "missing.json")], "Cannot read the Human fields file"),
    ]
    for args, message in cases:
        outcome = fx.submit(request_id, "--verdict", "GREEN", *args)
        assert outcome.code == 2 and message in outcome.error, (args, outcome)
    request = fx.signoff()
    assert request["status"] == "WAITING_HUMAN" and request["claim"]["reviewer"] == "alice"
    good = tmp_path / "good.json"
    good.write_text(GREEN_FIELDS, encoding="utf-8")
    assert fx.submit(request_id, "--verdict", "GREEN", "--fields-file", str(good)).code == 0


@pytest.mark.process  # another process waits
def test_case_11_wait_resumes_the_same_run(fx: Fixture) -> None:
    waiter = fx.spawn("verify", "--all", "--wait", "--timeout-ms", "60000")
    try:
        deadline = time.monotonic() + 30
        request: dict[str, Any] | None = None
        while request is None or request["status"] != "WAITING_HUMAN":
            assert time.monotonic() < deadline and waiter.poll() is None, "verify never waited"
            time.sleep(0.05)
            found = fx.cli("request", "list").data if fx.state.exists() else []
            request = next((r for r in found if r["evalId"] == "doc/signoff"), None)
        run_id = request["runId"]
        assert fx.cli("run", "show", run_id).data["status"] == "RUNNING"
        assert fx.cli("request", "claim", request["id"]).code == 0
        assert fx.submit(request["id"], "--verdict", "GREEN", "--fields", GREEN_FIELDS).code == 0
        out, err = waiter.communicate(timeout=30)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate()
    assert waiter.returncode == 0, err
    run = json.loads(out)
    assert run["id"] == run_id and run["status"] == "GREEN" and run["waitTimedOut"] is False
    statuses = {r["evalId"]: (r["status"], r["source"]) for r in run["requests"]}
    assert statuses == {"doc/signoff": ("GREEN", None), "app/check": ("GREEN", None)}
    assert f"Waiting for Human reviews: {request['id']}" in err


def test_case_14_cache_inspection(fx: Fixture) -> None:
    request_id = fx.claimed()
    assert fx.submit(request_id, "--verdict", "GREEN", "--fields", GREEN_FIELDS).code == 0
    listed = fx.cli("cache", "list").data
    (row,) = [r for r in listed if r["evalId"] == "doc/signoff"]
    key = row["key"]
    assert len(key) == 64 and int(key, 16) >= 0
    assert (row["verdict"], row["records"]) == ("GREEN", 1)
    shown = fx.cli("cache", "show", key)
    assert shown.code == 0 and shown.data["reviewer"] == "alice"
    assert shown.data["producer"]["name"].endswith(f"@{os.uname().nodename}")
    missing = fx.cli("cache", "show", "0" * 64)
    assert (missing.code, missing.out.strip()) == (4, "null")
    assert fx.cli("cache", "rm", key).data == {"removed": True}
    assert fx.cli("verify", "doc/signoff").code == 4  # asked again
    assert fx.signoff()["blockedReason"] == WAITING


# --- beyond the reference cases --------------------------------------------------------------


def test_a_follower_in_another_run_settles_with_the_original(fx: Fixture) -> None:
    original = fx.waiting()
    assert fx.cli("verify", "doc/signoff").code == 4
    follower = fx.signoff()
    assert (follower["blockedReason"], follower["executionId"]) == (
        FOLLOWING,
        f"execution-{original}",
    )
    claim = fx.cli("request", "claim", follower["id"])  # resolves to the original
    assert claim.code == 0 and claim.data["requestId"] == original
    shown = fx.cli("request", "show", follower["id"]).data
    assert shown["claim"]["requestId"] == original
    listed = {view["id"]: view for view in fx.cli("request", "list").data}  # read together
    assert listed[follower["id"]] == shown
    assert listed[original] == fx.cli("request", "show", original).data
    # the text list reads no execution but a waiting follower's: the same lines
    text = fx.cli("request", "list", json_output=False).out.splitlines()
    assert text[1:] == [list_line(view) for view in fx.cli("request", "list").data]
    lines = {line.split("\t")[0]: line.split("\t") for line in text[1:]}
    assert lines[follower["id"]][4] == lines[original][4] == "alice"
    assert fx.submit(follower["id"], "--verdict", "GREEN", "--fields", GREEN_FIELDS).code == 0
    settled = fx.cli("request", "show", follower["id"]).data
    assert settled["status"] == "GREEN" and settled["source"]["requestId"] == original
    assert settled["source"]["kind"] == "joined" and settled["reviewer"] == "alice"


@pytest.mark.process  # two processes race
def test_two_concurrent_submissions_exactly_one_wins(fx: Fixture) -> None:
    request_id = fx.claimed()
    racers = [
        fx.spawn("request", "submit", request_id, "--verdict", verdict, "--fields", fields)
        for verdict, fields in (("GREEN", GREEN_FIELDS), ("RED", '{"reason":"no"}'))
    ]
    results = []
    for racer in racers:
        out, _ = racer.communicate(timeout=60)
        results.append((racer.returncode, json.loads(out)))
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    loser = next(data for code, data in results if code == 2)
    assert loser == {"error": NOT_WAITING}
    winner = next(data for code, data in results if code == 0)
    assert fx.signoff()["status"] == winner["status"]
    key = winner["key"]
    assert len(fx.cli("cache", "show", key, "--history").data) == 1


def test_a_file_changed_before_submission_settles_input_changed(fx: Fixture) -> None:
    request_id = fx.claimed()
    (fx.repo / "doc" / "notes.txt").write_text("The answer is 43.\n", encoding="utf-8")
    changed = fx.submit(request_id, "--verdict", "GREEN", "--fields", GREEN_FIELDS)
    assert (changed.code, changed.error) == (2, "Fingerprint changed during review.")
    request = fx.signoff()
    assert (request["status"], request["errorCode"], request["result"]) == (
        "ERROR",
        "INPUT_CHANGED",
        None,
    )
    assert request["claim"] is None
    assert fx.cli("verify", "doc/signoff").code == 4  # the new content is asked for


def test_changed_declarations_refuse_actions_and_keep_the_request(fx: Fixture) -> None:
    request_id = fx.claimed()
    declared = fx.repo / "doc" / "index.artf"
    declared.write_text(DOC.replace('command = "cat"', 'command = "head"'), encoding="utf-8")
    refused = fx.cli("request", "tool", request_id, "show_doc")
    assert refused.code == 2
    assert refused.error == (
        "Human Artifact scope or eval declarations changed since the request was recorded."
    )
    assert fx.signoff()["status"] == "WAITING_HUMAN"


def test_the_wait_times_out_with_exit_3(fx: Fixture) -> None:
    outcome = fx.cli("verify", "doc/signoff", "--wait", "--timeout-ms", "300")
    assert outcome.code == 3
    run = outcome.data
    assert (run["status"], run["waitTimedOut"], run["waitTimeoutMs"]) == ("INCOMPLETE", True, 300)
    assert fx.signoff()["status"] == "WAITING_HUMAN"
    refused = fx.cli("verify", "doc/signoff", "--timeout-ms", "300")
    assert (refused.code, refused.error) == (2, "--timeout-ms requires --wait.")
    for value in ("0", "2147483648"):
        refused = fx.cli("verify", "doc/signoff", "--wait", "--timeout-ms", value)
        assert refused.code == 2 and "between 1 and 2147483647" in refused.error


def test_readers_never_create_state(fx: Fixture) -> None:
    assert fx.cli("request", "list").data == []
    assert fx.cli("request", "list", json_output=False).out == "No requests.\n"
    missing = fx.cli("request", "show", "run-abc-1")
    assert (missing.code, missing.error) == (2, REQUEST_ID_NOT_FOUND.format(id="run-abc-1"))
    assert fx.cli("request", "claim", "run-abc-1").code == 2
    assert not fx.state.exists()


def test_a_submission_is_published_with_the_human_scope(
    fx: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeReviewStore() as store:
        request_id = fx.claimed()  # verify looked nothing up: the store was off
        monkeypatch.setenv("ARTIFACTIZE_REMOTE", store.url)
        monkeypatch.setenv("ARTIFACTIZE_REMOTE_TOKEN", "tok-a")
        submitted = fx.submit(request_id, "--verdict", "GREEN", "--fields", GREEN_FIELDS)
        assert submitted.code == 0, submitted
        ((record,),) = store.entries.values()
        assert (record["reviewer"], record["publisher"]) == ("alice", "alice")
        assert record["result"] == {"verdict": "GREEN", "approved": True}


def test_a_publishing_failure_keeps_the_local_verdict(
    fx: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    request_id = fx.claimed()
    monkeypatch.setenv("ARTIFACTIZE_REMOTE", "http://127.0.0.1:1/")
    monkeypatch.setenv("ARTIFACTIZE_REMOTE_TOKEN", "tok-a")
    failed = fx.submit(request_id, "--verdict", "GREEN", "--fields", GREEN_FIELDS)
    assert failed.code == 2
    assert failed.error.startswith("The Human result is saved locally, but publishing it failed: ")
    monkeypatch.setenv("ARTIFACTIZE_REMOTE", "off")
    assert fx.signoff()["status"] == "GREEN"


@pytest.mark.process  # another process waits
def test_run_show_wait_follows_a_waiting_run_to_its_outcome(
    fx: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiter = fx.spawn("verify", "--all", "--wait", "--timeout-ms", "60000")
    try:
        deadline = time.monotonic() + 30
        request: dict[str, Any] | None = None
        while request is None or request["status"] != "WAITING_HUMAN":
            assert time.monotonic() < deadline and waiter.poll() is None, "verify never waited"
            time.sleep(0.05)
            found = fx.cli("request", "list").data if fx.state.exists() else []
            request = next((r for r in found if r["evalId"] == "doc/signoff"), None)
        run_id = request["runId"]
        decoded: list[str] = []  # Runs decoded whole, and owners read, while it polls
        with monkeypatch.context() as patch:
            for module, name in ((sqlite_state, "run_record"), (dead_runs, "run_owner")):
                patch.setattr(module, name, counted(getattr(module, name), name, decoded))
            early = fx.cli("run", "show", run_id, "--wait", "--timeout-ms", "300")
        assert (early.code, early.data["status"]) == (3, "RUNNING"), early
        # the Run read when shown and at the end, its owner once: its status alone is polled
        # (a 10,000-Artifact Run is 14 MB, and it was decoded twice per poll, ten a second)
        assert sorted(decoded) == ["run_owner", "run_record", "run_record"], decoded
        assert fx.cli("request", "claim", request["id"]).code == 0
        assert fx.submit(request["id"], "--verdict", "GREEN", "--fields", GREEN_FIELDS).code == 0
        followed = fx.cli("run", "show", run_id, "--wait", "--timeout-ms", "30000")
        out, err = waiter.communicate(timeout=30)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate()
    assert (followed.code, followed.data["status"]) == (0, "GREEN"), followed
    assert [r["status"] for r in followed.data["requests"]] == ["GREEN", "GREEN"]
    assert waiter.returncode == 0, err
    # verify named the Run on stderr as soon as it existed; stdout stays one JSON document
    started = f"Started {run_id} (follow: artifactize run show {run_id} --wait)"
    assert err.splitlines()[0] == started
    assert json.loads(out)["id"] == run_id


def test_run_show_wait_options(fx: Fixture) -> None:
    finished = fx.cli("verify", "--all")
    assert finished.code == 4 and finished.data["status"] == "INCOMPLETE"  # stdout: JSON only
    run_id = finished.data["id"]
    assert f"Started {run_id} (follow: artifactize run show {run_id} --wait)" in finished.err
    settled = fx.cli("run", "show", run_id, "--wait")
    assert (settled.code, settled.data["id"]) == (4, run_id)  # already settled: no wait
    assert fx.cli("run", "show", run_id).code == 0  # without --wait: always 0
    refused = fx.cli("run", "show", run_id, "--timeout-ms", "300")
    assert (refused.code, refused.error) == (2, "--timeout-ms requires --wait.")
    for value in ("0", "2147483648"):
        refused = fx.cli("run", "show", run_id, "--wait", "--timeout-ms", value)
        assert refused.code == 2 and "between 1 and 2147483647" in refused.error
