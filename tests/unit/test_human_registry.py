"""``HumanToolRegistry`` through fakes: scope and names, resolution of argv and targets on
every call (nothing runs after a failed check), the real environment, launch handoff,
built-ins, cancellation and live lines.

Real processes are exercised in tests/integration/test_human_tools.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import anyio
import pytest

from artifactize.domain.declarations.diagnostics import ConfigError
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.tools.human.lines import OutputLine, ProgramEnded, ToolLogEvent
from artifactize.domain.tools.human.registry import HumanToolPorts, HumanToolRegistry
from artifactize.domain.tools.registry import RegistryError
from artifactize.domain.tools.results import ToolError
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.ports.process import ProcessOutcome, ProcessSpec
from tests.fakes.filesystem import MemoryFilesystem, Node, Symlink
from tests.fakes.processes import FakeProcessRunner, FakePrograms, hang_forever
from tests.fakes.threads import THREADS
from tests.support.human_workspace import artifact, human_eval, human_tool
from tests.support.human_world import FakeLauncher, NoRegex

pytestmark = pytest.mark.anyio

LAUNCHED = {"content": [{"type": "launch", "launched": True}], "isError": False}
REVIEWER_ENV = {
    "PATH": "/usr/local/bin:/usr/bin",
    "HOME": "/home/reviewer",
    "DISPLAY": ":0",
    "ARTIFACTIZE_FOO": "kept",
    "TMPDIR": "/reviewer-tmp",
    "SECRET_TOKEN": "hunter2",
}

APP = artifact(
    "app",
    human_tool(
        "inspect",
        "Inspect {artifactName}.",
        "inspector",
        ["--all", "{artifactPath}", "--file={artifactPath}/notes.md", "{lib}/api.md", "{logo}"],
        extra="timeout_ms = 5000\n",
    ),
    human_tool(
        "start", "Start the viewer.", "app-viewer", ["{artifactPath}/notes.md"], kind="launch"
    ),
    human_tool("leak", "Names an Artifact outside the review.", "cat", ["{other}"]),
    human_tool("ghost", "Names a missing file.", "cat", ["{artifactPath}/ghost.md"]),
    human_tool("linked", "Names a symlink.", "cat", ["{artifactPath}/link.md"]),
    human_tool("local", "A program of the Artifact.", "./run.sh", []),
    """[views.human_tools]
notes = { builtin = "read", args = ["notes.md"] }
folder = { builtin = "list", args = ["docs"] }
root = { builtin = "list", args = ["{artifactPath}"] }
sub = { builtin = "section", args = ["notes.md", "Sub"] }
open_notes = { builtin = "open", args = ["notes.md"] }
open_lib = { builtin = "open", args = ["{lib}/api.md"] }
open_link = { builtin = "open", args = ["link.md"] }
web = { builtin = "open", args = ["https://example.com/x"] }
map = { builtin = "graph", args = [] }
usage = { builtin = "help", args = ["tool", "sub"] }
""",
    human_eval("check", "Check", "Check {logo}."),
    """[evals.review]
title = "Review"
profile = { kind = "agent", backend = "openai", model = "test" }
payload.instruction = "Review."
""",
    settings='mounts = { lib = "lib" }\n',
).encode()

LIB = b"""name = "lib"

