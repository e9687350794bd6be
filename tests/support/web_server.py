"""A real ``artifactize web`` for the tests: a repository with one waiting Human request,
the server started as a process on 127.0.0.1, and an HTTP client signed in with its token.

The repository declares ``doc`` with the Human eval ``signoff`` (GREEN: ``approved`` const
true and an integer ``score`` ≥ 1; RED: a required string ``reason`` and at most two
``problems``) and three Human
tools: ``show`` (an output tool printing to stdout and stderr), ``wait`` (sleeps until
cancelled) and ``serve`` (a launch tool that prints and exits). Its files include Markdown
and an SVG with script in them.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2

from tests.support.cli import CliResult, run_cli
from tests.support.human_workspace import artifact, human_tool

STOPPED = 2  # the exit code of a command a stop signal ended (docs/robustness.md)
READY_SECONDS = 30
STOP_SECONDS = 15
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0000003010100c9fe92ef0000000049454e44ae426082"
)
SCRIPT_MARKDOWN = (
    "# Notes\n\nThe answer is **42**.\n\n<script>window.pwned = 1</script>\n\n"
    "[click](javascript:window.pwned=2)\n"
)
SCRIPT_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" onload="window.pwned=3">'
    '<script>window.pwned = 4</script><rect width="40" height="20" fill="#36c"/></svg>\n'
)


def sleep_mark() -> str:
    """The ``wait`` tool's sleep argument: unique to this test process."""
    return f"986.{os.getpid()}"


SIGNOFF = """[evals.signoff]
title = "Signed off"
profile = { kind = "human" }
payload.instruction = "Read the **notes** of {doc} with `show_doc`, then sign off."

[evals.signoff.pass_schema]
type = "object"
properties.approved = { const = true }
properties.score = { type = "integer", minimum = 1 }
required = ["approved", "score"]
additionalProperties = false

[evals.signoff.fail_schema]
type = "object"
properties.reason = { type = "string", minLength = 1 }
properties.problems = { type = "array", items = { type = "string", minLength = 1 }, maxItems = 2 }
required = ["reason"]
"""


def write_repository(repo: Path, gate: Path) -> None:
    """The repository; ``show`` prints its first lines, then waits for ``gate`` to exist
    (outside the repository, so its fingerprint holds) before its last line, so a test sees
    the lines arrive while the program still runs."""
    doc = repo / "doc"
    doc.mkdir(parents=True)
    wait = f"while [ ! -e '{gate}' ]; do sleep 0.05; done"
    text = artifact(
        "doc",
        human_tool(
            "show",
            "Show the notes.",
            "sh",
            ["-c", f"cat notes.txt; echo 'a warning' >&2; {wait}; echo done"],
        ),
        human_tool("wait", "Wait for a long time.", "sleep", [sleep_mark()]),
        human_tool(
            "serve",
            "Start a preview.",
            "sh",
            ["-c", "echo preview on; sleep 0.3; echo preview off"],
            kind="launch",
        ),
        SIGNOFF,
    )
    (doc / "index.artf").write_text(text, encoding="utf-8")
    (doc / "notes.txt").write_text("The answer is 42.\nSecond line.\n", encoding="utf-8")
    (doc / "guide.md").write_text(SCRIPT_MARKDOWN, encoding="utf-8")
    (doc / "diagram.svg").write_text(SCRIPT_SVG, encoding="utf-8")
    (doc / "page.html").write_text("<script>window.pwned = 5</script>\n", encoding="utf-8")
    (doc / "pixel.png").write_bytes(PNG_1X1)
    (repo / "secret.txt").write_text("outside the scope\n", encoding="utf-8")


def environment(state: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    return {
        "PATH": keep.get("PATH", "/usr/bin:/bin"),
        "HOME": keep.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "ARTIFACTIZE_REMOTE": "off",
        "ARTIFACTIZE_STATE_HOME": str(state),
        "USER": "someone-else",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


class World:
    """The repository, its state, and the CLI: run in process by ``cli``, as a process by
    ``argv``'s command line."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.repo = root / "repo"
        self.state = root / "state"
        self.gate = root / "gate"
        self.env = {**environment(self.state), **(env or {})}  # a team store, say
        write_repository(self.repo, self.gate)

    def cli(self, *args: str) -> tuple[int, Any]:
        """One command in this process (tests/support/cli.py); the server is the process.
        A real process where an event loop is marked running (Playwright's sync API does
        between its calls, in the browser tests): the CLI runs a loop of its own."""
        argv = self.argv("--json", *args)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            done: CliResult | subprocess.CompletedProcess[str] = run_cli(*argv[3:], env=self.env)
        else:
            done = subprocess.run(
                argv, capture_output=True, text=True, env=self.env, timeout=120, check=False
            )
        try:
            return done.returncode, json.loads(done.stdout)
        except ValueError:
            return done.returncode, done.stdout + done.stderr

    def argv(self, *args: str) -> list[str]:
        """The CLI as a process, on this repository and state."""
        return [
            sys.executable,
            "-m",
            "artifactize.entrypoints.cli.app",
            "--repo",
            str(self.repo),
            "--state-dir",
            str(self.state),
            *args,
        ]

    def waiting(self) -> tuple[str, str]:
        """A new Run left waiting for a person: (run ID, request ID)."""
        code, run = self.cli("verify", "--all")
        assert code == 4, run
        (request,) = run["requests"]
        assert request["status"] == "WAITING_HUMAN"
        return str(run["id"]), str(request["id"])

    def show(self, request_id: str) -> Any:
        code, view = self.cli("request", "show", request_id)
        assert code == 0, view
        return view


class WebServer:
    """``artifactize web --no-browser --reviewer alice`` as a process, and a client."""

    def __init__(self, world: World, *extra: str) -> None:
        argv = world.argv("web", "--no-browser", "--reviewer", "alice", *extra)
        self.process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=world.env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("http://127.0.0.1:"):
            self.stop()
            raise AssertionError(f"no URL printed: {line!r} {self.process.stderr}")
        self.url = line
        self.base, _, query = line.partition("/?")
        self.token = query.removeprefix("token=")
        self.port = int(self.base.rsplit(":", 1)[1])
        self.client = httpx2.Client(base_url=self.base, timeout=30)
        self.client.cookies.set(f"artifactize_web_{self.port}", self.token)

    def anonymous(self) -> httpx2.Client:
        return httpx2.Client(base_url=self.base, timeout=30)

    def csrf(self, request_id: str) -> str:
        page = self.client.get(f"/request/{request_id}").text
        marker = 'name="csrf" value="'
        start = page.index(marker) + len(marker)
        return page[start : page.index('"', start)]

    def claimed(self, world: World) -> tuple[str, str]:
        """A new waiting request, claimed by this server's reviewer: its ID and the CSRF
        token the page carries."""
        _, request_id = world.waiting()
        csrf = self.csrf(request_id)
        claimed = self.post(f"/request/{request_id}/claim", {"csrf": csrf})
        assert claimed.status_code == 303, claimed.text
        return request_id, csrf

    def post(self, path: str, data: dict[str, str], **headers: str) -> httpx2.Response:
        return self.client.post(path, data=data, headers=headers, follow_redirects=False)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Stop the server with ``sig``; its exit code (``STOPPED``, as for every command a
        stop signal ends)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise
        finally:
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()
            if hasattr(self, "client"):
                self.client.close()
        return code


def wait_until(check: Any, timeout: float = READY_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)
