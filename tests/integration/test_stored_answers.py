"""Stored ``status`` answers (``ports.stored_answers``): the real CLI in process, real files,
real SQLite, and the adapter's files planted and damaged by hand.

A kept answer is printed only while everything it was made of holds; every test that
changes something compares the answer printed with the one computed afresh (the answers
folder removed first). The state's files are trusted by identity only when safely old (the
file index's racy rule), so most tests move the answers adapter's clock an hour on: what a
later command sees.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from dependency_injector import providers
from hypothesis import given, settings
from hypothesis import strategies as st

from artifactize.adapters.posix.private_files import PosixPrivateFiles
from artifactize.adapters.stored_answers import (
    ANSWER_FORMAT,
    ANSWERS_FOLDER,
    FileStoredAnswers,
    bytes_hold_control,
    holds_control,
)
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.entrypoints import bootstrap
from artifactize.entrypoints.bootstrap import Container
from artifactize.entrypoints.container import file_index_of, stored_answers_of
from artifactize.ports.stored_answers import Observed, StoredAnswer
from tests.support.cli import CliResult, run_cli
from tests.support.processes import no_process_left_behind
from tests.support.workspaces import toml_value as toml

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.path.realpath(sys.executable)
HOUR_NS = 3600 * 10**9
PRIVATE_FILES = PosixPrivateFiles()  # what the composition root gives the adapter here


class Repo:
    """``data`` (basis), ``app`` (runtime evals ``ok``, running ``true`` from PATH, and
    ``py``, running this interpreter on ``{data}``) and ``sign`` (a Human eval)."""

    def __init__(self, root: Path, name: str = "repo") -> None:
        self.path = root / name
        self.state = root / "state"
        (self.path / "data").mkdir(parents=True)
        (self.path / "data" / "index.artf").write_text('name = "data"\nbasis = true\n')
        (self.path / "data" / "input.txt").write_text("the input\n")
        (self.path / "app").mkdir()
        (self.path / "app" / "main.txt").write_text("version 1\n")
        self.write_app()
        (self.path / "sign").mkdir()
        (self.path / "sign" / "index.artf").write_text(
            'name = "sign"\n[evals.off]\ntitle = "Signed off"\nprofile = { kind = "human" }\n'
            'payload.instruction = "Sign off {sign}."\n'
        )
        self.env = {**os.environ, "ARTIFACTIZE_REMOTE": "off", "LANG": "C.UTF-8"}

    def write_app(self, *, extra: str = "") -> None:
        argv = ["-S", "-c", "pass", "{data}"]
        (self.path / "app" / "index.artf").write_text(
            'name = "app"\n'
            '[evals.ok]\ntitle = "ok"\nprofile = { kind = "runtime", command = "true", args = [] }\n'
            'payload.instruction = "Run ok."\n'
            '[evals.py]\ntitle = "py"\n'
            f'profile = {{ kind = "runtime", command = {toml(PYTHON)}, args = {toml(argv)} }}\n'
            'payload.instruction = "Run py."\n' + extra
        )

    clock_ns: Callable[[], int] | None = None  # the stored answers' clock (``later``)

    def cli(
        self, *args: str, env: dict[str, str] | None = None, state: Path | None = None
    ) -> CliResult:
        where = self.state if state is None else state
        command = ["--repo", str(self.path), "--state-dir", str(where), *args]
        container = Container()
        if self.clock_ns is not None:  # the answers and the file index see the files as old
            answers = providers.Factory(
                stored_answers_of, private_files=container.private_files, clock_ns=self.clock_ns
            )
            container.stored_answers.override(answers)
            container.file_index.override(providers.Factory(file_index_of, now_ns=self.clock_ns))
        return run_cli(*command, env=env or self.env, cwd=REPO_ROOT, container=container)

    def answer_file(self) -> Path | None:
        folder = self.state / ANSWERS_FOLDER
        files = sorted(folder.iterdir()) if folder.is_dir() else []
        return files[0] if files else None

    def fresh(self, *args: str, env: dict[str, str] | None = None) -> CliResult:
        """The answer computed afresh: no answer kept before it."""
        shutil.rmtree(self.state / ANSWERS_FOLDER, ignore_errors=True)
        return self.cli(*args, env=env)


def later_ns() -> int:
    """An hour on: what a later command sees of the state's files (safely old)."""
    return time.time_ns() + HOUR_NS


