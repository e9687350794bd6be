"""A copy of the bundled example whose ``calc/review`` runs on a coding agent (Claude Code or
Codex), for the tests that drive the real CLIs through ``verify`` against the fake provider.

The copy gains a PNG and a ``view_image`` tool (``shot_calc``) beside the example's own
tools. The world has its own HOME (so no sign-in or setting of the person running the tests
applies), TMPDIR (the agents' private folders are made there, so a leftover one or a process
naming one is found) and state home. ``Script`` is the scripted model: one reply per review
request, in order. ``AgentClient`` is what the two agents' test files differ by: the backend,
its program's variable, its model, its sign-in to the fake provider.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.test_tool_sessions import harness_processes, wait_until
from tests.support.fake_provider import FakeProvider, ReceivedRequest, Reply, error
from tests.support.images import PNG1

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "handbook"
EVAL = "calc/review"
API_PROFILE = (
    'profile = { kind = "agent", backend = "anthropic", model = "claude-sonnet-4-5", '
    'reasoning = "high" }'
)
DECLARED_TOOLS = ("read", "search", "coverage", "evaluate", "shot")
VERIFY_SECONDS = 240
EXIT_SECONDS = 30.0


class Script:
    """The scripted model: each review request takes the next reply; ``side`` answers the
    requests an agent makes on the side (Claude Code's session title) when it says so."""

    def __init__(
        self, *steps: Reply, side: Callable[[ReceivedRequest], Reply | None] | None = None
    ):
        self.steps = list(steps)
        self.side = side
        self.requests: list[ReceivedRequest] = []
        self.lock = threading.Lock()
        self.arrived = threading.Event()

    def __call__(self, request: ReceivedRequest) -> Reply:
        if self.side is not None:
            answer = self.side(request)
            if answer is not None:
                return answer
        with self.lock:
            self.requests.append(request)
            self.arrived.set()
            if not self.steps:
                return error(500, "The test's script is exhausted.")
            return self.steps.pop(0)

    def body(self, index: int) -> dict[str, Any]:
        body: dict[str, Any] = self.requests[index].body
        return body


class AgentWorld:
    def __init__(
        self,
        root: Path,
        backend: str,
        program: Path,
        program_variable: str,
        model: str,
        profile_extra: str = "",
    ) -> None:
        self.root = root
        self.repo = root / "repo"
        self.program = program
        self.program_variable = program_variable
        shutil.copytree(EXAMPLE, self.repo)
        declaration = self.repo / "code" / "index.artf"
        text = declaration.read_text(encoding="utf-8")
        assert API_PROFILE in text, "the example's calc/review profile changed"
        profile = (
            f'profile = {{ kind = "agent", backend = "{backend}", model = "{model}"'
            f"{profile_extra} }}"
        )
        text = text.replace(API_PROFILE, profile)
        text = text.replace(
            "[views.agent_tools]\n", '[views.agent_tools]\nshot = { builtin = "view_image" }\n', 1
        )
        declaration.write_text(text, encoding="utf-8")
        (self.repo / "code" / "diagram.png").write_bytes(PNG1)
        self.home = root / "home"
        self.tmp = root / "tmp"
        self.state = root / "state"
        for folder in (self.home, self.tmp):
            folder.mkdir()

    def env(self, fake: FakeProvider, **extra: str) -> dict[str, str]:
        """The caller's environment without any key or endpoint of the person running the
        tests, plus ``extra`` (an empty value removes a variable)."""
        environment = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("ARTIFACTIZE_", "ANTHROPIC_", "OPENAI_", "CODEX_"))
        }
        environment.update(
            HOME=str(self.home),
            TMPDIR=str(self.tmp),
            ARTIFACTIZE_STATE_HOME=str(self.state),
            PYTHONDONTWRITEBYTECODE="1",
        )
        environment[self.program_variable] = str(self.program)
        environment.update(extra)
        return {name: value for name, value in environment.items() if value}

    def command(self, *args: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "artifactize.entrypoints.cli.app",
            "--repo",
            str(self.repo),
            "--json",
            *args,
        ]

    def verify(self, fake: FakeProvider, **extra: str) -> tuple[int, dict[str, Any]]:
        """``verify --recursive calc/review`` (the example's gate runs first)."""
        done = subprocess.run(
            self.command("verify", "--recursive", EVAL),
            capture_output=True,
            text=True,
            env=self.env(fake, **extra),
            timeout=VERIFY_SECONDS,
        )
        assert done.stdout, done.stderr
        return done.returncode, json.loads(done.stdout)

    def run(self, fake: FakeProvider, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            capture_output=True,
            text=True,
            env=self.env(fake, **extra),
            timeout=VERIFY_SECONDS,
        )

    def interrupted_verify(self, env: dict[str, str], script: Script) -> dict[str, Any]:
        """``verify`` as ``verify()`` runs it, interrupted (SIGINT) once the agent asked the
        model and is running; the Run it printed."""
        verify = subprocess.Popen(
            self.command("verify", "--recursive", EVAL),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert script.arrived.wait(VERIFY_SECONDS), "the agent never asked the model"
            assert harness_processes(self.root), "the agent is running"
            verify.send_signal(signal.SIGINT)
            out, _ = verify.communicate(timeout=VERIFY_SECONDS)
        finally:
            if verify.poll() is None:
                verify.kill()
                verify.wait()
        run: dict[str, Any] = json.loads(out)
        return run

    def fake_program(self, body: str) -> Path:
        """A stand-in agent program that behaves as a test needs (a crash, noise...)."""
        path = self.root / "bin" / self.program.name
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return path

    def nothing_left(self) -> None:
        """No process names the world's folder; every private folder of ours is gone."""
        assert wait_until(lambda: not harness_processes(self.root), EXIT_SECONDS), [
            process.cmdline() for process in harness_processes(self.root)
        ]
        ours = [path for path in self.tmp.iterdir() if path.name.startswith("artifactize-")]
        assert ours == [], "the private folders of every run were removed"


def request_of(run: dict[str, Any]) -> dict[str, Any]:
    found: list[dict[str, Any]] = [r for r in run["requests"] if r["evalId"] == EVAL]
    assert len(found) == 1, run["requests"]
    return found[0]


@dataclass(frozen=True)
class AgentClient:
    """One coding agent as its client tests drive it: its ``backend``, the variable that
    names its program, the model its profile names, and the endpoint and key variables that
    sign it in to the fake provider (with ``key``)."""

    backend: str
    program_variable: str
    model: str
    endpoint_variable: str
    key_variable: str
    key: str

    def world(self, root: Path, program: Path, extra: str = "") -> AgentWorld:
        """A world whose ``calc/review`` runs on this agent (``extra``: more profile keys)."""
        return AgentWorld(root, self.backend, program, self.program_variable, self.model, extra)

    def worlds(self, root: Path, program: Path) -> Iterator[AgentWorld]:
        """A world for one test (a fixture's body), checked for leftovers after it."""
        made = self.world(root, program)
        yield made
        made.nothing_left()

    def signed_in(self, fake: FakeProvider) -> dict[str, str]:
        return {self.endpoint_variable: fake.base_url, self.key_variable: self.key}

    def doctor(self, world: AgentWorld, signed: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        """``doctor``'s report (signed in or not) and its entry for this agent."""
        with FakeProvider(check_sdk=False) as fake:
            done = world.run(fake, "doctor", **(self.signed_in(fake) if signed else {}))
        report: dict[str, Any] = json.loads(done.stdout)
        [agent] = [b for b in report["backends"] if b["backend"] == self.backend]
        return report, agent
