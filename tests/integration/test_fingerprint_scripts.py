"""Fingerprint scripts through the real CLI (``--json verify``, in process through
``tests/support/cli.py``), with real processes for the scripts, real files and real SQLite state.

``app`` has a runtime eval and a fingerprint script that prints ``../VERSION``, a file outside
its folder: the script is how a review comes to depend on it. The script is a probe kept
outside the repository that also reports what it was given (stdin, environment, cwd).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.cli import run_cli
from tests.support.workspaces import toml_value as toml

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.path.realpath(sys.executable)
SECRET = "do-not-leak-51c9"
SLOW_TIMEOUT_MS = 300

FINGERPRINT = r"""
import json, os, sys, time
command, report = sys.argv[1], sys.argv[2]
if command == "version":
    seen = {"stdin": sys.stdin.read(), "env": dict(os.environ), "cwd": os.getcwd()}
    with open(report, "a") as out:
        out.write(json.dumps(seen) + "\n")
    sys.stdout.write(open("../VERSION").read())
elif command == "fail":
    sys.stderr.write("secret detail: " + os.environ.get("SECRET_TOKEN", "none"))
    sys.exit(1)
elif command == "meet":  # wait for the other script of the pair to start (or 5 s)
    mine, other = report + "." + sys.argv[3], report + "." + sys.argv[4]
    open(mine, "w").close()
    deadline = time.monotonic() + 5
    while not os.path.exists(other) and time.monotonic() < deadline:
        time.sleep(0.02)
    sys.stdout.write("met" if os.path.exists(other) else "alone")
elif command == "hang":
    open(report, "w").write(str(os.getpid()))
    time.sleep(60)
