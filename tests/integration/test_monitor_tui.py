"""``artifactize monitor`` in a real terminal (tmux), beside a real ``verify --all --wait``.

A temporary repository declares ``doc`` with a runtime eval ``check`` and the Human eval
``signoff``. One tmux server runs ``verify --all --wait``, which runs ``check`` and then
waits for a person; another runs the monitor. The monitor shows the Run appear with its
counts, opens it, hands the waiting ``signoff`` to ``review`` with ``o`` (claim and submit
GREEN in the reviewer), comes back, and shows the Run finish GREEN while ``verify --wait``
exits 0. Both tmux servers are killed in a ``finally``; no process is left behind.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifactize.entrypoints.cli.app import main
from artifactize.entrypoints.cli.monitor import ALL_WITH_REPO, JSON_REFUSED, NEEDS_TERMINAL
from artifactize.ports.ids import ReuseKey
from tests.support.human_workspace import artifact, show_tool, signoff_eval
from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.tmux import EXITED, Terminal, needs_tmux

pytestmark = pytest.mark.process  # real terminals (tmux) and real processes

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECK = (
    "[evals.check]\n"
    'title = "The notes are not empty"\n'
    'profile = { kind = "runtime", command = "test", args = ["-s", "notes.txt"] }\n'
    'payload.instruction = "The notes must say something."\n'
)
DOC = artifact("doc", show_tool(), CHECK, signoff_eval("Read the notes of {doc}, then sign off."))
VERIFY_SECONDS = 60


def environment() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "ARTIFACTIZE_REMOTE": "off",
        "USER": "alice",
    }


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in [k for k in os.environ if k.startswith("ARTIFACTIZE_")]:
        monkeypatch.delenv(key)
    root = tmp_path / "repo"
    (root / "doc").mkdir(parents=True)
    (root / "doc" / "index.artf").write_text(DOC, encoding="utf-8")
    (root / "doc" / "notes.txt").write_text("The answer is 42.\n", encoding="utf-8")
    return root


@pytest.fixture
def terminals() -> Iterator[dict[str, Terminal]]:
    opened = {
        "verify": Terminal("verify", cwd=REPO_ROOT),
        "monitor": Terminal("monitor", cwd=REPO_ROOT),
    }
    try:
        yield opened
    finally:
        for terminal in opened.values():
            terminal.kill()


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


def cli(repo: Path, state: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "artifactize.entrypoints.cli.app",
        "--repo",
        str(repo),
        "--state-dir",
        str(state),
        *args,
    ]


@needs_tmux
def test_watch_a_run_hand_its_human_review_over_and_see_it_finish(
    repo: Path, tmp_path: Path, terminals: dict[str, Terminal]
) -> None:
    state = tmp_path / "state"
    verify, monitor = terminals["verify"], terminals["monitor"]
    verify.start(
        cli(repo, state, "verify", "--all", "--wait", "--timeout-ms", "120000"), environment()
    )
    verify.wait_for("Started run-")
    monitor.start(cli(repo, state, "monitor"), environment())
    screen = monitor.wait_for("artifactize monitor · Runs", "WAITING_HUMAN 1 · GREEN 1")
    assert "▶ run-" in screen and "RUNNING" in screen and str(repo)[:24] in screen
    monitor.keys("Enter")
    monitor.wait_for(
        "▾ doc  doc", "✓ check  GREEN", "◷ signoff  WAITING_HUMAN", "Waiting for a person"
    )
    monitor.keys("j", "j")
    screen = monitor.wait_for("doc/signoff  [run-", "Claim: –")
    monitor.keys("o")  # the reviewer opens the request in this terminal
    monitor.wait_for("Read the notes of {doc}, then sign off.", "show_doc")
    monitor.keys("s")
    monitor.wait_for("Which verdict for doc/signoff?")
    monitor.keys("g")
    monitor.wait_for("GREEN verdict for doc/signoff", "approved  true (fixed)")
    monitor.keys("Enter")  # submitted: nothing else waits, so the reviewer exits
    screen = monitor.wait_for("✓ signoff  GREEN", "✓ GREEN", seconds=VERIFY_SECONDS)
    assert "artifactize monitor · run-" in screen
    assert "Requests: GREEN 2" in screen
    verify.wait_for(f"{EXITED} with status 0", seconds=VERIFY_SECONDS)
    monitor.keys("Escape")
    monitor.wait_for("artifactize monitor · Runs", "✓ GREEN")
    monitor.keys("q")
    monitor.wait_for(f"{EXITED} with status 0")


def test_the_monitor_reads_through_a_connection_that_cannot_write(
    repo: Path, tmp_path: Path
) -> None:
    from artifactize.adapters.sqlite.state import SqliteStateStores

    state = tmp_path / "state"
    writer = SqliteStateStores().open(str(state), create=True)
    assert writer is not None
    writer.close()
    watcher = SqliteStateStores().open(str(state), create=False, read_only=True)
    assert watcher is not None
    try:
        with pytest.raises(Exception, match="readonly"):
            watcher.remove_key(ReuseKey("0" * 64))
        assert watcher.list_runs(None, 10, 0) == []
    finally:
        watcher.close()  # no descriptor into the test tree outlives the test
    # A missing state is no Runs, and stays missing: the watcher creates nothing.
    assert SqliteStateStores().open(str(tmp_path / "none"), create=True, read_only=True) is None
    assert not (tmp_path / "none").exists()
    with sqlite3.connect(state / "state.sqlite") as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--json", "monitor"], JSON_REFUSED),
        (["--repo", "/tmp", "monitor", "--all"], ALL_WITH_REPO),
        (["monitor"], NEEDS_TERMINAL),  # pytest's standard input is no terminal
    ],
)
def test_monitor_refuses_json_all_with_repo_and_a_missing_terminal(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--state-dir", str(tmp_path / "state"), *args])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.out + captured.err
    assert not (tmp_path / "state").exists()
