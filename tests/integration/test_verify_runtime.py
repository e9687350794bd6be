"""Runtime evals through the real CLI (``--json verify A/E``, in process through
``tests/support/cli.py``) with real processes for the evals, real files and real SQLite state.

The repository has three Artifacts: ``data`` (a folder with ``input.txt``, no evals, so
``basis = true``: a consumer's gate opens only on a basis input), ``app``
(evals ``ok`` and ``fail``: selecting one leaves the other an unmet obligation, exit 4), ``probe`` (evals that report what the command sees) and ``slow``
and ``mutant`` (a timeout, and a command that edits its own input). Every command is one
probe script, kept outside the repository (so running it never changes a fingerprint), with
a subcommand per behaviour.
"""

from __future__ import annotations

import cProfile
import getpass
import json
import os
import pstats
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine

from artifactize.domain.reviews.run import context as run_context
from artifactize.domain.reviews.runtime.outcome import RUNTIME_OUTPUT_MAX_BYTES
from tests.support.cli import run_cli
from tests.support.workspaces import toml_value as toml

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.path.realpath(sys.executable)
SECRET = "do-not-leak-7f3a"
# The hang eval's child and its grandchild must both be up (SIGTERM ignored, pid written)
# before the deadline strikes; 5 s leaves a loaded 2-core machine room to start two Pythons.
TIMEOUT_MS = 5000
# How long the hang eval's child and grandchild sleep: far beyond the CLI run's own 60 s
# timeout, so a runner that waited for either (or for the grandchild's copy of the output
# pipes) fails the test instead of passing slowly.
HANG_SECONDS = 600
GONE_WAIT_SECONDS = 30.0  # a bound for a failing run only; a killed grandchild goes at once