"""


class Repo:
    def __init__(self, root: Path) -> None:
        self.path = root / "repo"
        self.state = root / "state"
        self.calls = root / "calls.log"
        self.seen = root / "seen.jsonl"
        self.probe = root / "bin" / "fingerprint.py"
        self.probe.parent.mkdir()
        self.probe.write_text(FINGERPRINT, encoding="utf-8")
        self.path.mkdir()
        (self.path / "VERSION").write_text("1.0.0\n", encoding="utf-8")
        self.declare("app", ["version", str(self.seen)])
        self.declare("broken", ["fail", str(self.seen)])
        self.declare("slow", ["hang", str(root / "slow.pid")], timeout_ms=SLOW_TIMEOUT_MS)

    def declare(self, name: str, script: list[str], *, timeout_ms: int | None = None) -> None:
        folder = self.path / name
        folder.mkdir()
        (folder / "main.txt").write_text("main\n", encoding="utf-8")
        timeout = f", timeout_ms = {timeout_ms}" if timeout_ms is not None else ""
        args = ["-S", str(self.probe), *script]
        ok = ["-S", "-c", f"open({str(self.calls)!r}, 'a').write('ran\\n')"]
        (folder / "index.artf").write_text(
            f"name = {toml(name)}\n"
            f"fingerprint = {{ script = {{ command = {toml(PYTHON)}, args = {toml(args)}, "
            f'files = ["main.txt"]{timeout} }} }}\n'
            "[evals.ok]\n"
            'title = "ok"\n'
            f'profile = {{ kind = "runtime", command = {toml(PYTHON)}, args = {toml(ok)} }}\n'
            'payload.instruction = "Run ok."\n',
            encoding="utf-8",
        )

    def runs(self) -> int:
        return len(self.calls.read_text().splitlines()) if self.calls.exists() else 0

    def cli(self, *args: str) -> tuple[int, Any]:
        env = {**os.environ, "ARTIFACTIZE_REMOTE": "off", "SECRET_TOKEN": SECRET}
        command = [
            "--repo",
            str(self.path),
        ]
        command += ["--state-dir", str(self.state), "--json", *args]
        done = run_cli(*command, env=env, cwd=REPO_ROOT)
        assert done.stdout.strip(), done.stderr
        return done.returncode, json.loads(done.stdout)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path)


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    """No child process of ours survives a test."""
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    deadline = time.monotonic() + 5
    left = [p for p in me.children(recursive=True) if p.pid not in before]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"left behind: {left}"


def test_green_reused_then_reviewed_again_when_the_version_changes(repo: Repo) -> None:
    code, run = repo.cli("verify", "app/ok")
    (request,) = run["requests"]
    assert (code, run["status"], request["status"]) == (0, "GREEN", "GREEN")
    assert request["fingerprints"] == {"app": "1.0.0"}
    assert repo.runs() == 1

    code, again = repo.cli("verify", "app/ok")
    (reused,) = again["requests"]
    assert (code, reused["status"], reused["key"]) == (0, "GREEN", request["key"])
    assert reused["source"] == {"runId": run["id"], "requestId": request["id"], "kind": "cache"}
    assert repo.runs() == 1

    (repo.path / "VERSION").write_text("1.0.1\n", encoding="utf-8")
    code, third = repo.cli("verify", "app/ok")
    (fresh,) = third["requests"]
    assert (code, fresh["status"], fresh["source"]) == (0, "GREEN", None)
    assert fresh["fingerprints"] == {"app": "1.0.1"} and fresh["key"] != request["key"]
    assert repo.runs() == 2


def test_status_runs_the_script_and_sees_the_new_version(repo: Repo) -> None:
    code, _ = repo.cli("verify", "app/ok")
    assert code == 0
    code, report = repo.cli("status", "app/ok")
    (entry,) = [e for e in report["evals"] if e["evalId"] == "app/ok"]
    assert (code, entry["action"], entry["fingerprints"]) == (0, "reuse", {"app": "1.0.0"})
    (repo.path / "VERSION").write_text("2.0.0\n", encoding="utf-8")
    code, report = repo.cli("status", "app/ok")
    (entry,) = [e for e in report["evals"] if e["evalId"] == "app/ok"]
    assert (code, entry["action"], entry["fingerprints"]) == (1, "execute", {"app": "2.0.0"})


def test_what_the_script_is_given_and_that_its_directories_are_gone(repo: Repo) -> None:
    code, _ = repo.cli("verify", "app/ok")
    assert code == 0
    # Preparation, the end-of-review recheck: the same literal input each time.
    seen = [json.loads(line) for line in repo.seen.read_text().splitlines()]
    assert len(seen) == 2
    for call in seen:
        assert call["stdin"] == '{"version":1,"artifactId":"app"}'
        assert call["cwd"] == str(repo.path / "app")
        env = call["env"]
        assert SECRET not in json.dumps(env) and "SECRET_TOKEN" not in env
        assert env["PATH"] == os.environ["PATH"]
        for name in ("HOME", "TMPDIR", "ARTIFACTIZE_OUTPUT_DIR"):
            assert not os.path.exists(env[name]), f"{name} {env[name]} was not deleted"
    assert seen[0]["env"]["HOME"] != seen[1]["env"]["HOME"]


def test_a_failing_script_stops_verify_before_any_run(repo: Repo) -> None:
    code, out = repo.cli("verify", "broken/ok")
    assert code == 2
    assert out == {
        "error": "Artifact `broken`: fingerprint script `" + PYTHON + "` exited with code 1"
    }
    assert SECRET not in json.dumps(out)
    assert repo.runs() == 0
    code, runs = repo.cli("run", "list")
    assert (code, runs) == (0, [])


def test_a_script_past_its_timeout_is_killed_and_stops_verify(repo: Repo) -> None:
    started = time.monotonic()
    code, out = repo.cli("verify", "slow/ok")
    assert code == 2
    assert out["error"].endswith(f"did not finish within {SLOW_TIMEOUT_MS} ms")
    assert out["error"].startswith("Artifact `slow`: ")
    assert time.monotonic() - started < 30
    pid = int((repo.seen.parent / "slow.pid").read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert repo.runs() == 0


def test_a_missing_listed_file_stops_verify(repo: Repo) -> None:
    (repo.path / "app" / "main.txt").unlink()
    code, out = repo.cli("verify", "app/ok")
    assert (code, out) == (
        2,
        {"error": "Artifact `app`: fingerprint.script.files entry `main.txt` does not exist"},
    )
    assert not repo.seen.exists()  # the script never ran


def test_fingerprint_scripts_run_fingerprint_jobs_at_a_time(repo: Repo) -> None:
    """``--fingerprint-jobs 2``: two Artifacts' scripts run at once, on worker threads
    (each waits until the other has started: run in turn, the first would be alone)."""
    meeting = str(repo.path.parent / "meeting")
    repo.declare("left", ["meet", meeting, "left", "right"])
    repo.declare("right", ["meet", meeting, "right", "left"])
    code, report = repo.cli("status", "--fingerprint-jobs", "2", "--evals", "left/ok,right/ok")
    assert code in (0, 1), report
    found = {e["evalId"]: e["fingerprints"] for e in report["evals"]}
    assert found == {"left/ok": {"left": "met"}, "right/ok": {"right": "met"}}
