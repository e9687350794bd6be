"""Helpers of the hostile suite: a tool that leaves a whole process group behind unless
someone cleans it up, and checks by psutil identity (pid + start time, never a bare pid)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

GROUP_CHILDREN = 3  # the tool's own children: with the tool itself, 4 processes per group
APPEAR_SECONDS = 30.0
GONE_SECONDS = 10.0


def spawning_tool_script(pid_file: Path) -> str:
    """A Python tool that starts ``GROUP_CHILDREN`` sleepers in its group, writes the pids
    of all four to ``pid_file`` (atomically), then sleeps. (Any ``python3``: no psutil.)"""
    return (
        "import json, os, subprocess, sys, time\n"
        "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"        for _ in range({GROUP_CHILDREN})]\n"
        "ids = [os.getpid()] + [k.pid for k in kids]\n"
        f"target = {str(pid_file)!r}\n"
        "with open(target + '.tmp', 'w') as out:\n"
        "    json.dump(ids, out)\n"
        "os.rename(target + '.tmp', target)\n"
        "time.sleep(600)\n"
    )


def wait_for_pids(pid_file: Path, timeout: float = APPEAR_SECONDS) -> list[tuple[int, float]]:
    deadline = time.monotonic() + timeout
    while not pid_file.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"the tool never wrote {pid_file}")
        time.sleep(0.02)
    identities = []
    for pid in json.loads(pid_file.read_text()):
        try:  # the start time right away: later checks must never trust a bare pid
            identities.append((int(pid), psutil.Process(pid).create_time()))
        except psutil.NoSuchProcess:
            continue
    return identities


def alive(identities: list[tuple[int, float]]) -> list[int]:
    """Pids of ``identities`` still running as the same process (not a zombie)."""
    living = []
    for pid, created in identities:
        try:
            process = psutil.Process(pid)
            if process.create_time() == created and process.status() != psutil.STATUS_ZOMBIE:
                living.append(pid)
        except psutil.NoSuchProcess:
            continue
    return living


def survivors(identities: list[tuple[int, float]], timeout: float = GONE_SECONDS) -> list[int]:
    """The processes of ``identities`` still alive after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    left = alive(identities)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = alive(identities)
    return left


def reap_strays(identities: list[tuple[int, float]]) -> None:
    """Kill what a failing test left behind, by identity, so one failure stays one."""
    for pid in alive(identities):
        try:
            process = psutil.Process(pid)
            if process.create_time() == dict(identities)[pid]:
                process.kill()
        except psutil.NoSuchProcess:
            continue


# --- a workspace with one process-starting thing of every kind ----------------------------

PYTHON = os.path.realpath(sys.executable)
QUICK_TOOL = 'print(\'{"content":[{"type":"text","text":"quick"}]}\')\n'
CLI_SECONDS = 120


def _toml(value: object) -> str:
    return json.dumps(value)


