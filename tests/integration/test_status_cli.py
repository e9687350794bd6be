"""``artifactize status`` end to end: the real CLI (in process), real files, real SQLite.

The repository: ``data`` (basis, ``input.txt``), ``app`` (runtime evals ``ok`` and
``also``, both consuming ``data``; each run appends a line to a log outside the repository)
and ``sign`` (Human eval ``sign/off``, consumed by nobody). ``status`` must predict what
``verify`` does and change nothing: no state created, no record's last-used time moved, no
eval run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.workspaces import toml_value as toml

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.path.realpath(sys.executable)
STATE_FILE = "state.sqlite"
LOG_SCRIPT = "import sys; open(sys.argv[1], 'a').write('ran\\n')"


class Repo:
    def __init__(self, root: Path) -> None:
        self.path = root / "repo"
        self.state = root / "state"
        self.log = root / "calls.log"
        (self.path / "data").mkdir(parents=True)
        (self.path / "data" / "index.artf").write_text('name = "data"\nbasis = true\n')
        (self.path / "data" / "input.txt").write_text("the input\n")
        (self.path / "app").mkdir()
        (self.path / "app" / "main.txt").write_text("version 1\n")
        lines = ['name = "app"']
        for eval_id in ("ok", "also"):
            argv = ["-S", "-c", LOG_SCRIPT, str(self.log), "{data}"]
            lines += [
                f"[evals.{eval_id}]",
                f"title = {toml(eval_id)}",
                f'profile = {{ kind = "runtime", command = {toml(PYTHON)}, args = {toml(argv)} }}',
                f"payload.instruction = {toml('Run ' + eval_id + '.')}",
            ]
        (self.path / "app" / "index.artf").write_text("\n".join(lines) + "\n")
        (self.path / "sign").mkdir()
        (self.path / "sign" / "index.artf").write_text(
            'name = "sign"\n[evals.off]\ntitle = "Signed off"\nprofile = { kind = "human" }\n'
            'payload.instruction = "Sign off {sign}."\n'
        )

    def cli(self, *args: str, json_output: bool = True) -> tuple[int, Any, str]:
        env = {**os.environ, "ARTIFACTIZE_REMOTE": "off", "LANG": "C.UTF-8"}
        command = ["--repo", str(self.path), "--state-dir", str(self.state)]
        command += ["--json"] if json_output else []
        done = run_cli(*command, *args, env=env, cwd=REPO_ROOT)
        out: Any = json.loads(done.stdout) if json_output else done.stdout
        return done.returncode, out, done.stderr

    def status(self, *args: str) -> tuple[int, dict[str, Any], dict[str, dict[str, Any]]]:
        code, report, stderr = self.cli("status", *args)
        assert isinstance(report, dict) and "evals" in report, (report, stderr)
        return code, report, {e["evalId"]: e for e in report["evals"]}

    def calls(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def state_rows(self) -> list[tuple[Any, ...]]:
        """Every Run, request and execution, with each record's last-used time."""
        with sqlite3.connect(self.state / STATE_FILE) as db:
            rows = db.execute("SELECT id, status, data FROM runs ORDER BY id").fetchall()
            rows += db.execute("SELECT id, status, data FROM requests ORDER BY id").fetchall()
            rows += db.execute(
                "SELECT id, status, last_used, data FROM executions ORDER BY id"
            ).fetchall()
            rows += db.execute("SELECT * FROM record_uses ORDER BY execution_id").fetchall()
        return rows


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path)


