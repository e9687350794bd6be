"""``artifactize verify`` end to end: the real CLI (in process; a real one for SIGINT), a fake provider over loopback HTTP,
real SQLite state, real tools and tool sessions.

Fixture A of the reference: Artifact ``doc`` (a folder with ``notes.txt``), Agent eval
``doc/review`` (backend openai, model ``m1``) with a pass schema, the built-in ``read``
tool, and a tool session ``app`` with a bound json tool ``act``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.integration.test_tool_sessions import HARNESS, PYTHON, harness_processes
from tests.support.cli import command as real_command
from tests.support.cli import run_cli
from tests.support.fake_provider import (
    FakeProvider,
    error,
    hang,
    openai_text,
    openai_tool_call,
)
from tests.support.workspaces import toml_value as toml

REPO_ROOT = Path(__file__).resolve().parents[2]
EVAL = "doc/review"
DISCONNECT_WAIT_SECONDS = 30.0  # a bound for a failing run only; it passes at once


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


@pytest.fixture(autouse=True)
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    # Children that were there before the test (another module's fixture sharing this
    # worker, say) are not this test's to count or kill.
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        ours = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
        left = ours + harness_processes(tmp_path)
        if not left:
            break
        time.sleep(0.05)
    else:
        for process in left:
            process.kill()
        pytest.fail(f"left behind: {left}")
    sessions = tmp_path / "state" / "tool-sessions"
    assert not sessions.exists() or not any(sessions.iterdir())


# An Agent review's deadline in these repositories: far above what a review against the
# local fake provider needs (under a second idle), so a CI machine running four test
# workers on two cores never ends a review by its deadline; the tests of the deadline
# itself pass their own.
REVIEW_TIMEOUT_MS = 90_000


class Repo:
    def __init__(
        self, root: Path, *, timeout_ms: int = REVIEW_TIMEOUT_MS, model: str = "m1"
    ) -> None:
        self.root = root
        self.path = root / "repo"
        self.state = root / "state"
        self.records = root / "records"
        self.records.mkdir(exist_ok=True)
        self.path.mkdir(exist_ok=True)
        (self.path / "notes.txt").write_text("The answer is 42.\n", encoding="utf-8")
        self.declare(timeout_ms=timeout_ms, model=model)

    def declare(
        self,
        *,
        timeout_ms: int = REVIEW_TIMEOUT_MS,
        model: str = "m1",
        instruction: str = "Check that {doc} states the answer.",
    ) -> None:
        start = {"command": PYTHON, "args": ["-S", HARNESS, "start", str(self.records)]}
        stop = {"command": PYTHON, "args": ["-S", HARNESS, "stop", str(self.records)]}
        act = ["-S", HARNESS, "call", str(self.records)]
        profile = f'{{ kind = "agent", backend = "openai", model = "{model}", timeout_ms = {timeout_ms} }}'
        lines = [
            'name = "doc"',
            "[views.agent_tools]",
            'read = { builtin = "read" }',
            "[views.agent_sessions.app]",
            f"start = {toml(start)}",
            f"stop = {toml(stop)}",
            "[views.agent_tools.act]",
            'session = "app"',
            'description = "Act on {artifactName}."',
            'protocol = "json"',
            f"command = {toml(PYTHON)}",
            f"args = {toml(act)}",
            'input_schema = { type = "object", properties = { sleep = { type = "number" } } }',
            "[evals.review]",
            'title = "The notes state the answer"',
            f"profile = {profile}",
            f"payload.instruction = {json.dumps(instruction)}",
            "[evals.review.pass_schema]",
            'type = "object"',
            'required = ["checked"]',
            'properties.checked = { type = "integer", minimum = 1 }',
        ]
        (self.path / "index.artf").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def events(self, kind: str) -> list[dict[str, Any]]:
        path = self.records / "events.jsonl"
        if not path.exists():
            return []
        text = path.read_text()
        complete = text[: text.rfind("\n") + 1]  # a harness may be appending its line now
        return [e for e in map(json.loads, complete.splitlines()) if e["event"] == kind]


def argv(repo: Repo, *args: str, json_output: bool = True) -> list[str]:
    """``--repo R --state-dir S [--json] ARGS``: the command line after ``artifactize``."""
    line = ["--repo", str(repo.path), "--state-dir", str(repo.state)]
    return [*line, *(["--json"] if json_output else []), *args]


def command(repo: Repo, *args: str, json_output: bool = True) -> list[str]:
    """The same command line, as a real process runs it (for the signal test)."""
    return real_command(*argv(repo, *args, json_output=json_output))


def environment(fake: FakeProvider, *, without: tuple[str, ...] = ()) -> dict[str, str]:
    env = {**os.environ, **fake.env(), "ARTIFACTIZE_REMOTE": "off"}
    return {k: v for k, v in env.items() if k not in without}


def cli(
    repo: Repo,
    fake: FakeProvider,
    *args: str,
    json_output: bool = True,
    without: tuple[str, ...] = (),
) -> tuple[int, Any, str]:
    done = run_cli(
        *argv(repo, *args, json_output=json_output),
        env=environment(fake, without=without),
        cwd=REPO_ROOT,
    )
    out: Any = done.stdout
    if json_output and done.stdout.strip():
        out = json.loads(done.stdout)
    return done.returncode, out, done.stderr


GREEN = '{"verdict": "GREEN", "checked": 1}'


def test_happy_path_with_a_tool_call_then_reuse(tmp_path: Path, fake: FakeProvider) -> None:
    repo = Repo(tmp_path)
    fake.enqueue(
        openai_tool_call("call_1", "read_doc", {"path": "notes.txt"}),
        openai_text(GREEN),
    )
    code, run, _ = cli(repo, fake, "verify", EVAL)
    assert code == 0, run
    (request,) = run["requests"]
    assert (run["status"], request["status"]) == ("GREEN", "GREEN")
    assert request["result"] == {"verdict": "GREEN", "checked": 1}
    assert len(request["usage"]) == 2 and request["usage"][0]["usage"]["totalTokens"] > 0
    assert [c["name"] for c in request["toolCalls"]] == ["read_doc"]
    assert run["summary"]["executed"]["agent"] == 1
    reported_total = sum(a["usage"]["totalTokens"] for a in request["usage"])
    assert run["summary"]["usageState"] == "reported"
    assert run["usage"]["spent"]["totalTokens"] == reported_total
    runs = repo.state / "runs"
    assert list(runs.iterdir()) == []  # no scratch left behind, not even an empty folder
    assert runs.stat().st_mode & 0o777 == 0o700
    second_body = fake.posts()[1].body
    outputs = [i for i in second_body["input"] if i.get("type") == "function_call_output"]
    assert "The answer is 42." in json.dumps(outputs)
    assert len(request["key"]) == 64

    requests_before = len(fake.posts())
    code, again, _ = cli(repo, fake, "verify", EVAL)
    assert code == 0
    (reused,) = again["requests"]
    assert reused["source"] == {
        "runId": run["id"],
        "requestId": request["id"],
        "kind": "cache",
    }
    assert reused["usage"] is None and len(reused["reusedUsage"]) == 2
    assert len(fake.posts()) == requests_before  # the provider received nothing
    assert again["summary"]["reused"]["agent"] == 1
    assert again["usage"]["saved"]["totalTokens"] == reported_total
    assert again["summary"]["attempts"] == 0 and reused["summary"]["usageState"] == "none"


def test_text_output_and_run_show(tmp_path: Path, fake: FakeProvider) -> None:
    repo = Repo(tmp_path)
    fake.enqueue(openai_text('{"verdict": "RED"}'))
    code, text, _ = cli(repo, fake, "verify", EVAL, json_output=False)
    assert code == 1
    lines = text.splitlines()
    run_id = lines[0].removeprefix("Run: ")
    assert lines[1] == f"  doc/review [{run_id}-1]: RED"
    assert "Summary: executed 1 (runtime 0, agent 1, human 0), reused 0" in text
    code, shown, _ = cli(repo, fake, "run", "show", run_id)
    assert code == 0 and shown["id"] == run_id and shown["requests"][0]["status"] == "RED"
    code, listed, _ = cli(repo, fake, "run", "list")
    assert [r["id"] for r in listed] == [run_id]


def test_one_format_repair_then_invalid_result(tmp_path: Path, fake: FakeProvider) -> None:
    repo = Repo(tmp_path)
    fake.enqueue(openai_text("It looks fine."), openai_text(GREEN))
    code, run, _ = cli(repo, fake, "verify", EVAL)
    assert code == 0
    repair = fake.posts()[1].body
    assert repair["tool_choice"] == "none"
    assert "did not match the required schema" in json.dumps(repair["input"][-1])

    fake.enqueue(openai_text("prose"), openai_text("more prose"))
    code, run, _ = cli(repo, fake, "verify", "--force", EVAL)
    (request,) = run["requests"]
    assert (code, request["errorCode"]) == (2, "INVALID_RESULT")
    assert request["error"].startswith("Invalid final Agent result after one format repair: ")


def test_retries_then_success_and_authentication_failure(
    tmp_path: Path, fake: FakeProvider
) -> None:
    repo = Repo(tmp_path)
    fake.enqueue(
        error(503, "overloaded", {"Retry-After": "0"}),
        error(503, "overloaded", {"Retry-After": "0"}),
        openai_text(GREEN),
    )
    code, run, _ = cli(repo, fake, "verify", EVAL)
    attempts = run["requests"][0]["usage"]
    assert code == 0 and len(attempts) == 3
    assert "error" in attempts[0] and "error" in attempts[1] and "error" not in attempts[2]

    fake.enqueue(error(401, "invalid api key"))
    code, run, _ = cli(repo, fake, "verify", "--force", EVAL)
    (request,) = run["requests"]
    assert (code, request["errorCode"], len(request["usage"])) == (2, "AUTHENTICATION", 1)
    assert fake.env()["OPENAI_API_KEY"] not in json.dumps(run)


def test_the_review_deadline(tmp_path: Path, fake: FakeProvider) -> None:
    # The provider never answers: only the 500 ms deadline can end this run (else cli()'s
    # own timeout fails the test), and the provider sees the abandoned request's connection
    # closed. No wall-clock bound on the run: on a loaded machine it may take seconds, and
    # the deadline may even strike before the request is sent (then nothing reached it).
    repo = Repo(tmp_path, timeout_ms=500)
    fake.enqueue(hang())
    code, run, _ = cli(repo, fake, "verify", EVAL)
    (request,) = run["requests"]
    assert (code, request["errorCode"], request["error"]) == (
        2,
        "TIMEOUT",
        "Agent review timed out.",
    )
    deadline = time.monotonic() + DISCONNECT_WAIT_SECONDS
    while fake.disconnects != len(fake.posts()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake.disconnects == len(fake.posts()) <= 1


def test_model_change_reuses_instruction_change_reviews_again(
    tmp_path: Path, fake: FakeProvider
) -> None:
    repo = Repo(tmp_path)
    fake.enqueue(openai_text(GREEN))
    code, first, _ = cli(repo, fake, "verify", EVAL)
    assert code == 0
    repo.declare(model="m2")
    code, second, _ = cli(repo, fake, "verify", EVAL)
    assert code == 0 and second["requests"][0]["source"]["kind"] == "cache"
    assert second["requests"][0]["key"] == first["requests"][0]["key"]
    repo.declare(instruction="Check {doc} again, more carefully.")
    fake.enqueue(openai_text(GREEN))
    code, third, _ = cli(repo, fake, "verify", EVAL)
    assert code == 0 and third["requests"][0]["source"] is None
    assert third["requests"][0]["key"] != first["requests"][0]["key"]


def test_editing_a_file_reviews_again(tmp_path: Path, fake: FakeProvider) -> None:
    repo = Repo(tmp_path)
    fake.enqueue(openai_text(GREEN))
    cli(repo, fake, "verify", EVAL)
    (repo.path / "notes.txt").write_text("The answer is 43.\n", encoding="utf-8")
    fake.enqueue(openai_text('{"verdict": "RED"}'))
    code, run, _ = cli(repo, fake, "verify", EVAL)
    assert code == 1 and run["requests"][0]["source"] is None


def test_cache_list_show_rm(tmp_path: Path, fake: FakeProvider) -> None:
    repo = Repo(tmp_path)
    fake.enqueue(openai_text(GREEN))
    _, run, _ = cli(repo, fake, "verify", EVAL)
    key = run["requests"][0]["key"]
    code, listed, _ = cli(repo, fake, "cache", "list")
    assert code == 0 and [(r["key"], r["verdict"], r["records"]) for r in listed] == [
        (key, "GREEN", 1)
    ]
    code, shown, _ = cli(repo, fake, "cache", "show", key)
    assert code == 0 and shown["result"]["verdict"] == "GREEN" and "@" in shown["producer"]["name"]
    code, missing, _ = cli(repo, fake, "cache", "show", "0" * 64)
    assert (code, missing) == (4, None)
    code, removed, _ = cli(repo, fake, "cache", "rm", key)
    assert (code, removed) == (0, {"removed": True})
    fake.enqueue(openai_text(GREEN))
    _, again, _ = cli(repo, fake, "verify", EVAL)
    assert again["requests"][0]["source"] is None  # reviewed again


def test_readers_never_create_state(tmp_path: Path, fake: FakeProvider) -> None:
    repo = Repo(tmp_path)
    assert cli(repo, fake, "cache", "list")[1] == []
    assert cli(repo, fake, "run", "list")[1] == []
    code, out, _ = cli(repo, fake, "run", "show", "run-nope00")
    assert code == 2 and out == {"error": "Unknown Run: run-nope00"}
    assert not repo.state.exists()


def test_tool_session_provenance_and_session_send(tmp_path: Path, fake: FakeProvider) -> None:
    repo = Repo(tmp_path)
    fake.enqueue(openai_tool_call("call_1", "act_doc", {}), openai_text(GREEN))
    code, run, _ = cli(repo, fake, "verify", EVAL)
    assert code == 0, run
    (request,) = run["requests"]
    assert len(repo.events("start")) == 1 and len(repo.events("stop")) == 1
    session_id = request["sessionId"]

    fake.enqueue(openai_text("I called act once."))
    code, answer, _ = cli(repo, fake, "session", "send", request["id"], "What did you call?")
    assert code == 0 and answer["answer"] == "I called act once."
    assert len(repo.events("start")) == 1  # a follow-up without bound calls starts nothing
    replayed = fake.posts()[-1].body["input"]
    assert replayed[-1]["content"][0]["text"] == "What did you call?"

    code, text, _ = cli(repo, fake, "session", "show", session_id, json_output=False)
    assert code == 0
    assert "[tool call call_1] act_doc {}" in text
    assert "> follow-up: What did you call?" in text and "< answer: I called act once." in text


def test_unknown_selector_and_missing_key(tmp_path: Path, fake: FakeProvider) -> None:
    repo = Repo(tmp_path)
    code, out, _ = cli(repo, fake, "verify", "doc/nope")
    assert (code, out) == (2, {"error": "Unknown eval: doc/nope"})
    # The public endpoint needs its key (a test endpoint, like any other, would not).
    code, run, _ = cli(
        repo, fake, "verify", EVAL, without=("OPENAI_API_KEY", "ARTIFACTIZE_OPENAI_BASE_URL")
    )
    request = run["requests"][0]
    assert (code, request["errorCode"]) == (2, "PREPARATION_FAILED")
    assert request["error"] == "OPENAI_API_KEY is required for this Agent backend."


@pytest.mark.process  # a real signal to a real process
def test_sigint_cancels_the_review_and_cleans_up_its_session(
    tmp_path: Path, fake: FakeProvider
) -> None:
    repo = Repo(tmp_path)
    fake.enqueue(openai_tool_call("call_1", "act_doc", {"sleep": 60}), hang())
    process = subprocess.Popen(
        command(repo, "verify", EVAL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(fake),
        cwd=REPO_ROOT,
    )
    deadline = time.monotonic() + 30
    while not repo.events("call-sleeping") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert repo.events("call-sleeping"), process.communicate(timeout=5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    run = json.loads(out)
    (request,) = run["requests"]
    assert (run["status"], request["errorCode"]) == ("ERROR", "CANCELLED")
    (stop,) = repo.events("stop")
    assert stop["calls_alive"] == []