@dataclass
class HostileRepo:
    """``tools`` (an Agent json tool and a Human output tool that each lead a group of four,
    and a ``quick`` Agent tool), ``runtime`` (a runtime eval leading such a group) and ``fp``
    (a fingerprint script leading one). Each group writes its pids to ``pids(kind)``."""

    root: Path

    def __post_init__(self) -> None:
        self.path = self.root / "repo"
        self.state = self.root / "state"
        self.home = self.root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        scripts = self.root / "bin"
        scripts.mkdir(exist_ok=True)
        tools = self.path / "tools"
        tools.mkdir(parents=True)
        (tools / "spawn.py").write_text(spawning_tool_script(self.pids("agent")), "utf-8")
        (tools / "spawn_human.py").write_text(spawning_tool_script(self.pids("human")), "utf-8")
        (tools / "quick.py").write_text(QUICK_TOOL, "utf-8")
        (tools / "index.artf").write_text(
            'name = "tools"\n'
            "[views.agent_tools.spawn]\n"
            'description = "Spawn."\nprotocol = "json"\ncommand = "python3"\n'
            'args = ["spawn.py"]\n'
            "[views.agent_tools.quick]\n"
            'description = "Quick."\nprotocol = "json"\ncommand = "python3"\n'
            'args = ["quick.py"]\n'
            "[views.human_tools.spawn_human]\n"
            'description = "Spawn by hand."\nkind = "output"\ncommand = "python3"\n'
            'args = ["spawn_human.py"]\n',
            "utf-8",
        )
        runtime_script = scripts / "runtime.py"
        runtime_script.write_text(spawning_tool_script(self.pids("runtime")), "utf-8")
        (self.path / "runtime").mkdir()
        (self.path / "runtime" / "index.artf").write_text(
            'name = "runtime"\n[evals.spawn]\ntitle = "Spawn"\n'
            f'profile = {{ kind = "runtime", command = {_toml(PYTHON)}, '
            f"args = {_toml(['-S', str(runtime_script)])} }}\n"
            'payload.instruction = "Run."\n',
            "utf-8",
        )
        fingerprint_script = scripts / "fingerprint.py"
        fingerprint_script.write_text(spawning_tool_script(self.pids("fingerprint")), "utf-8")
        (self.path / "fp").mkdir()
        (self.path / "fp" / "main.txt").write_text("main\n", "utf-8")
        (self.path / "fp" / "index.artf").write_text(
            'name = "fp"\n'
            f"fingerprint = {{ script = {{ command = {_toml(PYTHON)}, "
            f'args = {_toml(["-S", str(fingerprint_script)])}, files = ["main.txt"] }} }}\n'
            '[evals.ok]\ntitle = "ok"\n'
            f'profile = {{ kind = "runtime", command = {_toml(PYTHON)}, args = ["-S", "-c", ""] }}\n'
            'payload.instruction = "Run ok."\n',
            "utf-8",
        )

    def pids(self, kind: str) -> Path:
        return self.root / f"{kind}.pids"

    def env(self) -> dict[str, str]:
        """The CLI's environment: this test's own home (and so its own group journal)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
        for name in ("XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            env.pop(name, None)
        env.update(
            HOME=str(self.home),
            ARTIFACTIZE_REMOTE="off",
            PYTHONDONTWRITEBYTECODE="1",
            TMPDIR=str(self.tmpdir()),
        )
        return env

    def tmpdir(self) -> Path:
        folder = self.root / "tmp"
        folder.mkdir(exist_ok=True)
        return folder

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "artifactize.entrypoints.cli.app", "--repo", str(self.path),
                "--state-dir", str(self.state), *args]  # fmt: skip

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args),
            env=self.env(),
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), env=self.env(), cwd=REPO_ROOT, capture_output=True, text=True,
            timeout=CLI_SECONDS, check=False,
        )  # fmt: skip


REPO_ROOT = Path(__file__).resolve().parents[2]

# The commands that start a group, by kind: the CLI arguments and which pid file they fill.
COMMAND_KINDS: dict[str, tuple[tuple[str, ...], str]] = {
    "tools-check-agent": (
        ("tools", "check", "--execute", "--artifact", "tools", "--audience", "agent",
         "--tool", "spawn"),
        "agent",
    ),
    "tools-check-human": (
        ("tools", "check", "--execute", "--artifact", "tools", "--audience", "human",
         "--tool", "spawn_human"),
        "human",
    ),
    "verify-runtime": (("--json", "verify", "runtime/spawn"), "runtime"),
    "status-fingerprint": (("--json", "status", "fp"), "fingerprint"),
}  # fmt: skip
NEXT_COMMAND = ("tools", "check", "--execute", "--artifact", "tools", "--audience", "agent",
                "--tool", "quick")  # fmt: skip


def kill_hard(process: subprocess.Popen[str]) -> None:
    """``kill -9`` the CLI and collect it (its group, a session of its own, runs on)."""
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=CLI_SECONDS)


# --- counts, and the 10x soak ------------------------------------------------------------

SCALE_VARIABLE = "HOSTILE_SCALE"  # `make soak` sets 10; CI runs the suite at 1
COUNTS_VARIABLE = "HOSTILE_COUNTS_FILE"  # where each test appends its counts (JSON lines)


def scale() -> int:
    value = os.environ.get(SCALE_VARIABLE, "1")
    return int(value) if value.isdigit() and int(value) > 0 else 1


def scaled(count: int) -> int:
    """``count`` in CI, ten times it under ``make soak``."""
    return count * scale()


def record_counts(name: str, trials: int, failures: int) -> None:
    """Append one count line for ``make soak`` to print (nothing when not soaking)."""
    target = os.environ.get(COUNTS_VARIABLE)
    if not target:
        return
    line = json.dumps({"name": name, "trials": trials, "failures": failures}) + "\n"
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
