"""MCP clients that are not ours, from npm, for the tests that drive ``artifactize mcp``
with them as a user would.

The MCP Inspector (``@modelcontextprotocol/inspector``, the protocol's own reference client)
and Claude Code (``@anthropic-ai/claude-code``, whose ``claude mcp list`` connects to each
configured server and needs no login), and Codex (``@openai/codex``, for the ``codex``
backend's tests) are installed at pinned versions into ``build/npm``
of the repository the first time a test asks for them (about 15 s and 110 MB, and 5 s and
240 MB, on this machine; later runs find them and install nothing). An exclusive file lock
around the check and the install keeps parallel test workers from racing. Without ``npm``
on the PATH the tests skip, saying so; an install that fails (no registry, a bad pin)
fails them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NPM_PREFIX = REPO / "build" / "npm"
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "2.12.0"
CLAUDE_CODE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_CODE_VERSION = "2.1.197"
CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.171.0"
INSTALL_TIMEOUT_SECONDS = 600
NPM_MISSING = "npm is not on the PATH: the tests with npm MCP clients need Node.js 20+ and npm"


def installed_version(prefix: Path, package: str) -> str | None:
    manifest = prefix / "node_modules" / package / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


@contextlib.contextmanager
def _install_lock(prefix: Path) -> Iterator[None]:
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def npm_client(package: str, version: str, command: str, prefix: Path = NPM_PREFIX) -> Path:
    """``command`` of ``package`` at ``version``, installed first when missing."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(NPM_MISSING)
    with _install_lock(prefix):
        if installed_version(prefix, package) != version:
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(prefix),
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    f"{package}@{version}",
                ],
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_SECONDS,
                env={**os.environ, "npm_config_update_notifier": "false"},
            )
            if done.returncode != 0 or installed_version(prefix, package) != version:
                pytest.fail(f"npm install {package}@{version} failed:\n{done.stderr}")
    return prefix / "node_modules" / ".bin" / command


def inspector_cli(prefix: Path = NPM_PREFIX) -> Path:
    """The Inspector's launcher (``mcp-inspector``)."""
    return npm_client(INSPECTOR_PACKAGE, INSPECTOR_VERSION, "mcp-inspector", prefix)


def claude_code(prefix: Path = NPM_PREFIX) -> Path:
    """Claude Code's ``claude``."""
    return npm_client(CLAUDE_CODE_PACKAGE, CLAUDE_CODE_VERSION, "claude", prefix)


def codex(prefix: Path = NPM_PREFIX) -> Path:
    """Codex's ``codex`` (the npm package brings the platform's native binary)."""
    return npm_client(CODEX_PACKAGE, CODEX_VERSION, "codex", prefix)
