"""``artifactize agent-setup claude|codex`` writes the control surface's MCP entry and the
skill, leaves identical files alone and refuses to overwrite a file with other content."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest


def setup(repo: Path, agent: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "artifactize.entrypoints.cli.app",
            "--repo",
            str(repo),
            "--json",
            "agent-setup",
            agent,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("agent", "config", "skill"),
    [
        ("claude", ".mcp.json", ".claude/skills/artifactize/SKILL.md"),
        ("codex", ".codex/config.toml", ".agents/skills/artifactize/SKILL.md"),
    ],
)
def test_agent_setup_writes_once_and_never_overwrites(
    tmp_path: Path, agent: str, config: str, skill: str
) -> None:
    first = setup(tmp_path, agent)
    assert first.returncode == 0, first.stdout
    assert json.loads(first.stdout)["files"] == [
        {"path": config, "state": "written"},
        {"path": skill, "state": "written"},
    ]
    text = (tmp_path / config).read_text(encoding="utf-8")
    if agent == "claude":
        server = json.loads(text)["mcpServers"]["artifactize"]
    else:
        server = tomllib.loads(text)["mcp_servers"]["artifactize"]
    assert server == {"command": "artifactize", "args": ["mcp", "--control"]}
    assert "verify_start" in (tmp_path / skill).read_text(encoding="utf-8")
    again = setup(tmp_path, agent)
    assert [f["state"] for f in json.loads(again.stdout)["files"]] == ["unchanged", "unchanged"]
    (tmp_path / config).write_text("mine\n", encoding="utf-8")
    refused = setup(tmp_path, agent)
    assert refused.returncode == 2
    assert f"{config} exists with other content" in json.loads(refused.stdout)["error"]
    assert (tmp_path / config).read_text(encoding="utf-8") == "mine\n"


def test_an_unknown_agent_is_refused(tmp_path: Path) -> None:
    done = setup(tmp_path, "gemini")
    assert done.returncode == 2 and "unknown agent 'gemini'" in json.loads(done.stdout)["error"]
