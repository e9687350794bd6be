"""``artifactize config check`` end to end, through the real CLI, on broken and valid workspaces.

Every directory under ``fixtures/broken/`` is a minimal workspace whose ``expected.txt`` holds
the exact stderr of ``config check`` (``error: `` prefix included). ``fixtures/valid/`` holds
workspaces that must pass. Symlinks and FIFOs are never committed: the cases that need one
copy their fixture into a temporary directory and create it there (``RUNTIME_SETUP``), and
cases that would be huge or repetitive are generated entirely in this module (``GENERATED``).

Each case runs twice through the in-process CLI harness (``tests/support/cli.py``): once as
text, once with ``--json``. Both runs must leave the workspace untouched and must
not create the state home.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.support.cli import CliResult
from tests.support.cli import run_cli as in_process

FIXTURES = Path(__file__).parent / "fixtures"
BROKEN_DIR = FIXTURES / "broken"
VALID_DIR = FIXTURES / "valid"
EXPECTED_FILE = "expected.txt"
ERROR_PREFIX = "error: "
MIB = 1024 * 1024
DECLARATION_LIMIT = 8 * MIB


def _committed(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_dir())


# --- cases that need a symlink or a FIFO, created in a temporary copy --------------------


def _symlink(link: str, target: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        (root / link).symlink_to(target)

    return setup


def _fifo(name: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        os.mkfifo(root / name)

    return setup


RUNTIME_SETUP: dict[str, Callable[[Path], None]] = {
    "sidecar-symlink-target": _symlink("link.md", "real.md"),
    "sidecar-fifo-target": _fifo("pipe.md"),
    "declaration-symlink": _symlink("docs/index.artf", "../real.toml"),
    "declaration-fifo": _fifo("docs/index.artf"),
}


# --- cases generated entirely here --------------------------------------------------------


def _tool_with_execution_paths(count: int) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        paths = ", ".join(f'"tools/bin{i}"' for i in range(count))
        (root / "index.artf").write_text(
            'name = "app"\n'
            "\n"
            "[views.agent_tools.lint]\n"
            'description = "Lint {artifactName}."\n'
            'protocol = "json"\n'
            'command = "true"\n'  # on PATH: config check resolves programs
            "args = []\n"
            f"execution_paths = [{paths}]\n",
            encoding="utf-8",
        )

    return build


def _declaration_of_size(size: int) -> Callable[[Path], None]:
    """A valid declaration of exactly ``size`` bytes, padded with one TOML comment."""

    def build(root: Path) -> None:
        head = b'name = "big"\n#'
        tail = b"\n"
        body = head + b"x" * (size - len(head) - len(tail)) + tail
        assert len(body) == size
        (root / "index.artf").write_bytes(body)

    return build


@dataclass(frozen=True)
class Generated:
    build: Callable[[Path], None]
    expected: str | None  # the exact stderr; None for a workspace that must pass


GENERATED: dict[str, Generated] = {
    "execution-paths-65": Generated(
        _tool_with_execution_paths(65),
        "error: index.artf:8: views.agent_tools.lint.execution_paths: at most 64 paths, got 65\n",
    ),
    "execution-paths-64": Generated(_tool_with_execution_paths(64), None),
    "declaration-over-8mib": Generated(
        _declaration_of_size(DECLARATION_LIMIT + 1),
        "error: index.artf: declaration exceeds 8 MiB\n",
    ),
    "declaration-exactly-8mib": Generated(_declaration_of_size(DECLARATION_LIMIT), None),
}

BROKEN = _committed(BROKEN_DIR) + sorted(k for k, v in GENERATED.items() if v.expected)
VALID = _committed(VALID_DIR) + sorted(k for k, v in GENERATED.items() if v.expected is None)


# --- workspace snapshots ------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under ``root`` without following links or opening special files."""
    found: dict[str, tuple[object, ...]] = {".": ("dir", os.lstat(root).st_mtime_ns)}
    for directory, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(directory) / name
            info = os.lstat(path)
            rel = path.relative_to(root).as_posix()
            if stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[rel] = ("file", info.st_size, info.st_mtime_ns, digest)
            elif stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path), info.st_mtime_ns)
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir", info.st_mtime_ns)
            else:
                found[rel] = ("other", stat.S_IFMT(info.st_mode), info.st_mtime_ns)
    return found


