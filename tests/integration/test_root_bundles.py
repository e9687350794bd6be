"""Every port bundle the CLI, the terminal reviewer, the monitor and the MCP server use,
built by the real composition root (``Container`` + ``Services``) and checked field by
field, so a wiring mistake there (a port left at its default, a bundle built without an
adapter) fails here rather than only on a user's machine (issue 23, item 8).

The bundles are built over the bundled example and a state home under ``tmp_path``; no
process is started.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from artifactize.domain.declarations.model import AgentProfile
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.use_cases.serving import ServeSelection
from artifactize.entrypoints.bootstrap import Services
from artifactize.entrypoints.cli.global_options import GlobalOptions
from artifactize.entrypoints.container import (
    DESKTOP_OPENER,
    FALLBACK_EDITOR,
    SELF_COMMAND,
    Container,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "handbook"
PLATFORM_PREFIX = (
    "artifactize.adapters.windows" if sys.platform == "win32" else ("artifactize.adapters.posix")
)


@pytest.fixture
def services(tmp_path: Path) -> Services:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    options = GlobalOptions(repo=str(repo), state_dir=str(tmp_path / "state"))
    return Services(Container(), options, progress=lambda _: None)


def _platform_adapter(adapter: object) -> bool:
    return type(adapter).__module__.startswith(PLATFORM_PREFIX)


def test_the_tool_and_human_tool_ports(services: Services) -> None:
    tools = services.container.tool_ports()
    assert tools.programs is not None and tools.scratch is not None
    assert _platform_adapter(tools.filesystem) and _platform_adapter(tools.processes)
    human = services.container.human_tool_ports()
    assert human.desktop_opener == DESKTOP_OPENER
    assert human.self_command == SELF_COMMAND and human.self_command[0] == sys.executable
    assert _platform_adapter(human.launcher)


def test_the_session_ports_live_below_the_state_home(services: Services, tmp_path: Path) -> None:
    ports = services.session_ports()
    assert Path(ports.parent).parent == tmp_path / "state"
    assert _platform_adapter(ports.launcher) and _platform_adapter(ports.store)
    assert ports.cleanup is services.container.cleanup_executor()  # one pool per process


def test_the_verify_ports(services: Services, tmp_path: Path) -> None:
    def choose(repo: str, state: str) -> VerifyOptions:
        return VerifyOptions(repo=repo, state_dir=state)

    prepared = services.prepare_verify(None, True, choose)
    prepared.close()  # the Run's freeze: this test never runs it
    ports = prepared.service.ports
    assert ports.runtime is not None and ports.conversations is not None
    assert ports.review.scripts is not None and ports.runtime.scripts is not None
    assert ports.review.sessions.parent == services.session_ports().parent
    assert _platform_adapter(ports.runtime.processes) and _platform_adapter(ports.processes)
    assert ports.remote is None  # no team store configured
    assert set(ports.producer) == {"name", "version"}
    assert prepared.runs_folder == tmp_path / "state" / "runs"


def test_the_status_ports(services: Services) -> None:
    from artifactize.domain.use_cases.status import StatusOptions

    status, refs = services.status(None, StatusOptions())
    assert refs and status.ports.scripts is not None
    assert _platform_adapter(status.ports.filesystem)


def test_the_human_review_ports(services: Services) -> None:
    store = services.open_state(create=True)
    assert store is not None
    reviews = services.human_reviews(store)
    assert reviews.ports.tools.self_command == SELF_COMMAND
    assert reviews.ports.scripts is not None


def test_the_doctor_ports(services: Services, tmp_path: Path) -> None:
    doctor, workspace, error = services.doctor()
    assert workspace is not None and error is None
    assert doctor.ports.desktop_opener == DESKTOP_OPENER
    assert doctor.ports.fallback_editor == FALLBACK_EDITOR
    assert doctor.ports.state_dir == str(tmp_path / "state")
    assert doctor.ports.state_problem() is None


def test_the_monitor_source_reads_without_creating_a_state(
    services: Services, tmp_path: Path
) -> None:
    source = services.monitor_source(all_repos=False)
    assert source.repo == services.repo()
    assert not (tmp_path / "state").exists()


def test_the_mcp_serving_run(services: Services) -> None:
    workspace = services.config().load(services.repo())
    agent = next(r for r in workspace.evals() if isinstance(r.eval.profile, AgentProfile))
    prepared = services.prepare_server(ServeSelection(eval_id=agent.qualified_id), "stdio")
    try:
        ports = prepared.run.ports
        assert ports.sessions.parent == services.session_ports().parent
        assert prepared.run.output_root is not None
        assert Path(prepared.run.output_root).is_dir()
    finally:
        prepared.finish()
    assert not prepared.scratch.exists()


def test_a_runs_output_root_is_made_private_then_found(services: Services, tmp_path: Path) -> None:
    """The first request of a Run makes ``<state>/runs/<run>`` (0700, ``runs`` too); the
    next finds it; a file where it should be is refused, never used."""
    runs = tmp_path / "state" / "runs"
    first = services.output_root("run-a")
    assert first == str(runs / "run-a")
    assert (runs.stat().st_mode & 0o777, (runs / "run-a").stat().st_mode & 0o777) == (0o700, 0o700)
    assert services.output_root("run-a") == first
    assert services.output_root("run-b") == str(runs / "run-b")
    (runs / "run-c").write_text("not a folder")
    with pytest.raises(FileExistsError):
        services.output_root("run-c")