PROBE = r"""
import json, os, signal, subprocess, sys, time

command, rest = sys.argv[1], sys.argv[2:]
if command == "ok":
    with open(rest[0], "a") as log:
        log.write("ran\n")
elif command == "exit":
    sys.exit(int(rest[0]))
elif command == "env":
    names = ["ARTIFACTIZE_OUTPUT_DIR", "ARTIFACTIZE_TMP_DIR", "HOME", "XDG_CACHE_HOME"]
    usable = {n: os.path.isdir(os.environ[n]) and os.access(os.environ[n], os.W_OK) for n in names}
    modes = {n: oct(os.stat(os.environ[n]).st_mode & 0o777) for n in names}
    print(json.dumps({"env": dict(os.environ), "usable": usable, "modes": modes, "cwd": os.getcwd()}))
elif command == "ansi":
    sys.stdout.write("\x1b[1;31mred\x1b[0m plain\x07\tend\n")
elif command == "cat":
    sys.stdout.write(open(rest[0]).read())
elif command == "write":
    sys.stdout.write("a" * int(rest[0]))
    sys.stderr.write("b" * int(rest[0]))
elif command == "hang":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pidfile = rest[0]
    code = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"open({pidfile!r} + '.tmp', 'w').write(str(os.getpid()))\n"
        f"os.rename({pidfile!r} + '.tmp', {pidfile!r})\n"
        "time.sleep(HANG_SECONDS)\n"
    )
    subprocess.Popen([sys.executable, "-S", "-c", code])
    time.sleep(HANG_SECONDS)
elif command == "edit":
    with open(rest[0], "a") as target:
        target.write("edited by the eval itself\n")
elif command == "await":  # until the state has the eval's request at this status (or 60 s)
    import sqlite3
    database, eval_id, status = rest
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    for _ in range(600):
        row = connection.execute(
            "SELECT status FROM requests WHERE eval_id = ?", (eval_id,)
        ).fetchone()
        if row is not None and row[0] == status:
            sys.exit(0)
        time.sleep(0.1)
    sys.exit(1)
elif command == "folders":  # what the private folders hold; "litter" leaves a file in each
    names = ["ARTIFACTIZE_OUTPUT_DIR", "ARTIFACTIZE_TMP_DIR", "HOME", "XDG_CACHE_HOME"]
    folders = {n: os.environ[n] for n in names}
    print(json.dumps({n: [folders[n], sorted(os.listdir(folders[n]))] for n in names}))
    if rest == ["litter"]:
        for folder in folders.values():
            open(os.path.join(folder, "left.txt"), "w").write("x")
"""


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "repo"
        self.state = root / "state"
        self.log = root / "calls.log"
        self.pidfile = root / "grandchild.pid"
        self.probe = root / "bin" / "probe.py"
        self.probe.parent.mkdir()
        self.probe.write_text(PROBE.replace("HANG_SECONDS", str(HANG_SECONDS)), encoding="utf-8")
        (self.path / "data").mkdir(parents=True)
        (self.path / "data" / "index.artf").write_text(
            'name = "data"\nbasis = true\n', encoding="utf-8"
        )
        (self.path / "data" / "input.txt").write_text("the input\n", encoding="utf-8")
        self.declare("app", {"ok": ["ok", str(self.log)], "fail": ["exit", "1"]})
        (self.path / "app" / "main.txt").write_text("version 1\n", encoding="utf-8")
        self.declare(
            "probe",
            {
                "env": ["env"],
                "ansi": ["ansi"],
                "cat": ["cat", "{data}/input.txt"],
                "cap_at": ["write", str(RUNTIME_OUTPUT_MAX_BYTES)],
                "cap_past": ["write", str(RUNTIME_OUTPUT_MAX_BYTES + 1)],
            },
        )
        self.declare("slow", {"hang": ["hang", str(self.pidfile)]}, timeout_ms=TIMEOUT_MS)
        self.declare("mutant", {"edit": ["edit", "{data}/input.txt"]})

    def declare(
        self, name: str, evals: dict[str, list[str]], *, timeout_ms: int | None = None
    ) -> None:
        folder = self.path / name
        folder.mkdir(exist_ok=True)
        lines = [f"name = {toml(name)}"]
        timeout = f", timeout_ms = {timeout_ms}" if timeout_ms is not None else ""
        for eval_id, args in evals.items():
            argv = ["-S", str(self.probe), *args]
            lines += [
                f"[evals.{eval_id}]",
                f"title = {toml(eval_id)}",
                f'profile = {{ kind = "runtime", command = {toml(PYTHON)}, '
                f"args = {toml(argv)}{timeout} }}",
                f"payload.instruction = {toml('Run ' + eval_id + '.')}",
            ]
        (folder / "index.artf").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def calls(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def cli(self, *args: str, json_output: bool = True) -> tuple[int, Any]:
        env = {
            **os.environ,
            "ARTIFACTIZE_REMOTE": "off",
            "SECRET_TOKEN": SECRET,
            "LANG": "C.UTF-8",
        }
        command = [
            "--repo",
            str(self.path),
        ]
        command += ["--state-dir", str(self.state), *(["--json"] if json_output else [])]
        done = run_cli(*command, *args, env=env, cwd=REPO_ROOT)
        out: Any = done.stdout
        if json_output:
            assert done.stdout.strip(), done.stderr
            out = json.loads(done.stdout)
        return done.returncode, out

    def verify(self, selector: str) -> tuple[int, dict[str, Any]]:
        code, run = self.cli("verify", selector)
        assert isinstance(run, dict) and "requests" in run, run
        return code, run


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path)


@pytest.fixture(autouse=True)
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    """No child process of ours survives a test, and every invocation directory is gone."""
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    deadline = time.monotonic() + 5
    left = [p for p in me.children(recursive=True) if p.pid not in before]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"left behind: {left}"
    runs = tmp_path / "state" / "runs"
    if runs.exists():
        assert [list(run.iterdir()) for run in runs.iterdir()] == [[]] * len(list(runs.iterdir()))


def test_green_then_reuse_starts_nothing(repo: Repo) -> None:
    code, run = repo.verify("app/ok")
    (request,) = run["requests"]
    # `app/fail` is not selected but `app` needs it GREEN: the Run is INCOMPLETE.
    assert (code, run["status"], request["status"]) == (4, "INCOMPLETE", "GREEN")
    assert run["validation"]["unmetObligations"] == ["app"]
    assert request["result"]["verdict"] == "GREEN" and request["result"]["exitCode"] == 0
    assert request["child"]["exitCode"] == 0 and request["child"]["durationMs"] >= 0
    assert request["cwd"] == str(repo.path / "app")
    assert request["argv"] == [PYTHON, "-S", str(repo.probe), "ok", str(repo.log)]
    assert len(request["key"]) == 64 and run["summary"]["executed"]["runtime"] == 1
    assert repo.calls() == 1

    code, again = repo.verify("app/ok")
    (reused,) = again["requests"]
    assert (code, reused["status"]) == (4, "GREEN")
    assert reused["source"] == {"runId": run["id"], "requestId": request["id"], "kind": "cache"}
    assert (reused["argv"], reused["cwd"], reused["child"]) == (None, None, None)
    assert reused["result"] == request["result"]
    assert again["summary"]["reused"]["runtime"] == 1
    assert again["summary"]["executed"]["total"] == 0
    assert repo.calls() == 1  # the command did not run again