[views.human_tools]
notes = { builtin = "read", args = ["api.md"] }
"""

LOGO = artifact("logo", human_tool("view", "View the logo.", "viewer", ["{artifactPath}"])).encode()


def tree() -> dict[str, Node]:
    return {
        "app": {
            "index.artf": APP,
            "notes.md": b"# Notes\nalpha\n## Sub\nbeta\n# Next\ngamma\n",
            "run.sh": b"#!/bin/sh\n",
            "docs": {"guide.md": b"g", "img": {}, "link": Symlink("guide.md")},
            "link.md": Symlink("notes.md"),
        },
        "lib": {"index.artf": LIB, "api.md": b"# API\n"},
        "pics": {"logo.svg": b"<svg/>", "logo.svg.artf": LOGO},
        "other": {"index.artf": b'name = "other"\n'},
    }


class World:
    def __init__(
        self,
        outcome: ProcessOutcome | None = None,
        *,
        repo: dict[str, Node] | None = None,
        environment: Mapping[str, str] = REVIEWER_ENV,
        opener_missing: bool = False,
        self_command: tuple[str, ...] = ("/py", "-m", "artifactize.entrypoints.cli.app"),
    ) -> None:
        self.repo = repo if repo is not None else tree()
        self.filesystem = MemoryFilesystem({"/repo": self.repo})
        self.workspace = ConfigService(self.filesystem).load("/repo")
        self.runner = FakeProcessRunner()
        if outcome is not None:
            self.runner.script = outcome
        self.launcher = FakeLauncher()
        missing = frozenset({"xdg-open"}) if opener_missing else frozenset()
        self.ports = HumanToolPorts(
            filesystem=self.filesystem,
            regex=NoRegex(),
            processes=self.runner,
            programs=FakePrograms(missing=missing),
            launcher=self.launcher,
            environment=environment,
            self_command=self_command,
            threads=THREADS,
        )

    def registry(self, eval_id: str = "app/check") -> HumanToolRegistry:
        return HumanToolRegistry.for_eval(self.workspace, eval_id, self.ports)

    @property
    def spec(self) -> ProcessSpec:
        (spec,) = self.runner.specs
        return spec

    def ran_nothing(self) -> bool:
        return not self.runner.specs and not self.launcher.launches


# --- scope, names and kinds ----------------------------------------------------------------


def test_a_human_eval_lists_its_scope_tools_sorted_by_published_name() -> None:
    names = [d.name for d in World().registry().list()]
    assert names == sorted(names)
    assert "inspect_app" in names and "notes_lib" in names and "view_logo" in names
    assert not any(name.endswith("_other") for name in names)


def test_agent_and_unknown_evals_are_refused() -> None:
    world = World()
    with pytest.raises(RegistryError, match=r"^Human tools require a Human eval\.$"):
        world.registry("app/review")
    with pytest.raises(RegistryError, match="Unknown eval: app/missing"):
        world.registry("app/missing")


def test_an_artifact_registry_has_the_artifact_children_and_mounts() -> None:
    world = World()
    names = [
        d.name for d in HumanToolRegistry.for_artifact(world.workspace, "logo", world.ports).list()
    ]
    assert names == ["view_logo"]
    with pytest.raises(RegistryError):
        HumanToolRegistry.for_artifact(world.workspace, "nope", world.ports)


def test_listing_runs_nothing() -> None:
    world = World()
    opened = world.filesystem.open_root_calls  # by loading the workspace
    world.registry().list()
    assert world.ran_nothing() and world.filesystem.open_root_calls == opened


def test_graph_is_a_launch_built_in_and_open_too() -> None:
    kinds = {d.name: d.kind for d in World().registry().list()}
    assert kinds["map_app"] == kinds["open_notes_app"] == kinds["start_app"] == "launch"
    assert kinds["notes_app"] == kinds["usage_app"] == kinds["inspect_app"] == "output"


def test_get_takes_the_published_name_or_an_unambiguous_short_name() -> None:
    registry = World().registry()
    inspect = registry.get("inspect_app")
    assert inspect is not None and registry.get("inspect") == inspect
    assert registry.get("notes") is None  # notes_app and notes_lib
    assert registry.get("notes_lib") is not None
    assert registry.get("nope") is None


async def test_an_ambiguous_short_name_says_which_names_to_use() -> None:
    world = World()
    result = await world.registry().call("notes")
    assert result.error_text == (
        "Human tool name notes is ambiguous here (notes_app, notes_lib); use the published name."
    )
    unknown = await world.registry().call("nope")
    assert unknown.error_text == "Unknown registered Human tool."
    assert world.ran_nothing()


# --- command lines -----------------------------------------------------------------------------


def test_command_resolves_program_argv_and_directory_without_running() -> None:
    world = World()
    command = world.registry().command("inspect")
    assert command.program == "/usr/bin/inspector"
    assert command.argv == (
        "--all",
        "/repo/app",
        "--file=/repo/app/notes.md",
        "/repo/lib/api.md",
        "/repo/pics/logo.svg",
    )
    assert (command.cwd, command.repository) == ("/repo/app", "/repo")
    assert command.command_line == ("/usr/bin/inspector", *command.argv)
    assert command.to_json()["argv"] == list(command.argv)
    assert world.ran_nothing()


def test_a_file_artifact_runs_in_its_containing_folder_on_its_file() -> None:
    world = World()
    command = world.registry().command("view_logo")
    assert (command.argv, command.cwd) == (("/repo/pics/logo.svg",), "/repo/pics")


def test_an_owner_relative_program_is_found_in_the_artifact() -> None:
    assert World().registry().command("local").program == "/repo/app/run.sh"


def test_built_ins_have_no_command_line() -> None:
    registry = World().registry()
    for name in ("notes_app", "map", "open_notes", "usage"):
        with pytest.raises(ToolError, match=r"^Built-in tools have no command line\.$"):
            registry.command(name)


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        ("leak", "Artifact is outside this review: other"),
        ("ghost", "Artifact input does not exist: ghost.md"),
        ("linked", "Artifact symlinks are not supported."),
    ],
)
async def test_operand_checks_fail_before_anything_runs(tool: str, reason: str) -> None:
    world = World()
    result = await world.registry().call(tool)
    assert result.to_json() == {
        "content": [{"type": "text", "text": f"Human tool preparation failed: {reason}"}],
        "isError": True,
    }
    with pytest.raises(ToolError, match=reason):
        world.registry().command(tool)
    assert world.ran_nothing()


async def test_a_missing_program_runs_nothing() -> None:
    world = World()
    world.ports = replace(world.ports, programs=FakePrograms(frozenset({"inspector"})))
    result = await world.registry().call("inspect")
    assert result.error_text == (
        "Human tool preparation failed: Tool executable is unavailable: inspector"
    )
    assert world.ran_nothing()


async def test_a_launch_whose_program_is_missing_could_not_be_launched() -> None:
    world = World()
    world.ports = replace(world.ports, programs=FakePrograms(frozenset({"app-viewer"})))
    result = await world.registry().call("start")
    assert result.to_json() == {
        "content": [{"type": "text", "text": "Human tool could not be launched."}],
        "isError": True,
    }
    with pytest.raises(ToolError, match="Tool executable is unavailable: app-viewer"):
        world.registry().command("start")
    assert world.ran_nothing()


async def test_a_file_target_swapped_for_a_symlink_is_refused_at_each_call() -> None:
    world = World()
    registry = world.registry()
    assert not (await registry.call("inspect")).is_error
    world.repo["pics"]["logo.svg"] = Symlink("elsewhere.svg")  # type: ignore[index]
    for name in ("inspect", "view_logo", "notes_app", "start"):
        result = await registry.call(name)
        assert result.error_text == (
            "Human tool preparation failed: File Artifact target must remain a regular file."
        ), name
    assert len(world.runner.specs) == 1 and not world.launcher.launches


async def test_a_folder_operand_swapped_for_a_symlink_is_refused() -> None:
    world = World()
    registry = world.registry()
    world.repo["lib"] = Symlink("elsewhere")
    result = await registry.call("inspect")
    assert result.is_error and "Human tool preparation failed" in str(result.error_text)
    assert world.ran_nothing()


def test_artifact_path_below_a_file_artifact_is_refused_at_load() -> None:
    repo = tree()
    repo["pics"]["logo.svg.artf"] = LOGO.replace(  # type: ignore[index]
        b'args = ["{artifactPath}"]', b'args = ["{artifactPath}/x"]'
    )
    with pytest.raises(ConfigError, match=r"views\.human_tools\.view\.args\[0\]"):
        World(repo=repo)


# --- output --------------------------------------------------------------------------------


async def test_output_runs_in_the_real_environment_with_a_128_kib_capture() -> None:
    world = World(ProcessOutcome(exit_code=0, stdout=b"out", stderr=b"err"))
    result = await world.registry().call("inspect_app")
    assert result.to_json() == {
        "content": [{"type": "text", "text": "out"}, {"type": "text", "text": "stderr:\nerr"}],
        "isError": False,
    }
    spec = world.spec
    assert spec.env == REVIEWER_ENV  # everything, ARTIFACTIZE_* and TMPDIR included
    assert spec.argv[0] == "/usr/bin/inspector" and spec.cwd == "/repo/app"
    assert spec.capture_limit_bytes == 128 * 1024
    assert spec.timeout_ms == 5000 and spec.stdin == b""
    assert spec.observe_output is None


async def test_the_default_timeout_is_120000_ms() -> None:
    world = World()
    await world.registry().call("view_logo")
    assert world.spec.timeout_ms == 120_000


async def test_the_environment_is_read_at_each_call() -> None:
    environment = dict(REVIEWER_ENV)
    world = World(environment=environment)
    registry = world.registry()
    environment["LATE"] = "1"
    await registry.call("view_logo")
    assert world.spec.env["LATE"] == "1"


async def test_a_nonzero_exit_keeps_the_text_and_the_status() -> None:
    world = World(ProcessOutcome(exit_code=3, stdout=b"x"))
    result = await world.registry().call("view_logo")
    assert result.to_json() == {
        "content": [
            {"type": "text", "text": "Human tool exited unsuccessfully (exit status: 3).\nx"}
        ],
        "isError": True,
    }


async def test_output_lines_reach_the_sink_as_they_are_printed() -> None:
    async def printing(spec: ProcessSpec) -> ProcessOutcome:
        assert spec.observe_output is not None
        spec.observe_output("stdout", b"first\nsec")
        spec.observe_output("stderr", b"oops\n")
        spec.observe_output("stdout", b"ond")
        return ProcessOutcome(exit_code=2, stdout=b"first\nsecond", stderr=b"oops\n")

    world = World()
    world.runner.script = printing
    events: list[ToolLogEvent] = []
    result = await world.registry().call("view_logo", on_line=events.append)
    assert events == [
        OutputLine("stdout", "first"),
        OutputLine("stderr", "oops"),
        OutputLine("stdout", "second"),
        ProgramEnded(2, None),
    ]
    assert result.is_error


async def test_a_cancelled_token_runs_nothing() -> None:
    world = World()
    token = Cancellation()
    token.cancel()
    result = await world.registry().call("view_logo", cancellation=token)
    assert result.error_text == "Human tool call was cancelled."
    assert world.ran_nothing()


async def test_cancelling_a_running_output_tool_returns_the_cancellation_error() -> None:
    world = World()
    world.runner.script = hang_forever
    token = Cancellation()
    async with anyio.create_task_group() as group:
        group.start_soon(_cancel_soon, token)
        with anyio.fail_after(5):
            result = await world.registry().call("view_logo", cancellation=token)
    assert result.error_text == "Human tool call was cancelled."
    assert len(world.runner.specs) == 1


async def _cancel_soon(token: Cancellation) -> None:
    await anyio.sleep(0.05)
    token.cancel()


# --- launch --------------------------------------------------------------------------------


async def test_launch_hands_off_and_returns_exactly_the_launch_block() -> None:
    world = World()
    result = await world.registry().call("start")
    assert result.to_json() == LAUNCHED
    ((argv, cwd, env, observer),) = world.launcher.launches
    assert argv == ("/usr/bin/app-viewer", "/repo/app/notes.md")
    assert (cwd, env, observer) == ("/repo/app", REVIEWER_ENV, None)
    assert not world.runner.specs  # no waiting, no capture, no timeout


async def test_hum_02_a_failed_spawn_is_the_launch_error() -> None:
    world = World()
    world.launcher.error = FileNotFoundError(2, "No such file or directory")
    result = await world.registry().call("start")
    assert result.to_json() == {
        "content": [{"type": "text", "text": "Human tool could not be launched."}],
        "isError": True,
    }


async def test_a_launch_with_a_sink_drains_to_it_through_the_observer() -> None:
    world = World()
    events: list[ToolLogEvent] = []
    await world.registry().call("start", on_line=events.append)
    observer = world.launcher.launches[0][3]
    assert observer is not None
    observer.output("stdout", b"ready\n")
    observer.exited(0, None)
    assert events == [OutputLine("stdout", "ready"), ProgramEnded(0, None)]


# --- built-ins -----------------------------------------------------------------------------


async def test_read_and_section_print_the_text() -> None:
    world = World()
    registry = world.registry()
    events: list[ToolLogEvent] = []
    read = await registry.call("notes_app", on_line=events.append)
    assert read.to_json() == {
        "content": [{"type": "text", "text": "# Notes\nalpha\n## Sub\nbeta\n# Next\ngamma\n"}],
        "isError": False,
    }
    assert events[:2] == [OutputLine("stdout", "# Notes"), OutputLine("stdout", "alpha")]
    section = await registry.call("sub")
    assert section.text_content == "## Sub\nbeta\n"
    assert world.ran_nothing()


async def test_list_prints_one_entry_a_line() -> None:
    world = World()
    result = await world.registry().call("folder")
    assert result.text_content == "guide.md\nimg/\nlink (symbolic link, not followed)\n"
    root = await world.registry().call("root")
    lines = root.text_content.splitlines()
    assert "lib/ (mount of lib)" in lines and "docs/" in lines and "notes.md" in lines


async def test_a_built_in_target_that_vanished_is_the_built_in_error() -> None:
    repo = tree()
    app = repo["app"]
    assert isinstance(app, dict)
    del app["notes.md"]
    world = World(repo=repo)
    result = await world.registry().call("notes_app")
    assert result.error_text == 'No "notes.md" in Artifact app.'


async def test_help_runs_program_help_in_the_owner_folder() -> None:
    world = World(ProcessOutcome(exit_code=0, stdout=b"usage: tool sub\n"))
    result = await world.registry().call("usage")
    assert result.text_content == "usage: tool sub\n"
    assert world.spec.argv == ("tool", "sub", "--help") and world.spec.cwd == "/repo/app"


async def test_open_hands_the_checked_absolute_path_to_the_desktop_opener() -> None:
    world = World()
    registry = world.registry()
    assert (await registry.call("open_notes")).to_json() == LAUNCHED
    assert (await registry.call("open_lib")).to_json() == LAUNCHED
    assert (await registry.call("web")).to_json() == LAUNCHED
    argvs = [launch[0] for launch in world.launcher.launches]
    assert argvs == [
        ("/usr/bin/xdg-open", "/repo/app/notes.md"),
        ("/usr/bin/xdg-open", "/repo/lib/api.md"),
        ("/usr/bin/xdg-open", "https://example.com/x"),
    ]
    assert world.launcher.launches[0][2] == REVIEWER_ENV


async def test_open_refuses_a_symlink_and_a_missing_opener() -> None:
    world = World()
    link = await world.registry().call("open_link")
    assert link.error_text == "Human tool preparation failed: Artifact symlinks are not supported."
    missing = World(opener_missing=True)
    result = await missing.registry().call("open_notes")
    assert result.error_text == (
        "Human tool preparation failed: The desktop opener is unavailable: xdg-open"
    )
    assert world.ran_nothing() and missing.ran_nothing()


async def test_graph_launches_artifactize_config_graph_for_the_repository() -> None:
    world = World()
    assert (await world.registry().call("map")).to_json() == LAUNCHED
    ((argv, cwd, env, _),) = world.launcher.launches
    assert argv == (
        "/py",
        "-m",
        "artifactize.entrypoints.cli.app",
        "--repo",
        "/repo",
        "config",
        "graph",
    )
    assert cwd == "/repo" and env == REVIEWER_ENV
    nowhere = World(self_command=())
    result = await nowhere.registry().call("map")
    assert result.is_error and "graph viewer is unavailable" in str(result.error_text)


def test_graph_declared_as_an_output_tool_is_refused_at_load() -> None:
    repo = tree()
    app = repo["app"]
    assert isinstance(app, dict)
    app["index.artf"] = APP.replace(
        b'map = { builtin = "graph", args = [] }',
        b'map = { builtin = "graph", args = [], kind = "output" }',
    )
    with pytest.raises(ConfigError, match="is of kind `launch`"):
        World(repo=repo)


async def test_open_ends_at_the_handover_and_only_graph_logs_its_program() -> None:
    """Seed 002: ``open`` ends ``■ launched``; ``graph`` logs its viewer until it exits."""
    world = World()
    registry = world.registry()
    for name in ("open_notes", "map"):
        assert (await registry.call(name, on_line=lambda *_: None)).to_json() == LAUNCHED
    observers = [launch[3] for launch in world.launcher.launches]
    assert observers[0] is None  # the opener's output and exit never reach the Tool log
    assert observers[1] is not None
