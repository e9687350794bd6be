"""A workspace for ``artifactize mcp`` tests and the benchmark, and a way to start the server.

Artifact ``doc`` (folder ``doc/``) declares every built-in, a json tool ``probe`` (text,
JSON, a list, mixed text + JSON + image, an authored error, or a slow call with a
grandchild), a plain tool ``show`` (``cat``), and the tool session ``app`` of
``tests/integration/session_harness.py`` with its bound json tool ``act``. Its evals: the
Agent eval ``doc/review``, the Human eval ``doc/signoff`` and the runtime eval
``doc/check``. Artifact ``broken`` has an Agent eval whose tool names an execution path that
does not exist (its pins fail).

Every process the tools start has ``records`` (outside the repository) on its command line,
so a test finds them with psutil.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.images import PNG1
from tests.support.workspaces import toml_value as toml

PYTHON = os.path.realpath(sys.executable)
HARNESS = str(Path(__file__).resolve().parents[1] / "integration" / "session_harness.py")
INSTRUCTION = "Check that {doc} explains every command."
PASS_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"const": True}},
    "required": ["approved"],
    "additionalProperties": False,
}

PROBE = r"""
import base64, json, os, subprocess, sys, time
request = json.load(sys.stdin)
kind = request["args"]["kind"]
records = sys.argv[1]
def emit(result):
    json.dump(result, sys.stdout)
    sys.exit(0)
if kind == "json":
    emit({"content": [{"type": "json", "data": {"answer": 42, "kind": "json"}}]})
if kind == "text":
    emit({"content": [{"type": "text", "text": "plain words"}]})
if kind == "list":
    emit({"content": [{"type": "json", "data": [1, 2, 3]}]})
if kind == "mixed":
    with open("pic.png", "rb") as handle:
        image = base64.b64encode(handle.read()).decode("ascii")
    emit({"content": [
        {"type": "text", "text": "a picture"},
        {"type": "json", "data": {"n": 1}},
        {"type": "image", "mimeType": "image/png", "data": image},
    ]})
if kind == "fail":
    emit({"isError": True, "content": [{"type": "text", "text": "authored failure"}]})
if kind == "sleep":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", records])
    with open(os.path.join(records, "sleeper.pid.tmp"), "w") as handle:
        handle.write(str(child.pid))
    os.replace(os.path.join(records, "sleeper.pid.tmp"), os.path.join(records, "sleeper.pid"))
    time.sleep(120)