def brief(evals: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {eval_id: (e["state"], e["action"]) for eval_id, e in evals.items()}


def test_on_a_fresh_state_dir_everything_would_execute_and_nothing_is_created(
    repo: Repo,
) -> None:
    code, report, evals = repo.status()
    assert code == 1
    assert brief(evals) == {
        "app/ok": ("UNREVIEWED", "execute"),
        "app/also": ("UNREVIEWED", "execute"),
        "sign/off": ("UNREVIEWED", "execute"),
    }
    assert report["actions"] == {"execute": 3, "reuse": 0, "wait": 0, "blocked": 0}
    assert report["unmetObligations"] == ["app", "sign"]
    assert not repo.state.exists() and repo.calls() == 0

    code, text, _ = repo.cli("status", "app", json_output=False)
    assert code == 1
    assert "  app/ok [selected]: UNREVIEWED -> execute" in text
    assert text.rstrip().endswith("Verify actions: will execute 2, will reuse 0, wait 0, blocked 0")
    assert not repo.state.exists()


def test_after_verify_it_reuses_and_after_an_edit_it_executes_with_a_new_key(
    repo: Repo,
) -> None:
    code, run, _ = repo.cli("verify", "app")
    assert code == 0 and repo.calls() == 2
    keys = {r["evalId"]: r["key"] for r in run["requests"]}
    before = repo.state_rows()

    code, report, evals = repo.status("app")
    assert code == 0 and report["satisfied"] is True
    assert brief(evals) == {"app/ok": ("PASS", "reuse"), "app/also": ("PASS", "reuse")}
    ok = evals["app/ok"]
    assert ok["key"] == keys["app/ok"] and set(ok["fingerprints"]) == {"app", "data"}
    assert ok["reason"] == f"Reuses the GREEN verdict of Run {run['id']} (same key)."
    assert repo.state_rows() == before and repo.calls() == 2  # nothing touched, nothing run

    code, text, _ = repo.cli("status", "app", json_output=False)
    assert code == 0
    assert text.rstrip().endswith("Verify actions: will execute 0, will reuse 2, wait 0, blocked 0")

    (repo.path / "app" / "main.txt").write_text("version 2\n")
    code, report, evals = repo.status("app/ok")
    assert code == 1
    ok = evals["app/ok"]
    assert (ok["state"], ok["action"]) == ("STALE", "execute")
    assert ok["key"] != keys["app/ok"]
    assert ok["last"]["runId"] == run["id"] and ok["last"]["verdict"] == "GREEN"
    assert ok["changes"]["dependencies"] == ["app"]
    assert repo.state_rows() == before

    code, run, _ = repo.cli("verify", "app/ok")
    assert code == 4  # app/also is stale too: an obligation of the scope, as status said
    assert run["requests"][0]["key"] == ok["key"]  # the key status predicted
    assert repo.calls() == 3


def test_a_waiting_human_review(repo: Repo) -> None:
    code, run, _ = repo.cli("verify", "sign/off")
    assert code == 4
    (request,) = run["requests"]
    assert request["status"] == "WAITING_HUMAN"
    code, report, evals = repo.status("sign")
    assert code == 1
    assert brief(evals) == {"sign/off": ("WAITING_HUMAN", "wait")}
    assert request["id"] in evals["sign/off"]["reason"]
    assert report["artifacts"] == {"sign": "WAIT_DEPENDENCY"}
    code, text, _ = repo.cli("status", "sign", json_output=False)
    assert "Verify actions: will execute 0, will reuse 0, wait 1, blocked 0" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nope",), "nope"),
        (("app", "--all"), "at most one selector"),
        (("--eval", "app/ok", "app"), "at most one selector"),
    ],
)
def test_invalid_input_exits_2(repo: Repo, args: tuple[str, ...], message: str) -> None:
    code, out, _ = repo.cli("status", *args)
    assert code == 2 and message in out["error"]
    assert not repo.state.exists()


def test_a_fingerprint_failure_exits_2(repo: Repo) -> None:
    (repo.path / "app" / "link").symlink_to("main.txt")
    code, report, evals = repo.status("app/ok")
    assert code == 2
    assert evals["app/ok"]["state"] == "ERROR" and "symbolic link" in evals["app/ok"]["reason"]
    assert report["fingerprintFailures"] == ["app/ok", "app/also"]  # the scope's evals
