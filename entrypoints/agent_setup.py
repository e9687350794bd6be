"""``artifactize agent-setup claude|codex``: the files that let a coding agent drive
artifactize in a project, shipped in the wheel.

- ``claude``: ``.mcp.json`` (the control surface, ``artifactize mcp --control``, as the
  project's MCP server ``artifactize``), the skill ``.claude/skills/artifactize/SKILL.md``
  and the Claude Code plugin manifest ``.claude-plugin/plugin.json`` naming both (so the
  repository installs as a plugin too: ``/plugin install``, or ``claude --plugin-dir .``);
- ``codex``: ``.codex/config.toml`` (the same server) and the same skill in
  ``.agents/skills/artifactize/SKILL.md``.

A file that exists with other content is never overwritten: the command refuses, naming it
(merge the entry by hand); one with the same content is left as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

from artifactize.entrypoints.errors import CommandError

AGENTS = ("claude", "codex")
SERVER = {"command": "artifactize", "args": ["mcp", "--control"]}
SKILL = """---
name: artifactize
description: Check, run and explain the reviews of this repository's Artifacts with
  artifactize (status, verify, reading a RED). Use before you finish a change, when asked
  whether something is reviewed, or when a review is RED.
---

# Reviews with artifactize

This repository declares Artifacts and their evals in `.artf` files; a verdict (GREEN or
RED) is reused while the Artifact's fingerprint and the eval hold. Use the `artifactize`
MCP tools:

1. `status` (optionally a selector, `ARTIFACT` or `ARTIFACT/EVAL`): what `verify` would do
   for each eval — reuse, execute or wait — and why. Run it after a change.
2. `verify_start` with the selector (and a one-line `comment` saying why): it answers a
   `runId` at once; the Run keeps going even if you stop.
3. `run_wait` with the `runId` until `settled` is true (each call waits at most
   `timeoutSeconds`).
4. Read the results: a RED request's `result` holds the reviewer's findings (the fields of
   its RED schema); an ERROR has `error` and `errorCode` (for example `AGENT_UNAVAILABLE`:
   a coding-agent backend that is not signed in). `eval_explain` says what an eval reads
   and why it would run again.

Explain a RED from its result, fix what it names, then `status` and `verify_start` again.
You cannot submit Human sign-offs: tell the person which requests wait for them
(`request_list` with `waiting`).
"""


PLUGIN_MANIFEST = ".claude-plugin/plugin.json"
PLUGIN = {
    "name": "artifactize",
    "description": "Check, run and explain the reviews of this repository's Artifacts "
    "(status, verify, reading a RED) through artifactize's MCP control surface.",
    "license": "Apache-2.0",
    "keywords": ["review", "mcp", "artifacts"],
    # paths relative to the plugin root (the repository): the files written beside it
    "mcpServers": "./.mcp.json",
    "skills": "./.claude/skills/",
}
"""Claude Code's plugin manifest: ``name`` is the one required field; ``mcpServers`` and
``skills`` point at the project's own entry and skill, so they are written once."""


def files(agent: str) -> dict[str, str]:
    """Relative path → content, for ``agent``."""
    if agent == "claude":
        config = json.dumps({"mcpServers": {"artifactize": SERVER}}, indent=2) + "\n"
        return {
            ".mcp.json": config,
            ".claude/skills/artifactize/SKILL.md": SKILL,
            PLUGIN_MANIFEST: json.dumps(PLUGIN, indent=2) + "\n",
        }
    if agent == "codex":
        config = (
            "[mcp_servers.artifactize]\n"
            f'command = "{SERVER["command"]}"\n'
            f"args = {json.dumps(SERVER['args'])}\n"
        )
        return {".codex/config.toml": config, ".agents/skills/artifactize/SKILL.md": SKILL}
    raise CommandError(f"agent-setup: unknown agent {agent!r}; use one of: {', '.join(AGENTS)}.")


def set_up(agent: str, repo: str) -> list[dict[str, str]]:
    """Write the files into ``repo``; each with ``written`` or ``unchanged``. Refuses before
    writing anything when one exists with other content."""
    wanted = files(agent)
    root = Path(repo)
    for relative, content in wanted.items():
        path = root / relative
        if path.exists() and path.read_text(encoding="utf-8") != content:
            raise CommandError(
                f"agent-setup: {relative} exists with other content; add the artifactize "
                "entry to it by hand (docs/agents.md)."
            )
    done = []
    for relative, content in wanted.items():
        path = root / relative
        state = "unchanged" if path.exists() else "written"
        if state == "written":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
        done.append({"path": relative, "state": state})
    return done
