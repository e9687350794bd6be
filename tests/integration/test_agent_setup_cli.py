"""``artifactize agent-setup claude|codex`` writes the control surface's MCP entry and the
skill, leaves identical files alone and refuses to overwrite a file with other content."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from artifactize.entrypoints.agent_setup import PLUGIN_MANIFEST, files
from tests.support.cli import CliResult, run_cli

REPO_ROOT = Path(__file__).resolve().parents[2]
KEBAB_CASE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def setup(repo: Path, agent: str) -> CliResult:
    return run_cli("--repo", str(repo), "--json", "agent-setup", agent)


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
    plugin = [PLUGIN_MANIFEST] if agent == "claude" else []
    assert json.loads(first.stdout)["files"] == [
        {"path": path, "state": "written"} for path in [config, skill, *plugin]
    ]
    text = (tmp_path / config).read_text(encoding="utf-8")
    if agent == "claude":
        server = json.loads(text)["mcpServers"]["artifactize"]
    else:
        server = tomllib.loads(text)["mcp_servers"]["artifactize"]
    assert server == {"command": "artifactize", "args": ["mcp", "--control"]}
    assert "verify_start" in (tmp_path / skill).read_text(encoding="utf-8")
    again = setup(tmp_path, agent)
    assert {f["state"] for f in json.loads(again.stdout)["files"]} == {"unchanged"}
    (tmp_path / config).write_text("mine\n", encoding="utf-8")
    refused = setup(tmp_path, agent)
    assert refused.returncode == 2
    assert f"{config} exists with other content" in json.loads(refused.stdout)["error"]
    assert (tmp_path / config).read_text(encoding="utf-8") == "mine\n"


def test_an_unknown_agent_is_refused(tmp_path: Path) -> None:
    done = setup(tmp_path, "gemini")
    assert done.returncode == 2 and "unknown agent 'gemini'" in json.loads(done.stdout)["error"]


def test_the_claude_plugin_manifest_is_valid_and_names_what_is_written(tmp_path: Path) -> None:
    """Claude Code's manifest: JSON, a kebab-case ``name`` (its one required field), string
    metadata, and ``mcpServers`` / ``skills`` paths (``./``-relative to the plugin root)
    that lead to the MCP entry and the skill ``agent-setup claude`` writes beside it."""
    assert setup(tmp_path, "claude").returncode == 0
    manifest = json.loads((tmp_path / PLUGIN_MANIFEST).read_text(encoding="utf-8"))
    assert KEBAB_CASE.match(manifest["name"]) and manifest["name"] == "artifactize"
    assert all(isinstance(manifest[field], str) for field in ("description", "license"))
    assert all(isinstance(word, str) for word in manifest["keywords"])
    assert manifest["mcpServers"].startswith("./") and manifest["skills"].startswith("./")
    servers = json.loads((tmp_path / manifest["mcpServers"]).read_text(encoding="utf-8"))
    assert servers["mcpServers"]["artifactize"]["args"] == ["mcp", "--control"]
    assert (tmp_path / manifest["skills"] / "artifactize" / "SKILL.md").is_file()
    assert set(manifest) <= {"name", "description", "license", "keywords", "mcpServers", "skills"}


def test_the_repository_ships_what_agent_setup_claude_writes() -> None:
    """The plugin is shipped in this repository: the same files, byte for byte."""
    for relative, content in files("claude").items():
        assert (REPO_ROOT / relative).read_text(encoding="utf-8") == content, relative