def test_a_nonzero_exit_is_red_and_the_text_names_the_code(repo: Repo) -> None:
    code, text = repo.cli("verify", "app/fail", json_output=False)
    assert code == 1
    run_id = text.splitlines()[0].removeprefix("Run: ")
    assert f"  app/fail [{run_id}-1]: RED — exit 1" in text.splitlines()
    assert "Summary: executed 1 (runtime 1, agent 0, human 0), reused 0" in text
    code, text = repo.cli("verify", "app/fail", json_output=False)
    again = text.splitlines()[0].removeprefix("Run: ")
    assert code == 1
    producer = f"{getpass.getuser()}@{socket.gethostname()}"
    reused = f"RED (reused: local cache, {run_id} by {producer}) — exit 1"
    assert f"  app/fail [{again}-1]: {reused}" in text.splitlines()


def test_a_timeout_kills_the_group_with_a_sigterm_ignoring_grandchild(repo: Repo) -> None:
    started = time.monotonic()
    code, run = repo.verify("slow/hang")
    elapsed = time.monotonic() - started
    (request,) = run["requests"]
    assert (code, request["status"], request["errorCode"]) == (2, "ERROR", "TIMEOUT")
    assert request["error"] == f"Runtime eval timed out after {TIMEOUT_MS} ms."
    assert request["child"]["signal"] == 9  # SIGTERM was ignored, SIGKILL followed
    assert elapsed < HANG_SECONDS, "the run waited the hang out instead of killing it"
    assert repo.pidfile.exists(), "the grandchild never started"
    grandchild = int(repo.pidfile.read_text())
    deadline = time.monotonic() + GONE_WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            if psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    else:
        psutil.Process(grandchild).kill()
        pytest.fail("the SIGTERM-ignoring grandchild survived the timeout")
    code, listed = repo.cli("cache", "list")
    assert (code, listed) == (0, [])  # an ERROR is never recorded


def test_what_the_command_sees_and_what_is_kept_of_its_output(repo: Repo) -> None:
    code, run = repo.verify("probe")
    requests = {r["evalId"]: r for r in run["requests"]}
    assert code == 0, [(r["evalId"], r["status"], r["error"]) for r in run["requests"]]

    seen = json.loads(requests["probe/env"]["child"]["stdout"])
    env = seen["env"]
    private = {
        "ARTIFACTIZE_WORKSPACE_DIR",
        "ARTIFACTIZE_OUTPUT_DIR",
        "ARTIFACTIZE_TMP_DIR",
        "HOME",
        "XDG_CACHE_HOME",
        "TMPDIR",
        "TMP",
        "TEMP",
    }
    toolchains = {"RUSTUP_HOME", "CARGO_HOME"}  # rustup's cargo finds its toolchain
    assert set(env) == {"PATH", "LANG"} | private | toolchains, sorted(env)
    assert env["RUSTUP_HOME"] == os.environ.get("RUSTUP_HOME", f"{Path.home()}/.rustup")
    assert SECRET not in json.dumps(env) and "ARTIFACTIZE_REMOTE" not in env
    assert env["LANG"] == "C.UTF-8" and env["PATH"] == os.environ["PATH"]
    assert env["ARTIFACTIZE_WORKSPACE_DIR"] == str(repo.path)
    invocation = Path(env["HOME"]).parent
    assert invocation.parent == repo.state / "runs" / run["id"]
    for name in ("ARTIFACTIZE_OUTPUT_DIR", "ARTIFACTIZE_TMP_DIR", "XDG_CACHE_HOME"):
        assert Path(env[name]).parent == invocation, name
    assert env["TMPDIR"] == env["TMP"] == env["TEMP"] == env["ARTIFACTIZE_TMP_DIR"]
    assert all(seen["usable"].values()) and set(seen["modes"].values()) == {"0o700"}
    assert seen["cwd"] == str(repo.path / "probe")
    assert not invocation.exists()  # removed after the run

    assert requests["probe/ansi"]["child"]["stdout"] == "red plain\tend\n"

    cat = requests["probe/cat"]
    assert cat["argv"][-1] == str(repo.path / "data" / "input.txt")
    assert cat["child"]["stdout"] == "the input\n"
    assert set(cat["fingerprints"]) == {"probe", "data"}  # the operand is a dependency

    at, past = requests["probe/cap_at"]["child"], requests["probe/cap_past"]["child"]
    assert at["truncated"] == {"stdout": False, "stderr": False}
    assert past["truncated"] == {"stdout": True, "stderr": True}
    for child in (at, past):
        assert child["stdout"] == "a" * RUNTIME_OUTPUT_MAX_BYTES
        assert child["stderr"] == "b" * RUNTIME_OUTPUT_MAX_BYTES