@pytest.fixture
def later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every CLI run of the test's repositories measures its stored answers against a clock
    an hour on (``Repo.cli`` builds each run's container)."""
    monkeypatch.setattr(Repo, "clock_ns", staticmethod(later_ns))


@pytest.fixture
def state_opened(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per ``open_state`` of the CLI's services (a kept answer opens none)."""
    opened: list[int] = []
    real = bootstrap.Services.open_state

    def counting(self: bootstrap.Services, *, create: bool) -> Any:
        opened.append(1)
        return real(self, create=create)

    monkeypatch.setattr(bootstrap.Services, "open_state", counting)
    return opened


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per workspace load (the first check of a kept answer loads none)."""
    loaded: list[int] = []
    real = ConfigService.load

    def counting(self: ConfigService, repo: str) -> Any:
        loaded.append(1)
        return real(self, repo)

    monkeypatch.setattr(ConfigService, "load", counting)
    return loaded


def _same(first: CliResult, second: CliResult) -> None:
    assert (first.returncode, first.stdout) == (second.returncode, second.stdout)


def test_a_second_status_prints_the_kept_answer_and_reads_no_state(
    tmp_path: Path, later: None, state_opened: list[int], loads: list[int]
) -> None:
    """The first ``status`` after a ``verify`` computes its answer; the second finds it by
    its key (the workspace loaded, the state not opened) and keeps, with it, what its
    computation observed, which the file index made whole by then; the third finds it by
    those observations alone: nothing loaded, nothing opened, nothing written."""
    repo = Repo(tmp_path)
    assert repo.cli("--json", "verify", "app").returncode == 0
    state_opened.clear()
    first = repo.cli("--json", "status")
    assert first.returncode == 1 and repo.answer_file() is not None and len(state_opened) == 1
    second = repo.cli("--json", "status")
    _same(first, second)
    assert second.stderr == first.stderr
    assert len(state_opened) == 1  # the kept answer: the state was not opened
    kept = repo.answer_file()
    assert kept is not None
    inode = kept.stat().st_ino
    loads.clear()
    _same(first, repo.cli("--json", "status"))
    assert loads == [] and len(state_opened) == 1  # observations alone
    assert kept.stat().st_ino == inode  # and nothing was written
    text = repo.cli("status")  # another form is another answer
    assert text.stdout != first.stdout and len(state_opened) == 2
    assert repo.cli("status").stdout == text.stdout and len(state_opened) == 2


def test_every_change_gives_the_answer_computed_afresh(
    tmp_path: Path, later: None, loads: list[int]
) -> None:
    """After each change the answer printed (a kept one whose observations or key no longer
    hold must not be) is the one computed afresh; then, unchanged, it is printed again
    from its observations alone (no workspace loaded)."""
    repo = Repo(tmp_path)
    assert repo.cli("--json", "verify", "app").returncode == 0
    seen: list[str] = []

    def check(*args: str, env: dict[str, str] | None = None, changed: bool = True) -> None:
        printed = repo.cli("--json", "status", *args, env=env)
        _same(printed, repo.fresh("--json", "status", *args, env=env))
        loads.clear()
        _same(printed, repo.cli("--json", "status", *args, env=env))  # kept: the same again
        assert loads == [], "an unchanged repository is answered from the observations"
        if changed:
            assert printed.stdout not in seen, "this change must change the answer"
        seen.append(printed.stdout)

    check()
    (repo.path / "app" / "main.txt").write_text("version 2\n")  # a covered file
    check()
    assert repo.cli("--json", "verify", "app").returncode == 0  # the state
    check()
    (repo.path / "data" / "input.txt").write_text("the input, again\n")  # an input Artifact
    check()
    repo.write_app(
        extra='[evals.more]\ntitle = "more"\nprofile = { kind = "human" }\n'
        'payload.instruction = "More."\n'
    )  # a declaration
    check()
    check("app")  # the selection
    check("--recursive", changed=False)  # an option (every eval is selected already)
    check("sign", "--force")
    check("--reuse-only", "human")
    empty_path = tmp_path / "empty-path"
    empty_path.mkdir()
    check(env={**repo.env, "PATH": str(empty_path)})  # the programs: `true` is not found
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    check(env={**repo.env, "PATH": f"{shadow}:{repo.env['PATH']}"}, changed=False)
    (shadow / "true").write_text("#!/bin/sh\n")  # a program of the same name, earlier on PATH
    (shadow / "true").chmod(0o755)
    check(env={**repo.env, "PATH": f"{shadow}:{repo.env['PATH']}"})
    (repo.path / ".gitignore").write_text("main.txt\n")  # hides a covered file
    check()
    (repo.path / ".gitignore").write_text("input.tx?\n")  # edited, the same size
    check()
    (repo.path / ".artfignore").write_text("sign/\n")  # leaves an Artifact out
    check()
    (repo.path / ".artfignore").unlink()
    check(changed=False)  # as before the .artfignore
    (repo.path / "sign" / "notes.txt").write_text("same size\n")
    check()
    os.utime(repo.path / "sign" / "notes.txt", ns=(0, 0))  # times alone: same key, same answer
    printed = repo.cli("--json", "status")
    assert printed.stdout == seen[-1]
    _same(printed, repo.fresh("--json", "status"))


def test_the_shells_bookkeeping_is_not_part_of_the_key(
    tmp_path: Path, later: None, loads: list[int]
) -> None:
    """A `cd` and back (`OLDPWD`), another command before (`_`) or one more nested shell
    (`SHLVL`) change nothing artifactize computes: the kept answer is printed from its
    observations, nothing loaded. Any other variable is another key."""
    repo = Repo(tmp_path)
    assert repo.cli("--json", "verify", "app").returncode == 0
    first = repo.cli("--json", "status")
    _same(first, repo.cli("--json", "status"))  # found by its key: observations kept
    loads.clear()
    moved = {**repo.env, "OLDPWD": "/elsewhere", "_": "/usr/bin/env", "SHLVL": "7"}
    _same(first, repo.cli("--json", "status", env=moved))
    assert loads == []
    _same(first, repo.cli("--json", "status", env={**moved, "ANOTHER_VARIABLE": "1"}))
    assert loads == [1]  # computed: another environment, another key


def test_a_state_written_within_the_racy_margin_keeps_no_answer(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    assert repo.cli("--json", "verify", "app").returncode == 0
    first = repo.cli("--json", "status")  # the state was written a moment ago
    assert first.returncode == 1 and repo.answer_file() is None


def test_answers_of_two_repositories_are_kept_apart(tmp_path: Path, later: None) -> None:
    one, two = Repo(tmp_path, "one"), Repo(tmp_path, "two")
    (two.path / "app" / "main.txt").write_text("another app\n")
    assert one.cli("--json", "verify", "app").returncode == 0
    answers = [repo.cli("--json", "status") for repo in (one, two)]
    assert answers[0].stdout != answers[1].stdout
    assert len(list((one.state / ANSWERS_FOLDER).iterdir())) == 2
    for repo, answer in zip((one, two), answers, strict=True):
        _same(repo.cli("--json", "status"), answer)


def test_no_answer_is_kept_while_a_run_is_running(tmp_path: Path, later: None) -> None:
    """A Run that runs may end by its owner's death, which only the next reader settles:
    an answer read while one runs is not kept."""
    repo = Repo(tmp_path)
    repo.write_app(
        extra='[evals.slow]\ntitle = "slow"\n'
        'profile = { kind = "runtime", command = "sleep", args = ["30"] }\n'
        'payload.instruction = "Wait."\n'
    )
    command = [
        sys.executable,
        "-m",
        "artifactize.entrypoints.cli.app",
        "--repo",
        str(repo.path),
        "--state-dir",
        str(repo.state),
        "verify",
        "app/slow",
    ]
    with no_process_left_behind(grace=10):
        verify = subprocess.Popen(
            command,
            env=repo.env,
            cwd=REPO_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not _running(repo):
                assert time.monotonic() < deadline, "the Run never started"
                time.sleep(0.1)
            assert repo.cli("--json", "status").returncode == 1
            assert repo.answer_file() is None
        finally:
            os.killpg(verify.pid, signal.SIGTERM)
            verify.wait(timeout=30)


def _running(repo: Repo) -> bool:
    done = repo.cli("--json", "run", "list")
    if done.returncode != 0:
        return False
    runs = json.loads(done.stdout)
    items = runs["runs"] if isinstance(runs, dict) else runs
    return any(run.get("status") == "RUNNING" for run in items)


# --- the adapter's files, planted and damaged -------------------------------------------


class Commands:
    """The adapter as successive commands use it: each call a fresh one (an instance reads
    its file once)."""

    def __init__(self, state: Path) -> None:
        self.state = state

    def _adapter(self) -> FileStoredAnswers:
        files = [(str(self.state / "state.sqlite"), False)]
        return FileStoredAnswers(
            str(self.state), "/some/repo", files, files=PRIVATE_FILES, clock_ns=later_ns
        )

    def keep(self, key: str, answer: StoredAnswer, observed: Observed | None = None) -> None:
        self._adapter().keep(key, answer, observed)

    def find(self, key: str) -> StoredAnswer | None:
        return self._adapter().find(key)

    def find_observed(self, first_key: str) -> tuple[Any, StoredAnswer] | None:
        return self._adapter().find_observed(first_key)


@pytest.fixture
def answers(tmp_path: Path) -> Commands:
    state = tmp_path / "state"
    state.mkdir()
    return Commands(state)


def test_observations_are_kept_with_their_first_key(answers: Commands) -> None:
    answer = StoredAnswer.of("the answer", 0)
    log = [["root", "/r", True], ["below", "/r", ["a"], False, "digest"]]
    answers.keep("k", answer, Observed("first", log))
    assert answers.find_observed("first") == (log, answer)
    assert answers.find_observed("other") is None
    assert answers.find_observed("") is None
    assert answers.find("k") == answer
    answers.keep("k", answer)  # kept again without observations: none are found
    assert answers.find_observed("first") is None and answers.find("k") == answer


def _only_file(tmp_path: Path) -> Path:
    (path,) = (tmp_path / "state" / ANSWERS_FOLDER).iterdir()
    return path


def test_a_kept_answer_is_found_only_under_its_key_and_whole(
    tmp_path: Path, answers: Commands
) -> None:
    answer = StoredAnswer.of('{\n  "é": "\\u001b"\n}\n\tand a tab', 1)
    answers.keep("k1", answer)
    assert answers.find("k1") == answer
    assert answers.find("k2") is None
    path = _only_file(tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    data = path.read_bytes()
    for damaged in (
        data[:-1],  # cut short
        data[:-1] + b"X",  # one byte changed: the digest
        b"not json\n" + data.split(b"\n", 1)[1],
        data.replace(b'"exit": 1', b'"exit": "1"'),
        b"",
    ):
        path.write_bytes(damaged)
        assert answers.find("k1") is None, damaged[:40]


@settings(max_examples=500)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_the_bytes_check_says_what_the_text_check_says(text: str) -> None:
    """The check of a found file's bytes: False or True as ``holds_control`` of its text,
    None (ask the text) only when non-ASCII bytes are left."""
    found = bytes_hold_control(text.encode("utf-8"))
    if found is None:
        assert not text.isascii()
    else:
        assert found == holds_control(text)


def _plant(path: Path, key: str, text: str | bytes) -> None:
    """An answer file as ``keep`` writes one, digest and all, holding ``text``."""
    body = text.encode() if isinstance(text, str) else text
    header = {
        "format": ANSWER_FORMAT,
        "key": key,
        "first": None,
        "exit": 0,
        "observed": 0,
        "bytes": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    path.write_bytes(json.dumps(header).encode() + b"\n" + body)


@pytest.mark.parametrize("control", ["\x1b[2J", "\x07", "\x9b31m", "\r", "\x00", "\x7f"])
@pytest.mark.parametrize("beside", ["", "é 😀"], ids=["ascii", "non-ascii"])
def test_an_answer_holding_control_characters_is_never_kept_nor_printed(
    tmp_path: Path, answers: Commands, control: str, beside: str
) -> None:
    answers.keep("k", StoredAnswer.of(f"text {beside}{control} more", 0))
    assert not (tmp_path / "state" / ANSWERS_FOLDER).exists()
    answers.keep("k", StoredAnswer.of("plain", 0))
    path = _only_file(tmp_path)
    _plant(path, "k", f"text {beside}\t\nmore")
    assert answers.find("k") == StoredAnswer.of(f"text {beside}\t\nmore", 0)  # planted right
    _plant(path, "k", f"text {beside}{control} more")
    assert answers.find("k") is None


@pytest.mark.parametrize("body", [b"caf\xc3", b"\xff plain", b"\xed\xa0\x80 lone"])
def test_an_answer_that_is_not_utf8_is_never_printed(
    tmp_path: Path, answers: Commands, body: bytes
) -> None:
    """A found answer is printed as its bytes: whole UTF-8 only (a lone surrogate, kept
    with ``surrogatepass``, is found as it was kept)."""
    answers.keep("k", StoredAnswer.of("plain", 0))
    path = _only_file(tmp_path)
    _plant(path, "k", body)
    found = answers.find("k")
    if body.startswith(b"\xed"):
        assert found is not None and found.text == "\ud800 lone"
    else:
        assert found is None


def test_a_link_or_fifo_at_the_answer_is_not_followed(tmp_path: Path, answers: Commands) -> None:
    answers.keep("k", StoredAnswer.of("the answer", 0))
    path = _only_file(tmp_path)
    real = tmp_path / "elsewhere"
    path.rename(real)
    path.symlink_to(real)
    assert answers.find("k") is None  # a link, even to a good answer
    path.unlink()
    os.mkfifo(path)
    assert answers.find("k") is None  # returns at once: a FIFO is never waited on
    path.unlink()
    answers.keep("k", StoredAnswer.of("again", 0))
    assert answers.find("k") == StoredAnswer.of("again", 0)


def test_an_answers_folder_replaced_by_a_link_is_not_written_through(
    tmp_path: Path, answers: Commands
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "state" / ANSWERS_FOLDER).symlink_to(target)
    answers.keep("k", StoredAnswer.of("the answer", 0))
    assert list(target.iterdir()) == []
    assert answers.find("k") is None


def test_the_state_files_are_trusted_only_when_safely_old(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    database, wal = state / "state.sqlite", state / "state.sqlite-wal"
    files = [(str(database), False), (str(wal), True)]
    now = FileStoredAnswers(str(state), "/r", files, files=PRIVATE_FILES)
    assert now.inputs() == "-|-"  # neither exists
    database.write_bytes(b"x")
    assert now.inputs() is None  # written a moment ago: racy
    answers = FileStoredAnswers(str(state), "/r", files, files=PRIVATE_FILES, clock_ns=later_ns)
    seen = answers.inputs()
    assert seen is not None and seen.endswith("|-")
    wal.write_bytes(b"")
    assert answers.inputs() == seen  # an empty journal holds nothing
    wal.write_bytes(b"frames")
    assert answers.inputs() not in (None, seen)
    wal.unlink()
    wal.mkdir()
    assert answers.inputs() is None  # not a regular file: nothing is trusted


def test_nothing_is_left_of_a_failed_write(tmp_path: Path, answers: Commands) -> None:
    folder = tmp_path / "state" / ANSWERS_FOLDER
    folder.mkdir(mode=0o700)
    name = hashlib.sha256(b"/some/repo").hexdigest()[:32]  # the answer's, taken by a folder
    (folder / name).mkdir()
    answers.keep("k", StoredAnswer.of("the answer", 0))
    assert sorted(p.name for p in folder.iterdir()) == [name]  # no temporary file left
    assert answers.find("k") is None
    assert not [f for f in psutil.Process().open_files() if f.path.startswith(str(folder))]


def test_a_folder_moved_away_and_linked_back_is_not_answered_from_the_kept_answer(
    tmp_path: Path, later: None, loads: list[int]
) -> None:
    """The same files, the same inodes, reached through a link: the kept answer's
    observations (each stat no-follow, each folder opened again with no link followed) must
    not hold, and the answer is the one computed afresh (a link is refused)."""
    repo = Repo(tmp_path)
    assert repo.cli("--json", "verify", "app").returncode == 0
    for _ in range(3):
        kept = repo.cli("--json", "status")
    loads.clear()
    _same(kept, repo.cli("--json", "status"))
    assert loads == []  # answered from its observations
    moved = tmp_path / "elsewhere"
    (repo.path / "app").rename(moved)
    (repo.path / "app").symlink_to(moved)
    printed = repo.cli("--json", "status")
    assert loads, "the kept answer must not be printed"
    assert printed.stdout != kept.stdout
    _same(printed, repo.fresh("--json", "status"))


# A real CLI process (the composition root's ``ForkedChecks``; pytest's own process has
# threads, so it would not fork) that cuts every observation log into pieces, however
# short, and notes which process checked each piece.
FORKING_CLI = """\
import os
from artifactize.adapters.posix import parallel_checks
from artifactize.domain.project import observations
observations.PARALLEL_CHECK_MIN_QUESTIONS = 1
real = parallel_checks.ForkedChecks.started
def noted(check):
    def run():
        with open(os.environ["CHECK_PIDS"], "a") as file:
            file.write(f"{os.getpid()}\\n")
        return check()
    return run
parallel_checks.ForkedChecks.started = lambda self, checks: real(self, [*map(noted, checks)])
from artifactize.entrypoints.cli.launch import main
main()
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX: fork")
def test_observations_checked_in_forked_pieces_say_what_a_fresh_answer_says(
    tmp_path: Path,
) -> None:
    """Through the real CLI: the third ``status`` is answered from its observations, checked
    in one piece per usable CPU, each in a child; after an edit the answer
    printed is the one computed afresh; no child outlives its command."""
    from artifactize.adapters.posix.parallel_checks import MAX_CHECK_PROCESSES, usable_cpus

    repo = Repo(tmp_path)
    pids = tmp_path / "pids"
    env = {**repo.env, "CHECK_PIDS": str(pids)}

    where = ["--repo", str(repo.path), "--state-dir", str(repo.state)]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-c", FORKING_CLI, *where, *args],
            env=env,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        left = [
            p.pid
            for p in psutil.process_iter(["cmdline"])
            if str(repo.state) in (p.info["cmdline"] or [])
        ]
        assert left == [], f"processes left behind: {left}"
        return done

    assert cli("verify", "app").returncode == 0
    time.sleep(2.1)  # the state's files safely old (the racy rule), so answers are kept
    first = cli("--json", "status")
    assert first.returncode == 1 and repo.answer_file() is not None
    assert cli("--json", "status").stdout == first.stdout  # found by key; observations kept
    pids.unlink(missing_ok=True)
    third = cli("--json", "status")
    assert (third.returncode, third.stdout) == (first.returncode, first.stdout)
    checked = [int(line) for line in pids.read_text().split()]
    assert len(set(checked)) == len(checked) == min(MAX_CHECK_PROCESSES, usable_cpus())
    (repo.path / "app" / "main.txt").write_text("version 2\n")  # a covered file
    pids.unlink()
    edited = cli("--json", "status")
    assert pids.exists() and edited.stdout != first.stdout  # checked, and found changed
    shutil.rmtree(repo.state / ANSWERS_FOLDER)
    fresh = cli("--json", "status")
    assert (edited.returncode, edited.stdout) == (fresh.returncode, fresh.stdout)
