"""The README's tour, run as written (issue 12, Build 2), so it stays true.

Every shell block after a ``<!-- tour … -->`` marker is taken from README.md, in order, and
run by one bash process against a fresh clone-like directory (a copy of the bundled example
at ``examples/handbook``) with artifactize installed as the README says: the wheel built with
``python -m build`` and installed with ``uv tool install`` (tests/support/installed_tool.py),
its ``bin`` first on a ``PATH`` that holds no virtual environment's ``bin``. No API key is
set and the state home is private. A line whose comment
says ``exit N`` must exit N; every other line must exit 0. The stand-in provider, the
session harness and every tool process must be gone afterwards.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.installed_tool import InstalledTool, install
from tests.support.processes import no_process_left_behind as no_process_left_behind_in

pytestmark = pytest.mark.process  # the tour, as a user types it

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
TOUR_MARK = "<!-- tour"
EXPECTED_EXIT = re.compile(r"#.*\bexit (\d)\b")
TOUR_TIMEOUT_SECONDS = 300


def tour_commands(text: str) -> list[str]:
    """The command lines of the tour blocks, with ``\\`` continuations joined."""
    lines = text.splitlines()
    commands: list[str] = []
    index = 0
    while index < len(lines):
        if not lines[index].startswith(TOUR_MARK):
            index += 1
            continue
        index += 1
        assert lines[index].startswith("```sh"), f"README.md:{index + 1}: a tour block is sh"
        index += 1
        while not lines[index].startswith("```"):
            line = lines[index]
            index += 1
            while line.endswith("\\"):
                line = line[:-1] + " " + lines[index].strip()
                index += 1
            if line.strip():
                commands.append(line)
    return commands


def checked_script(commands: list[str]) -> str:
    """Bash that runs each command and stops at the first unexpected exit code."""
    parts = ["set -u"]
    for number, command in enumerate(commands, start=1):
        found = EXPECTED_EXIT.search(command)
        expected = int(found.group(1)) if found else 0
        parts.append(
            f"echo {shlex.quote(f'$ {command}')}\n"
            f"{command}\n"
            f"status=$?\n"
            f'if [ "$status" -ne {expected} ]; then '
            f'echo "tour step {number} exited $status, the README says {expected}" >&2; '
            f"exit 99; fi"
        )
    return "\n".join(parts) + "\n"


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=5):
        yield


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> InstalledTool:
    return install(tmp_path_factory.mktemp("installed"))


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """What the tour needs of a fresh clone: the bundled example."""
    root = tmp_path / "clone"
    shutil.copytree(REPO_ROOT / "examples" / "handbook", root / "examples" / "handbook")
    return root


def tour_environment(tmp_path: Path, path: str | None = None) -> dict[str, str]:
    """A user's environment. Without ``PYTHONDONTWRITEBYTECODE``: ``uv tool install`` writes
    no bytecode, so the installed tool caches it on its first run as on a user's machine
    (with the variable set, every step compiled every module it imports again: 30 s of CPU)."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    environment = {name: os.environ[name] for name in keep if name in os.environ}
    if path is not None:
        environment["PATH"] = path
    environment.update(
        {
            "HOME": str(tmp_path / "home"),
            "USER": "alice",
            "ARTIFACTIZE_STATE_HOME": str(tmp_path / "state"),
            "ARTIFACTIZE_REMOTE": "off",
        }
    )
    return environment


def test_the_tour_has_the_steps_the_issue_names() -> None:
    commands = tour_commands(README.read_text(encoding="utf-8"))
    text = "\n".join(commands)
    assert commands[0].startswith("cd examples/handbook")
    assert "PATH" not in text and ".venv" not in text  # the installed tool, nothing else
    assert "artifactize stand-in -- artifactize verify" in text
    for step in ("config check", "request claim", "request tool", "request submit", "status"):
        assert f"artifactize {step}" in text
    assert "--ignore-gates" not in text and "API_KEY" not in text


@pytest.mark.slow
def test_the_readme_tour_runs_as_written(clone: Path, tmp_path: Path, tool: InstalledTool) -> None:
    commands = tour_commands(README.read_text(encoding="utf-8"))
    script = tmp_path / "tour.sh"
    script.write_text(checked_script(commands), encoding="utf-8")
    (tmp_path / "home").mkdir()
    finished = subprocess.run(
        ["bash", str(script)],
        cwd=clone,
        env=tour_environment(tmp_path, tool.path()),
        capture_output=True,
        text=True,
        timeout=TOUR_TIMEOUT_SECONDS,
    )
    assert finished.returncode == 0, finished.stdout[-4000:] + finished.stderr[-4000:]
    out = finished.stdout
    assert "calc/review [" in out and "Execution: GREEN" in out
    # the stand-in called each of calc/review's Agent tools once, and said what it is
    assert "stand-in: calls coverage_calc" in finished.stderr
    assert "stand-in: answers GREEN" in finished.stderr
    assert '"approved": true' in out  # the submitted request
    assert "divide" in out  # the tools check results
    assert not (clone / "examples" / "handbook" / ".artifactize").exists()


def test_config_check_and_status_at_the_clone_root_skip_fixtures_and_the_example(
    tmp_path: Path,
) -> None:
    """The root .artfignore: 48 errors from tests/integration/fixtures used to greet a
    first `artifactize status` at the clone root."""
    # the checkout's own venv, compiled by `make test`: nothing to write into the checkout
    environment = {**tour_environment(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    artifactize = str(REPO_ROOT / ".venv" / "bin" / "artifactize")
    checked = subprocess.run(
        [artifactize, "--json", "config", "check"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    status = subprocess.run(
        [artifactize, "status"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode in (0, 1), status.stdout + status.stderr
    assert "fixtures" not in status.stdout + status.stderr
    assert "handbook" not in status.stdout + status.stderr
    ignored = (REPO_ROOT / ".artfignore").read_text(encoding="utf-8").splitlines()
    assert "tests/integration/fixtures/" in ignored and "examples/" in ignored