# --- materialized cases and their CLI runs -------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    root: Path
    expected: str | None


@dataclass
class Run:
    case: Case
    before: dict[str, tuple[object, ...]]
    after: dict[str, tuple[object, ...]]
    returncode: int
    stdout: str
    stderr: str


def _materialize(name: str, broken: bool, scratch: Path) -> Case:
    if name in GENERATED:
        generated = GENERATED[name]
        root = scratch / name
        root.mkdir()
        generated.build(root)
        return Case(name, root, generated.expected)
    source = (BROKEN_DIR if broken else VALID_DIR) / name
    expected = (source / EXPECTED_FILE).read_text(encoding="utf-8") if broken else None
    if name not in RUNTIME_SETUP:
        return Case(name, source, expected)
    root = scratch / name
    shutil.copytree(source, root)
    RUNTIME_SETUP[name](root)
    return Case(name, root, expected)


def cli_env(tmp: Path) -> dict[str, str]:
    """The caller's environment with every state location pointed into ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    env["ARTIFACTIZE_STATE_HOME"] = str(tmp / "state")
    env["XDG_STATE_HOME"] = str(tmp / "xdg-state")
    env["HOME"] = str(tmp / "home")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_cli(args: list[str], env: dict[str, str], cwd: Path) -> CliResult:
    return in_process(*args, env=env, cwd=cwd)


@dataclass
class Suite:
    runs: dict[str, Run]
    home: Path
    state_locations: tuple[Path, ...]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    """Every case as a workspace on disk: committed, copied-and-completed, or generated."""
    scratch = tmp_path_factory.mktemp("workspaces")
    found = [_materialize(n, True, scratch) for n in BROKEN]
    found += [_materialize(n, False, scratch) for n in VALID]
    return {case.name: case for case in found}


@pytest.fixture(scope="module")
def suite(cases: dict[str, Case], tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """Run the real ``config check`` (in process) on every case, snapshotting around it."""
    env_root = tmp_path_factory.mktemp("env")
    (env_root / "home").mkdir()
    env = cli_env(env_root)

    def one(case: Case) -> Run:
        before = snapshot(case.root)
        result = run_cli(["--repo", str(case.root), "config", "check"], env, env_root)
        after = snapshot(case.root)
        return Run(case, before, after, result.returncode, result.stdout, result.stderr)

    runs = {run.case.name: run for run in map(one, cases.values())}
    locations = (env_root / "state", env_root / "xdg-state")
    return Suite(runs, env_root / "home", locations)


@pytest.fixture(scope="module", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    left = [p for p in me.children(recursive=True) if p.pid not in before]
    assert not left, f"processes left behind: {left}"


# --- the fixture set itself ---------------------------------------------------------------


def test_the_fixture_set_is_complete():
    assert len(BROKEN) >= 34
    for name in _committed(BROKEN_DIR):
        expected = (BROKEN_DIR / name / EXPECTED_FILE).read_text(encoding="utf-8")
        assert expected.startswith(ERROR_PREFIX), name
        assert expected.endswith("\n") and not expected.endswith("\n\n"), name
    for name in RUNTIME_SETUP:
        assert (BROKEN_DIR / name).is_dir(), name
    for name in _committed(VALID_DIR):
        assert not (VALID_DIR / name / EXPECTED_FILE).exists(), name
    assert not set(GENERATED) & set(_committed(BROKEN_DIR) + _committed(VALID_DIR))


def test_no_fixture_commits_a_symlink_or_special_file():
    for path in FIXTURES.rglob("*"):
        assert path.is_dir() or stat.S_ISREG(os.lstat(path).st_mode), path


def test_the_astral_description_is_exactly_4000_utf16_units():
    text = (VALID_DIR / "description-4000-utf16-astral" / "index.artf").read_text("utf-8")
    description = text.split('description = "', 1)[1].split('"', 1)[0]
    assert len(description.encode("utf-16-le")) // 2 == 4000
    assert len(description) == 2000
    broken = (BROKEN_DIR / "description-4001-utf16" / "index.artf").read_text("utf-8")
    too_long = broken.split('description = "', 1)[1].split('"', 1)[0]
    assert len(too_long.encode("utf-16-le")) // 2 == 4001


# --- broken workspaces --------------------------------------------------------------------


@pytest.mark.parametrize("name", BROKEN)
def test_broken_workspace_fails_with_the_exact_message(suite: Suite, name: str):
    run = suite.runs[name]
    assert run.stderr == run.case.expected
    assert run.stdout == ""
    assert run.returncode == 2


@pytest.mark.parametrize("name", BROKEN)
def test_broken_workspace_json_error(
    cases: dict[str, Case],
    name: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    case = cases[name]
    assert case.expected is not None
    before = snapshot(case.root)
    captured = in_process(
        "--repo", str(case.root), "--json", "config", "check", env=cli_env(tmp_path)
    )
    assert captured.code == 2
    assert captured.stderr == ""
    report = captured.json()
    message = "\n".join(line.removeprefix(ERROR_PREFIX) for line in case.expected.splitlines())
    assert report["error"] == message
    problems = report["problems"]
    assert set(report) == {"error", "problems"}
    assert len(problems) == len(message.splitlines())
    for problem, line in zip(problems, message.splitlines(), strict=True):
        assert set(problem) == {"file", "line", "keyPath", "message"}
        where = (
            problem["file"] if problem["line"] is None else f"{problem['file']}:{problem['line']}"
        )
        fields = (where, problem["keyPath"], problem["message"])
        assert line == ": ".join(f for f in fields if f)
    assert [p["file"] for p in problems] == sorted(p["file"] for p in problems)
    assert snapshot(case.root) == before
    assert not (tmp_path / "state").exists()


# --- valid workspaces ---------------------------------------------------------------------


@pytest.mark.parametrize("name", VALID)
def test_valid_workspace_passes(suite: Suite, name: str):
    run = suite.runs[name]
    assert run.stderr == ""
    assert run.returncode == 0
    assert run.stdout.startswith("Configuration OK: ")
    assert run.stdout.endswith(".\n")
    assert run.stdout.count("\n") == 1


@pytest.mark.parametrize("name", VALID)
def test_valid_workspace_json(
    cases: dict[str, Case], name: str, capsys: pytest.CaptureFixture[str]
):
    case = cases[name]
    captured = in_process("config", "check", "--json", "--repo", str(case.root))
    assert captured.code == 0
    assert captured.stderr == ""
    report = captured.json()
    assert report["ok"] is True
    assert report["root"] == os.path.realpath(case.root)
    assert report["artifacts"] == report["folderArtifacts"] + report["fileArtifacts"] >= 1


def test_the_example_workspace_passes(tmp_path: Path):
    example = Path(__file__).resolve().parents[2] / "examples" / "handbook"
    (tmp_path / "home").mkdir()
    before = snapshot(example)
    result = run_cli(["--repo", str(example), "config", "check"], cli_env(tmp_path), tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("Configuration OK: 6 Artifacts")
    assert snapshot(example) == before
    assert not (tmp_path / "state").exists()


# --- nothing is written anywhere ------------------------------------------------------------


@pytest.mark.parametrize("name", BROKEN + VALID)
def test_config_check_writes_nothing(suite: Suite, name: str):
    run = suite.runs[name]
    assert run.after == run.before
    assert len(run.before) > 1


def test_config_check_creates_no_state(suite: Suite):
    assert len(suite.runs) == len(BROKEN) + len(VALID)
    for location in suite.state_locations:
        assert not location.exists(), location
    assert list(suite.home.iterdir()) == []
