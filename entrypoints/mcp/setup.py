"""Building one ``ServingRun`` from the composition root: workspace, scope and pins, the
state's MCP audit, tool-session ports and a private scratch folder.

Kept beside the server (not in ``bootstrap``) so the mcp command's wiring stays in its own
room; it asks the container and ``Services`` for everything, as a command does.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from artifactize.domain.tools.serving import (
    ServedScope,
    ServeRefused,
    ServeSelection,
    ServingPorts,
    ServingRun,
)
from artifactize.entrypoints.bootstrap import RUNS_FOLDER, Services
from artifactize.entrypoints.errors import CommandError
from artifactize.ports.mcp_audit import McpAuditStore


@dataclass
class PreparedServer:
    run: ServingRun
    audit: McpAuditStore
    scratch: Path

    def finish(self) -> None:
        """After the run: release the state, drop the scratch folder if the calls left it
        empty (anything left in it stays)."""
        self.audit.close()
        with contextlib.suppress(OSError):
            self.scratch.rmdir()


def prepare_server(services: Services, selection: ServeSelection, transport: str) -> PreparedServer:
    """Everything checked before serving; raises ``CommandError`` (exit 2)."""
    from artifactize.domain.state_home import StateLocationError, check_outside_repo
    from artifactize.domain.tools.serving import prepare_scope

    container = services.container
    repo = services.repo()
    workspace = services.config().load(repo)
    try:
        served: ServedScope = prepare_scope(workspace, selection, container.tool_ports())
    except ServeRefused as exc:  # a pin failure carries the review's PREPARATION_FAILED text
        raise CommandError(exc.message) from None
    state = services.state_dir()
    try:
        check_outside_repo(os.path.realpath(state), repo)
    except StateLocationError as exc:
        raise CommandError(str(exc)) from None
    from artifactize.ports.state import StateError

    try:
        audit = container.mcp_audit_stores().open(state, create=True)
    except StateError as exc:
        raise CommandError(str(exc)) from None
    assert audit is not None
    ports = ServingPorts(
        audit=audit,
        sessions=services.session_ports(),
        clock=container.clock(),
        ids=container.ids(),
    )
    run = ServingRun(served, ports, repo, transport=transport)
    run.session_id = run.new_session_id()
    run.output_root = services.output_root(run.session_id)
    return PreparedServer(run, audit, Path(state) / RUNS_FOLDER / run.session_id)
