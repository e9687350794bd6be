"""The fault suite's workspace: a repository with runtime evals (one fills the disk it is
told to), its own state directory and home, and the CLI run as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.hostile import CLI_SECONDS, PYTHON, REPO_ROOT

FILL_SCRIPT = (
    "import sys\n"
    "with open(sys.argv[1], 'wb') as out:\n"
    "    try:\n"
    "        while True:\n"
    "            out.write(b'x' * 4096)\n"
    "            out.flush()\n"
    "    except OSError:\n"
    "        pass\n"
    "print('filled')\n"
)


@dataclass
class FaultRepo:
    """``r/ok`` (a quick runtime eval) and ``f/fill`` (fills the file system holding
    ``fill_target``, then passes), under ``root``."""

    root: Path
    state: Path

    def __post_init__(self) -> None:
        self.path = self.root / "repo"
        self.home = self.root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.fill_target = self.state.parent / "filler"
        script = self.root / "fill.py"
        script.write_text(FILL_SCRIPT, "utf-8")
        ok = json.dumps(["-S", "-c", "print('ok')"])
        fill = json.dumps(["-S", str(script), str(self.fill_target)])
        for artifact, eval_id, args in (("r", "ok", ok), ("f", "fill", fill)):
            (self.path / artifact).mkdir(parents=True)
            (self.path / artifact / "index.artf").write_text(
                f'name = "{artifact}"\n'
                f'[evals.{eval_id}]\ntitle = "{eval_id}"\nprofile = {{ kind = "runtime", '
                f'command = {json.dumps(PYTHON)}, args = {args} }}\npayload.instruction = "Run."\n',
                "utf-8",
            )

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
        for name in ("XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            env.pop(name, None)
        env.update(HOME=str(self.home), ARTIFACTIZE_REMOTE="off", PYTHONDONTWRITEBYTECODE="1")
        return env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "artifactize.entrypoints.cli.app", "--repo", str(self.path),
                "--state-dir", str(self.state), *args]  # fmt: skip

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), env=self.env(), cwd=REPO_ROOT, capture_output=True, text=True,
            timeout=CLI_SECONDS, check=False,
        )  # fmt: skip

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args), env=self.env(), cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> FaultRepo:
    return FaultRepo(tmp_path, tmp_path / "state")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every fault test is ``process``: the command under fault must be a process of its own
    (a Run left RUNNING by a command that failed to write is settled by the next reader only
    once its owner has exited; hang-ups and frozen servers need a process to hang up on)."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.process)