"""

GUIDE = "# Guide\n\nIntro.\n\n## Commands\n\nEvery command.\n\n## Limits\n\nNone.\n"


@dataclass
class McpWorld:
    root: Path

    def __post_init__(self) -> None:
        self.repo = self.root / "repo"
        self.records = self.root / "records"
        self.state = self.root / "state"
        self.records.mkdir(parents=True, exist_ok=True)
        self.declare()

    @property
    def doc(self) -> Path:
        return self.repo / "doc"

    def harness(self, mode: str, *options: str) -> list[str]:
        return ["-S", HARNESS, mode, str(self.records), *options]

    def declare(self) -> None:
        doc = self.doc
        (doc / "tools").mkdir(parents=True, exist_ok=True)
        (doc / "notes.txt").write_text("hello\nworld\n", encoding="utf-8")
        (doc / "long.txt").write_text(
            "".join(f"line {n} {'x' * 60}\n" for n in range(1, 301)), encoding="utf-8"
        )
        (doc / "guide.md").write_text(GUIDE, encoding="utf-8")
        (doc / "pic.png").write_bytes(PNG1)
        (doc / "tools" / "probe.py").write_text(PROBE, encoding="utf-8")
        kinds = ["json", "text", "list", "mixed", "fail", "sleep"]
        probe_schema = {
            "type": "object",
            "properties": {"kind": {"enum": kinds}},
            "required": ["kind"],
            "additionalProperties": False,
        }
        show_schema = {
            "type": "object",
            "properties": {"page": {"type": "string", "pattern": "^[a-z]+\\.txt$"}},
            "required": ["page"],
            "additionalProperties": False,
        }
        act_schema = {
            "type": "object",
            "properties": {"sleep": {"type": "number"}},
            "additionalProperties": False,
        }
        fail_schema = {
            "type": "object",
            "properties": {"reason": {"type": "string"}},
            "required": ["reason"],
        }
        agent = {"kind": "agent", "backend": "openai", "model": "m1"}
        runtime = {"kind": "runtime", "command": PYTHON, "args": ["-c", "pass"]}
        lines = [
            'name = "doc"',
            "[views.agent_tools]",
            'read = { builtin = "read" }',
            'list = { builtin = "list" }',
            'glob = { builtin = "glob" }',
            'grep = { builtin = "grep" }',
            'view_image = { builtin = "view_image" }',
            'section = { builtin = "section", args = ["guide.md"] }',
            'help = { builtin = "help", args = ["cat"] }',
            'graph = { builtin = "graph", args = [] }',
            "[views.agent_tools.probe]",
            'description = "Probe {artifactName}."',
            'protocol = "json"',
            f"command = {toml(PYTHON)}",
            f"args = {toml(['tools/probe.py', str(self.records)])}",
            f"input_schema = {toml(probe_schema)}",
            'execution_paths = ["doc/tools/probe.py"]',
            "timeout_ms = 60000",
            "[views.agent_tools.show]",
            'description = "Show a page of {artifactName}."',
            'protocol = "plain"',
            'command = "cat"',
            'args = ["{page}"]',
            f"input_schema = {toml(show_schema)}",
            "[views.agent_sessions.app]",
            f"start = {toml({'command': PYTHON, 'args': self.harness('start')})}",
            f"stop = {toml({'command': PYTHON, 'args': self.harness('stop')})}",
            "[views.agent_tools.act]",
            'session = "app"',
            'description = "Act on {artifactName}."',
            'protocol = "json"',
            f"command = {toml(PYTHON)}",
            f"args = {toml(self.harness('call'))}",
            f"input_schema = {toml(act_schema)}",
            "[evals.review]",
            'title = "The guide explains every command"',
            f"profile = {toml(agent)}",
            f"payload.instruction = {toml(INSTRUCTION)}",
            f"pass_schema = {toml(PASS_SCHEMA)}",
            f"fail_schema = {toml(fail_schema)}",
            "[evals.signoff]",
            'title = "Signed off"',
            'profile = { kind = "human" }',
            'payload.instruction = "Sign off {doc}."',
            "[evals.check]",
            'title = "Runs"',
            f"profile = {toml(runtime)}",
            'payload.instruction = "Run it."',
        ]
        (doc / "index.artf").write_text("\n".join(lines) + "\n", encoding="utf-8")
        broken = self.repo / "broken"
        broken.mkdir(parents=True, exist_ok=True)
        broken_lines = [
            'name = "broken"',
            "[views.agent_tools.run]",
            'protocol = "plain"',
            f"command = {toml(PYTHON)}",
            'description = "Run."',
            'args = ["missing.py"]',
            'execution_paths = ["broken/missing.py"]',
            "[evals.review]",
            'title = "Broken"',
            f"profile = {toml(agent)}",
            'payload.instruction = "Review {broken}."',
        ]
        (broken / "index.artf").write_text("\n".join(broken_lines) + "\n", encoding="utf-8")

    def cli_args(self, *args: str) -> list[str]:
        return [
            sys.executable,  # the venv's interpreter (PYTHON, its real path, lacks our packages)
            "-m",
            "artifactize.entrypoints.cli.app",
            "--repo",
            str(self.repo),
            "--state-dir",
            str(self.state),
            *args,
        ]

    def env(self) -> dict[str, str]:
        environment = dict(os.environ)
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        return environment

    def events(self, kind: str) -> list[dict[str, Any]]:
        path = self.records / "events.jsonl"
        if not path.exists():
            return []
        entries = [json.loads(line) for line in path.read_text().splitlines()]
        return [entry for entry in entries if entry["event"] == kind]