def test_editing_a_file_changes_the_key_and_runs_again(repo: Repo) -> None:
    _, first = repo.verify("app/ok")
    (repo.path / "app" / "main.txt").write_text("version 2\n", encoding="utf-8")
    code, second = repo.verify("app/ok")
    (request,) = second["requests"]
    assert (code, request["status"], request["source"]) == (4, "GREEN", None)
    assert request["key"] != first["requests"][0]["key"]
    assert repo.calls() == 2


def test_a_command_that_edits_its_own_input_gets_no_verdict(repo: Repo) -> None:
    code, run = repo.verify("mutant/edit")
    (request,) = run["requests"]
    assert (code, request["status"], request["errorCode"]) == (2, "ERROR", "INPUT_CHANGED")
    assert request["error"] == "Fingerprint changed during review."
    assert request["result"] is None and request["child"]["exitCode"] == 0
    assert "edited by the eval itself" in (repo.path / "data" / "input.txt").read_text()
    code, listed = repo.cli("cache", "list")
    assert (code, listed) == (0, [])


EXTRA_EVALS = 4


def _verify_green(repo: Repo, selector: str) -> None:
    code, run = repo.cli("verify", selector, "--jobs", "1")
    assert code == 0 and {r["status"] for r in run["requests"]} == {"GREEN"}, run


def _per_extra_evals(
    repo: Repo, measure: Callable[[Repo, str], tuple[int, ...]]
) -> tuple[int, ...]:
    """What ``measure`` counts in a ``verify`` of ``1 + EXTRA_EVALS`` evals less what it
    counts in one of a single eval (after a first ``verify`` that creates the state)."""
    repo.declare("warm", {"e0": ["ok", str(repo.log)]})
    repo.declare("one", {"e0": ["ok", str(repo.log)]})
    repo.declare("many", {f"e{n}": ["ok", str(repo.log)] for n in range(1 + EXTRA_EVALS)})
    measure(repo, "warm")
    one = measure(repo, "one")
    many = measure(repo, "many")
    assert repo.calls() == 3 + EXTRA_EVALS
    return tuple(m - o for m, o in zip(many, one, strict=True))


def _writes_of_verify(repo: Repo, selector: str) -> tuple[int, ...]:
    """SQLite commits, request-row updates, reads of ``executions``, statements of any kind
    and statements SQLAlchemy executed from a Core construct, made by one in-process
    ``verify selector --jobs 1`` (SQLAlchemy's public ``commit``, ``before_cursor_execute``
    and ``before_execute`` events, on every engine; ``Connection.exec_driver_sql`` fires
    the cursor's, not ``before_execute``)."""
    commits = request_updates = execution_reads = statements = constructs = 0

    def count(_connection: object) -> None:
        nonlocal commits
        commits += 1

    def statement(_conn: object, _cursor: object, sql: str, *_rest: object) -> None:
        nonlocal request_updates, execution_reads, statements
        words = sql.split()
        statements += 1
        request_updates += [w.upper() for w in words[:2]] == ["UPDATE", "REQUESTS"]
        execution_reads += bool(words) and words[0].upper() == "SELECT" and "executions" in words

    def construct(*_args: object) -> None:
        nonlocal constructs
        constructs += 1

    listeners: dict[str, Callable[..., None]] = {
        "commit": count,
        "before_cursor_execute": statement,
        "before_execute": construct,
    }
    for name, listener in listeners.items():
        sa_event.listen(Engine, name, listener)
    try:
        _verify_green(repo, selector)
    finally:
        for name, listener in listeners.items():
            sa_event.remove(Engine, name, listener)
    return commits, request_updates, execution_reads, statements, constructs


