"""``artifactize agent-setup claude|codex``: parse, write (``entrypoints.agent_setup``),
render."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.cli.options import argument


def agent_setup_command(
    agent: Annotated[str, argument("claude or codex.")],
) -> None:
    """Write the control-surface MCP entry and the artifactize skill for Claude Code or Codex.

    Into the repository; a file that exists with other content is never overwritten."""
    from artifactize.entrypoints.agent_setup import set_up

    done = set_up(agent, os.path.realpath(CliContext.options.repo))
    if CliContext.options.json:
        typer.echo(json.dumps({"agent": agent, "files": done}))
    else:
        typer.echo("\n".join(f"{item['state']}: {item['path']}" for item in done))
