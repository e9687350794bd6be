"""``verify``'s progress (issue 12, Build 5), through the real CLI: live on a pseudo-terminal,
one line per event through a pipe, ``--quiet``, and never a colour code.

The repository has a runtime eval that takes about a second and an Agent eval whose fake
provider answers slowly, after one tool call, so the live block is redrawn while each runs.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.fake_provider import FakeProvider, delayed, openai_text, openai_tool_call
from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.pty_terminal import run_on_pty

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI = (sys.executable, "-m", "artifactize.entrypoints.cli.app")
SGR = re.compile(r"\x1b\[[0-9;]*m")  # a colour or text attribute
SLOW_SECONDS = 1.2
DECLARATION = f"""name = "app"

[views.agent_tools]
read = {{ builtin = "read" }}

[evals.slow]
title = "Takes a moment"
profile = {{ kind = "runtime", command = "{sys.executable}", args = ["-c", "import time; time.sleep({SLOW_SECONDS})"] }}
payload.instruction = "Wait."

[evals.review]
title = "Review"
profile = {{ kind = "agent", backend = "openai", model = "m1" }}
payload.instruction = "Review {{app}}."
"""


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "index.artf").write_text(DECLARATION, encoding="utf-8")
    (path / "notes.txt").write_text("Notes.\n", encoding="utf-8")
    return path


def environment(tmp_path: Path, fake: FakeProvider | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    env.update({"ARTIFACTIZE_STATE_HOME": str(tmp_path / "state"), "ARTIFACTIZE_REMOTE": "off"})
    env.update({"TERM": "xterm", "NO_COLOR": "1"})
    return {**env, **(fake.env() if fake else {})}


def script_agent(fake: FakeProvider) -> None:
    fake.enqueue(
        delayed(0.8, openai_tool_call("call_1", "read_app", {"path": "notes.txt"})),
        delayed(0.8, openai_text('{"verdict": "GREEN"}')),
    )


@pytest.mark.process  # stderr on a real pseudo-terminal
def test_a_terminal_shows_live_progress_of_each_eval(repo: Path, tmp_path: Path) -> None:
    with FakeProvider() as fake:
        script_agent(fake)
        code, out, terminal = run_on_pty(
            [*CLI, "--repo", str(repo), "verify", "app"], environment(tmp_path, fake)
        )
    assert code == 0, out + terminal
    assert re.search(r"app/slow: running [0-9]+s", terminal), terminal
    assert re.search(r"app/review: agent turn [12] · [01] tool calls", terminal), terminal
    assert "\x1b[K" in terminal  # the block is redrawn in place
    assert re.search(r"app/slow \[run-\w+-\d\]: GREEN \([0-9.]+s\)", terminal)
    assert re.search(r"app/review \[run-\w+-\d\]: GREEN", terminal)
    assert not SGR.search(terminal)  # no colour: readable with NO_COLOR, on monochrome
    assert out.startswith("Run: run-")  # stdout keeps the summary


@pytest.mark.process  # stderr on a real pseudo-terminal
def test_a_terminal_shows_how_to_claim_a_waiting_human_review(tmp_path: Path) -> None:
    repo = tmp_path / "human"
    repo.mkdir()
    (repo / "index.artf").write_text(
        'name = "doc"\n[evals.signoff]\ntitle = "t"\nprofile = { kind = "human" }\n'
        'payload.instruction = "Sign off."\n',
        encoding="utf-8",
    )
    code, _, terminal = run_on_pty(
        [*CLI, "--repo", str(repo), "verify", "doc/signoff"], environment(tmp_path)
    )
    assert code == 4
    assert re.search(
        r"doc/signoff \[(run-\w+-1)\]: WAITING_HUMAN — waiting for a person: "
        r"artifactize request claim run-\w+-1",
        terminal,
    ), terminal


def test_off_a_terminal_each_event_is_one_line(repo: Path, tmp_path: Path) -> None:
    with FakeProvider() as fake:
        script_agent(fake)
        done = run_cli(
            "--repo", str(repo), "verify", "app", cwd=REPO_ROOT, env=environment(tmp_path, fake)
        )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Started run-")
    assert "\x1b" not in done.stderr  # no cursor movement, no colour
    events = [re.sub(r"^\[ *[0-9.]+s\] ", "", line) for line in lines[1:]]
    assert all(re.match(r"^\[ *[0-9.]+s\] ", line) for line in lines[1:]), lines
    assert "app/slow: running (runtime)" in events
    assert "app/review: running (agent)" in events
    assert "app/review: agent turn 1" in events and "app/review: agent turn 2" in events
    assert "app/review: tool call 1: read_app" in events
    assert any(re.fullmatch(r"app/slow \[run-\w+-\d\]: GREEN \([0-9.]+s\)", e) for e in events)
    slow = next(e for e in events if e.startswith("app/slow [") and "GREEN" in e)
    assert float(re.search(r"\(([0-9.]+)s\)", slow).group(1)) >= SLOW_SECONDS  # type: ignore[union-attr]


def test_quiet_keeps_only_the_result_lines_and_the_summary(repo: Path, tmp_path: Path) -> None:
    with FakeProvider() as fake:
        script_agent(fake)
        done = run_cli(
            "--repo",
            str(repo),
            "verify",
            "app",
            "--quiet",
            cwd=REPO_ROOT,
            env=environment(tmp_path, fake),
        )
    assert done.returncode == 0, done.stderr
    lines = [re.sub(r"^\[ *[0-9.]+s\] ", "", line) for line in done.stderr.splitlines()]
    assert len(lines) == 2 and all(re.match(r"app/(slow|review) \[run-", x) for x in lines)
    assert "Execution: GREEN" in done.stdout
