"""A command-tool call's shape of work: one ``run_between`` (preparation and the private
folders, the run, normalizing and removal in one worker-thread trip), and no trip of its own
through ``WorkerThreads`` unless something failed or was cancelled."""

from __future__ import annotations

from typing import cast

import anyio
import pytest

from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.domain.tools.registry import AgentToolRegistry, ToolPorts
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.ports.process import ProcessOutcome
from artifactize.ports.threads import WorkerThreads
from tests.fakes.filesystem import MemoryFilesystem
from tests.fakes.processes import FakeProcessRunner, FakePrograms, FakeScratch, hang_forever
from tests.fakes.threads import CountingThreads

pytestmark = pytest.mark.anyio


OK = b'{"content":[{"type":"text","text":"ok"}]}'
DECLARATION = """\
name = "app"

[views.agent_tools.echo]
description = "Echo."
protocol = "json"
command = "echo"
args = []

[views.agent_tools.say]
description = "Say."
protocol = "plain"
command = "say"
args = ["{word}"]
input_schema = { type = "object", required = ["word"], properties = { word = { type = "string" } } }

[views.agent_tools.gone]
description = "A program found nowhere."
protocol = "json"
command = "gone"
args = []
"""


class World:
    def __init__(self, processes: FakeProcessRunner) -> None:
        self.processes = processes
        self.scratch = FakeScratch()
        self.threads = CountingThreads()
        filesystem = MemoryFilesystem({"/repo": {"index.artf": DECLARATION.encode()}})
        ports = ToolPorts(
            filesystem,
            RyRegexEngine(),
            processes,
            {"PATH": "/bin"},
            programs=FakePrograms(missing=frozenset({"gone"})),
            scratch=self.scratch,
            threads=cast(WorkerThreads, self.threads),
        )
        workspace = ConfigService(filesystem).load("/repo")
        self.registry = AgentToolRegistry.for_artifact(workspace, "app", ports)


@pytest.mark.parametrize(
    ("tool", "args", "text"),
    [("echo_app", {}, "ok"), ("say_app", {"word": "hi"}, OK.decode())],
)
async def test_a_call_is_one_trip_and_leaves_no_folder(
    tool: str, args: dict[str, str], text: str
) -> None:
    world = World(FakeProcessRunner(ProcessOutcome(exit_code=0, stdout=OK)))
    result = await world.registry.call(tool, args, "/out")
    assert not result.is_error, result.to_json()
    assert result.content == ({"type": "text", "text": text},)
    assert (world.processes.trips, world.threads.work) == (1, [])
    assert len(world.scratch.created) == 2  # the call's output and temporary folders
    assert world.scratch.live == set()
    [spec] = world.processes.specs
    assert spec.env["TMPDIR"] in world.scratch.created
    assert spec.env["ARTIFACTIZE_OUTPUT_DIR"] in world.scratch.created


async def test_ten_calls_are_ten_trips() -> None:
    world = World(FakeProcessRunner(ProcessOutcome(exit_code=0, stdout=OK)))
    for _ in range(10):
        assert not (await world.registry.call("echo_app", {}, "/out")).is_error
    assert (world.processes.trips, world.threads.work) == (10, [])
    assert len(world.scratch.created) == 20


async def test_a_failed_preparation_creates_and_runs_nothing() -> None:
    world = World(FakeProcessRunner(ProcessOutcome(exit_code=0, stdout=OK)))
    result = await world.registry.call("gone_app", {}, "/out")
    assert result.is_error
    assert world.processes.specs == []
    assert world.scratch.created == []
    assert world.threads.work == []  # nothing to remove


async def test_a_cancelled_call_removes_its_folders() -> None:
    world = World(FakeProcessRunner(hang_forever))
    with anyio.move_on_after(0.05) as scope:
        await world.registry.call("echo_app", {}, "/out")
    assert scope.cancelled_caught
    assert len(world.scratch.created) == 2
    assert world.scratch.live == set()
    assert world.threads.work == ["remove"]  # the cleanup's own trip, on this path only


async def test_a_folder_that_cannot_be_removed_is_reported() -> None:
    world = World(FakeProcessRunner(ProcessOutcome(exit_code=0, stdout=OK)))
    world.scratch.remove_fails = True
    result = await world.registry.call("echo_app", {}, "/out")
    assert result.is_error
    assert "cleanup failed" in result.to_json()["content"][0]["text"]