def test_an_executed_eval_costs_one_commit_one_request_write_and_five_statements(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim (the execution's insert) is committed before the command starts; the
    request's RUNNING save and its settlement are held for a group commit, the settlement
    replacing the RUNNING save, and written at the start of the Run's next transaction:
    here the next eval's claim, and the last one by the Run's end. So each eval beyond the
    first adds one commit (two before; three before that, four before the claim and RUNNING
    shared one), one request UPDATE (two before, three before the settled request carried
    its summary), one read of ``executions`` (the claim's, two before) and five statements:
    the BEGIN, the claim's read and insert, the execution's settlement and the request's.
    The interval after which what is held is written anyway is made longer than the test,
    so a slow eval under load cannot add a commit."""
    monkeypatch.setattr(run_context, "HOLD_SECONDS", 3600.0)
    commits, updates, reads, statements, _ = _per_extra_evals(repo, _writes_of_verify)
    extra = EXTRA_EVALS
    assert (commits, updates, reads, statements) == (extra, extra, extra, 5 * extra)


def test_an_executed_eval_writes_through_statements_compiled_once(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of an executed eval's statements, only the claim's read goes through SQLAlchemy's
    execution of a Core construct; the claim's insert and the settlement's two writes are
    compiled once and run through ``exec_driver_sql`` (four constructs per eval before).
    They are still statements the cursor events see: five per eval, as before."""
    monkeypatch.setattr(run_context, "HOLD_SECONDS", 3600.0)
    *_, statements, constructs = _per_extra_evals(repo, _writes_of_verify)
    assert (constructs, statements) == (EXTRA_EVALS, 5 * EXTRA_EVALS)


def _deep_copies_of_verify(repo: Repo, selector: str) -> tuple[int, ...]:
    """Calls of ``copy.deepcopy`` (its recursion not counted) on the main thread, where
    settlements are built, in one in-process ``verify --jobs 1``."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        _verify_green(repo, selector)
    finally:
        profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    calls = sum(
        primitive
        for (filename, _line, name), (primitive, *_rest) in stats.items()
        if name == "deepcopy" and filename.endswith("copy.py")
    )
    return (calls,)


def test_an_executed_eval_settles_without_a_deep_copy(repo: Repo) -> None:
    """The settled fields a request and its execution both take are copied as the JSON
    they are (``json_copy``), not through ``copy.deepcopy`` (one call per eval before)."""
    assert _per_extra_evals(repo, _deep_copies_of_verify) == (0,)


def test_a_held_verdict_is_written_while_the_run_goes_on(repo: Repo) -> None:
    """With nothing else for the Run to write (two evals, two jobs), a settled eval's held
    completion still reaches the state within the hold interval: ``waits`` runs until the
    state file says ``fast`` is GREEN, which another process (the probe) reads, and it gets
    there only if the verdict was written while ``waits`` still ran."""
    database = repo.state / "state.sqlite"
    repo.declare(
        "pair",
        {"fast": ["ok", str(repo.log)], "waits": ["await", str(database), "pair/fast", "GREEN"]},
    )
    code, run = repo.cli("verify", "pair", "--jobs", "2")
    statuses = {r["evalId"]: r["status"] for r in run["requests"]}
    assert (code, statuses) == (0, {"pair/fast": "GREEN", "pair/waits": "GREEN"}), run


def test_a_running_eval_is_saved_running_while_it_runs(repo: Repo) -> None:
    """The RUNNING save held beside a claim reaches the state within the hold interval too:
    the eval runs until the state file (read by the probe, another process) says its own
    request is RUNNING, so a monitor elsewhere sees it run."""
    database = repo.state / "state.sqlite"
    repo.declare("long", {"self": ["await", str(database), "long/self", "RUNNING"]})
    code, run = repo.cli("verify", "long")
    (request,) = run["requests"]
    assert (code, request["status"]) == (0, "GREEN"), run


def test_an_eval_never_sees_what_an_earlier_one_left_in_its_private_folders(
    repo: Repo,
) -> None:
    """One Run, one job: a clean eval's folders go to the next eval; a littered one's are
    removed and the next eval gets fresh, empty ones. Every folder is gone at the end
    (``no_leftovers``)."""
    order = ["a_clean", "b_litter", "c_after_litter", "d_after_clean"]
    args = {name: ["folders", *(["litter"] if "litter" in name[:8] else [])] for name in order}
    repo.declare("folders", args)
    code, run = repo.cli("verify", "folders", "--jobs", "1")
    assert code == 0, run
    seen = {r["evalId"].split("/")[1]: json.loads(r["child"]["stdout"]) for r in run["requests"]}
    assert all(listing == [] for s in seen.values() for _, listing in s.values())
    homes = {name: seen[name]["HOME"][0] for name in order}
    assert homes["b_litter"] == homes["a_clean"]  # handed on: it was left as created
    assert homes["c_after_litter"] != homes["b_litter"]  # the littered set was removed
    assert homes["d_after_clean"] == homes["c_after_litter"]
