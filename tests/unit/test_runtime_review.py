"""``RuntimeReview`` through fakes: argv and environment preparation, the exit-to-verdict
mapping, private directories removed on every path and the end-of-review recheck.

Real processes are exercised in tests/integration/test_verify_runtime.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import anyio
import pytest

from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.agent.review import ReviewOutcome
from artifactize.domain.reviews.failures import INPUT_CHANGED
from artifactize.domain.reviews.reuse.keys import KeyInputs, key_inputs
from artifactize.domain.reviews.runtime.env import INHERITED_VARIABLES, TOOLCHAIN_HOMES
from artifactize.domain.reviews.runtime.outcome import RUNTIME_OUTPUT_MAX_BYTES
from artifactize.domain.reviews.runtime.review import CANCELLED, RuntimePorts, RuntimeReview
from artifactize.domain.tools.commands.running import DEFAULT_LANG
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.ports.process import ProcessOutcome, ProcessSpec
from artifactize.ports.threads import WorkerThreads
from tests.fakes.filesystem import MemoryFilesystem, Node
from tests.fakes.processes import (
    FakeClock,
    FakeProcessRunner,
    FakePrograms,
    FakeScratch,
    Script,
    hang_forever,
)
from tests.fakes.threads import THREADS, CountingThreads

pytestmark = pytest.mark.anyio

RUN_DIR = "/state/runs/run-abc"
TOOLCHAIN_VARIABLES = {name for name, _ in TOOLCHAIN_HOMES}
CALLER_ENV = {
    "PATH": "/usr/local/bin:/usr/bin",
    "LANG": "C.UTF-8",
    "SECRET_TOKEN": "s3cret",
    "ARTIFACTIZE_STATE_HOME": "/elsewhere",
    "HOME": "/home/caller",
    "TMPDIR": "/caller-tmp",
}
OUR_VARIABLES = {
    "ARTIFACTIZE_WORKSPACE_DIR",
    "ARTIFACTIZE_OUTPUT_DIR",
    "ARTIFACTIZE_TMP_DIR",
    "HOME",
    "XDG_CACHE_HOME",
    "TMPDIR",
    "TMP",
    "TEMP",
}

APP = b"""name = "app"
fingerprint = { files = ["main.py", "run.sh"] }

[evals.check]
title = "Checks pass"
profile = { kind = "runtime", command = "check", args = ["--strict", "{spec}/rules.txt", "--rules={spec}/rules.txt", "{logo}", "{spec}"], timeout_ms = 5000 }
payload.instruction = "Run the checks."

[evals.local]
title = "The local script passes"
profile = { kind = "runtime", command = "./run.sh", args = [] }
payload.instruction = "Run the local script."

[evals.missing]
title = "A program that is not installed"
profile = { kind = "runtime", command = "nope", args = [] }
payload.instruction = "Run nope."

[evals.ghost]
title = "An operand that does not exist"
profile = { kind = "runtime", command = "check", args = ["{spec}/ghost.txt"] }
payload.instruction = "Check the ghost."
"""

LOGO = b"""name = "logo"

[evals.size]
title = "The logo is not empty"
profile = { kind = "runtime", command = "test", args = ["-s", "{logo}"] }
payload.instruction = "Check the size."
"""


def tree() -> dict[str, Node]:
    return {
        "index.artf": APP,
        "main.py": b"print('hi')\n",
        "run.sh": b"#!/bin/sh\nexit 0\n",
        "logo.svg": b"<svg/>",
        "logo.svg.artf": LOGO,
        "spec": {"index.artf": b'name = "spec"\n', "rules.txt": b"be nice\n"},
    }


class World:
    def __init__(
        self,
        script: Script | None = None,
        *,
        repo: dict[str, Node] | None = None,
        environment: Mapping[str, str] = CALLER_ENV,
        run_dir: str = RUN_DIR,
        programs: FakePrograms | None = None,
    ) -> None:
        self.repo = repo if repo is not None else tree()
        roots: dict[str, Node] = {"/repo": self.repo, "/state": {"runs": {"run-abc": {}}}}
        self.filesystem = MemoryFilesystem(roots)
        self.workspace: Workspace = ConfigService(self.filesystem).load("/repo")
        self.clock = FakeClock()
        self.runner = FakeProcessRunner(clock=self.clock)
        if script is not None:
            self.runner.script = script
        self.scratch = FakeScratch()
        self.ports = RuntimePorts(
            processes=self.runner,
            scratch=self.scratch,
            filesystem=self.filesystem,
            programs=programs or FakePrograms(missing=frozenset({"nope"})),
            clock=self.clock,
            environment=environment,
            threads=THREADS,
        )
        self.run_dir = run_dir

    def keys(self, eval_id: str) -> KeyInputs:
        return key_inputs(self.workspace, eval_id, self.filesystem)

    def review(self, eval_id: str = "app/check") -> RuntimeReview:
        ref = self.workspace.find_eval(eval_id)
        return RuntimeReview(self.ports, self.workspace, ref, self.keys(eval_id), self.run_dir)

    async def run(self, eval_id: str = "app/check") -> ReviewOutcome:
        return await self.review(eval_id).run()

    @property
    def spec(self) -> ProcessSpec:
        (spec,) = self.runner.specs
        return spec


# --- the verdict mapping ------------------------------------------------------------------


async def test_exit_zero_is_green_with_what_ran_recorded() -> None:
    world = World(ProcessOutcome(exit_code=0, stdout=b"ok\n", stderr=b"note\n"))
    outcome = await world.run()
    assert outcome.status == "GREEN"
    assert outcome.result == {"verdict": "GREEN", "exitCode": 0, "durationMs": 250}
    assert outcome.error is None and outcome.error_code is None
    assert outcome.child == {
        "exitCode": 0,
        "signal": None,
        "stdout": "ok\n",
        "stderr": "note\n",
        "durationMs": 250,
        "truncated": {"stdout": False, "stderr": False},
    }
    assert outcome.cwd == "/repo"
    assert outcome.argv == world.spec.argv
    assert world.spec.cwd == "/repo"
    assert world.spec.timeout_ms == 5000
    assert world.spec.stdin == b""
    assert world.spec.capture_limit_bytes == RUNTIME_OUTPUT_MAX_BYTES == 128 * 1024


async def test_a_nonzero_exit_is_red_with_its_code() -> None:
    world = World(ProcessOutcome(exit_code=3, stderr=b"2 problems\n", stdout_truncated=True))
    outcome = await world.run()
    assert outcome.status == "RED"
    assert outcome.result == {"verdict": "RED", "exitCode": 3, "durationMs": 250}
    assert outcome.child is not None
    assert outcome.child["stderr"] == "2 problems\n"
    assert outcome.child["truncated"] == {"stdout": True, "stderr": False}


async def test_a_timeout_is_an_error_even_when_the_command_then_exits_zero() -> None:
    world = World(ProcessOutcome(exit_code=0, timed_out=True, stdout=b"partial"))
    outcome = await world.run()
    assert (outcome.status, outcome.error_code) == ("ERROR", "TIMEOUT")
    assert outcome.error == "Runtime eval timed out after 5000 ms."
    assert outcome.result is None
    assert outcome.child is not None and outcome.child["stdout"] == "partial"


async def test_a_spawn_failure_is_an_error_without_a_child() -> None:
    world = World(ProcessOutcome(spawn_error="Permission denied: /repo/run.sh"))
    outcome = await world.run("app/local")
    assert (outcome.status, outcome.error_code) == ("ERROR", "SPAWN_FAILED")
    assert outcome.error == "Runtime command could not start: Permission denied: /repo/run.sh"
    assert outcome.child is None and outcome.result is None
    assert outcome.argv == ("/repo/run.sh",)  # prepared, so recorded
    assert world.scratch.live == set()


@pytest.mark.parametrize(
    ("process", "message"),
    [
        (ProcessOutcome(signal=9), "Runtime command was ended by signal 9."),
        (ProcessOutcome(), "Runtime command ended without an exit status."),
    ],
)
async def test_death_without_an_exit_status_is_abnormal(
    process: ProcessOutcome, message: str
) -> None:
    outcome = await World(process).run()
    assert (outcome.status, outcome.error_code, outcome.error) == (
        "ERROR",
        "ABNORMAL_EXIT",
        message,
    )
    assert outcome.child is not None and outcome.child["signal"] == process.signal


async def test_output_is_decoded_lossily_and_cleaned_of_terminal_controls() -> None:
    raw = b"\x1b[31mred\x1b[0m\tok\r\n\x07bell\x00nul\xffend\x1b[2K"
    outcome = await World(ProcessOutcome(exit_code=1, stdout=raw, stderr=raw)).run()
    assert outcome.child is not None
    assert outcome.child["stdout"] == "red\tok\r\nbellnul\ufffdend"
    assert outcome.child["stderr"] == outcome.child["stdout"]


# --- argv, cwd and environment ------------------------------------------------------------


async def test_operands_resolve_to_absolute_scoped_paths() -> None:
    world = World()
    await world.run()
    assert world.spec.argv == (
        "/usr/bin/check",
        "--strict",
        "/repo/spec/rules.txt",
        "--rules=/repo/spec/rules.txt",
        "/repo/logo.svg",  # a file Artifact names its file
        "/repo/spec",
    )


async def test_a_relative_command_resolves_inside_the_scope() -> None:
    world = World()
    outcome = await world.run("app/local")
    assert world.spec.argv == ("/repo/run.sh",)
    assert outcome.status == "GREEN"


WINDOWS_PROGRAMS = (
    "C:\\tools\\check.exe",
    "C:/tools/check.cmd",
    "\\\\server\\share\\check.exe",
    "//server/share/check.exe",
)


@pytest.mark.parametrize("program", WINDOWS_PROGRAMS)
async def test_an_absolute_windows_program_runs_as_given_on_windows(program: str) -> None:
    repo = tree()
    eval_text = (
        '\n[evals.win]\ntitle = "An absolute Windows program"\n'
        f"profile = {{ kind = \"runtime\", command = '{program}', args = [] }}\n"
        'payload.instruction = "Run it."\n'
    )
    repo["index.artf"] = APP + eval_text.encode()
    world = World(repo=repo, programs=FakePrograms(windows_paths=True))
    outcome = await world.run("app/win")
    assert world.spec.argv == (program,)
    assert outcome.status == "GREEN"


async def test_a_missing_absolute_windows_program_is_a_preparation_failure() -> None:
    repo = tree()
    eval_text = (
        '\n[evals.win]\ntitle = "A missing Windows program"\n'
        "profile = { kind = \"runtime\", command = 'C:\\tools\\nope', args = [] }\n"
        'payload.instruction = "Run it."\n'
    )
    repo["index.artf"] = APP + eval_text.encode()
    world = World(
        repo=repo, programs=FakePrograms(missing=frozenset({"C:\\tools\\nope"}), windows_paths=True)
    )
    outcome = await world.run("app/win")
    assert (outcome.status, outcome.error_code) == ("ERROR", "PREPARATION_FAILED")
    assert "C:\\tools\\nope" in (outcome.error or "")
    assert world.runner.specs == []


async def test_a_file_artifact_runs_in_its_containing_folder() -> None:
    world = World()
    outcome = await world.run("logo/size")
    assert world.spec.cwd == "/repo" and outcome.cwd == "/repo"
    assert world.spec.argv == ("/usr/bin/test", "-s", "/repo/logo.svg")


async def test_only_path_and_lang_are_inherited() -> None:
    world = World()
    await world.run()
    env = dict(world.spec.env)
    assert set(env) == set(INHERITED_VARIABLES) | OUR_VARIABLES | TOOLCHAIN_VARIABLES
    assert env["PATH"] == CALLER_ENV["PATH"] and env["LANG"] == "C.UTF-8"
    assert "s3cret" not in env.values() and "/elsewhere" not in env.values()
    assert env["ARTIFACTIZE_WORKSPACE_DIR"] == "/repo"
    # rustup's cargo finds its toolchains in the caller's home, not the private one
    assert (env["RUSTUP_HOME"], env["CARGO_HOME"]) == (
        "/home/caller/.rustup",
        "/home/caller/.cargo",
    )
    (root,) = [p for p in world.scratch.created if p.count("/") == RUN_DIR.count("/") + 1]
    assert root.startswith(f"{RUN_DIR}/runtime-")
    for variable, prefix in [
        ("ARTIFACTIZE_OUTPUT_DIR", "output-"),
        ("ARTIFACTIZE_TMP_DIR", "tmp-"),
        ("HOME", "home-"),
        ("XDG_CACHE_HOME", "cache-"),
    ]:
        assert env[variable].startswith(f"{root}/{prefix}"), variable
    assert env["TMPDIR"] == env["TMP"] == env["TEMP"] == env["ARTIFACTIZE_TMP_DIR"]
    assert (
        len({env["ARTIFACTIZE_OUTPUT_DIR"], env["TMPDIR"], env["HOME"], env["XDG_CACHE_HOME"]}) == 4
    )
    assert world.scratch.live == set()  # all removed afterwards


@pytest.mark.parametrize("lang", [None, ""])
async def test_lang_falls_back_to_the_default(lang: str | None) -> None:
    caller = {"PATH": "/usr/bin"} | ({} if lang is None else {"LANG": lang})
    world = World(environment=caller)
    await world.run()
    assert world.spec.env["LANG"] == DEFAULT_LANG == "en_US.UTF-8"


# --- preparation failures -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("eval_id", "message"),
    [
        ("app/missing", "Runtime command is unavailable or outside the eval's scope: nope"),
        (
            "app/ghost",
            "Runtime argument {spec}/ghost.txt cannot be resolved: "
            "Artifact input does not exist: ghost.txt",
        ),
    ],
)
async def test_preparation_failures_create_and_start_nothing(eval_id: str, message: str) -> None:
    world = World()
    outcome = await world.run(eval_id)
    assert (outcome.status, outcome.error_code, outcome.error) == (
        "ERROR",
        "PREPARATION_FAILED",
        message,
    )
    assert world.runner.specs == [] and world.scratch.created == []
    assert outcome.argv is None and outcome.cwd is None


async def test_output_inside_the_workspace_is_refused() -> None:
    repo = tree()
    repo["runs"] = {}
    world = World(repo=repo, run_dir="/repo/runs")
    outcome = await world.run()
    assert (outcome.status, outcome.error_code) == ("ERROR", "PREPARATION_FAILED")
    assert outcome.error == "Runtime output directory /repo/runs is inside the workspace /repo."
    assert world.runner.specs == [] and world.scratch.created == []


async def test_a_missing_run_directory_is_a_preparation_failure() -> None:
    world = World(run_dir="/state/runs/run-gone")
    outcome = await world.run()
    assert outcome.error_code == "PREPARATION_FAILED"
    assert outcome.error is not None and outcome.error.startswith(
        "The Run directory /state/runs/run-gone cannot hold runtime output: "
    )
    assert world.runner.specs == []


async def test_a_directory_that_cannot_be_created_leaves_nothing_behind() -> None:
    world = World()
    world.scratch.create_fails_after = 2  # the invocation root and one child, then EACCES
    outcome = await world.run()
    assert outcome.error_code == "PREPARATION_FAILED"
    assert outcome.error == (
        f"The Run directory {RUN_DIR} cannot hold runtime output: Permission denied"
    )
    assert world.runner.specs == [] and world.scratch.live == set()


# --- cleanup ------------------------------------------------------------------------------


async def test_a_failed_cleanup_replaces_the_verdict() -> None:
    world = World(ProcessOutcome(exit_code=0))
    world.scratch.remove_fails = True
    outcome = await world.run()
    assert (outcome.status, outcome.error_code) == ("ERROR", "RUNTIME_ERROR")
    assert outcome.error == "Runtime eval cleanup failed: Device or resource busy"
    assert outcome.child is not None and outcome.child["exitCode"] == 0
    assert outcome.argv is not None


async def test_a_failed_cleanup_keeps_an_earlier_error() -> None:
    world = World(ProcessOutcome(timed_out=True, signal=15))
    world.scratch.remove_fails = True
    outcome = await world.run()
    assert outcome.error_code == "TIMEOUT"


async def test_cancellation_removes_the_directories_and_records_what_was_prepared() -> None:
    world = World(hang_forever)
    review = world.review()
    with anyio.move_on_after(0.05) as scope:
        await review.run()
    assert scope.cancelled_caught
    assert len(world.runner.specs) == 1 and world.scratch.live == set()
    cancelled = review.cancelled_outcome()
    assert (cancelled.status, cancelled.error_code, cancelled.error) == (
        "ERROR",
        "CANCELLED",
        CANCELLED,
    )
    assert cancelled.argv == world.spec.argv and cancelled.cwd == "/repo"


async def test_an_eval_is_one_trip_before_and_after_the_command() -> None:
    """Preparation (creating the Run's first folder set, or taking a kept one), the command,
    then the removal and the fingerprint recheck: one ``run_between``, whether the eval
    creates its folders or is handed the set the one before left as created; no trip of its
    own through ``WorkerThreads``."""
    import dataclasses

    from artifactize.domain.reviews.runtime.env import InvocationPool

    world = World(ProcessOutcome(exit_code=0))
    threads = CountingThreads()
    world.ports = dataclasses.replace(
        world.ports, threads=cast(WorkerThreads, threads), pool=InvocationPool(world.scratch)
    )
    first = await world.run()
    assert (world.runner.trips, threads.work) == (1, [])
    second = await world.run()
    assert (world.runner.trips, threads.work) == (2, [])
    assert (first.status, second.status) == ("GREEN", "GREEN")
    one, two = world.runner.specs
    assert one.env["ARTIFACTIZE_TMP_DIR"] == two.env["ARTIFACTIZE_TMP_DIR"]  # the same set
    assert len(world.scratch.created) == 5  # the root and its four children, once


# --- the end-of-review recheck ------------------------------------------------------------


def editing(repo: dict[str, Node], name: str, exit_code: int = 0) -> Script:
    async def edit(spec: ProcessSpec) -> ProcessOutcome:
        repo[name] = b"edited during the run\n"
        return ProcessOutcome(exit_code=exit_code)

    return edit


@pytest.mark.parametrize("exit_code", [0, 1])
async def test_an_input_edited_during_the_run_voids_the_verdict(exit_code: int) -> None:
    world = World()
    world.runner.script = editing(world.repo, "main.py", exit_code)
    outcome = await world.run()
    assert (outcome.status, outcome.error_code, outcome.error) == (
        "ERROR",
        "INPUT_CHANGED",
        INPUT_CHANGED,
    )
    assert outcome.result is None
    assert outcome.child is not None and outcome.child["exitCode"] == exit_code


async def test_an_edit_outside_the_fingerprinted_files_keeps_the_verdict() -> None:
    world = World()
    world.runner.script = editing(world.repo, "notes.txt")  # not in app's fingerprint files
    assert (await world.run()).status == "GREEN"


async def test_a_failed_recheck_is_an_error() -> None:
    world = World()

    async def remove_input(spec: ProcessSpec) -> ProcessOutcome:
        del world.repo["main.py"]
        return ProcessOutcome(exit_code=0)

    world.runner.script = remove_input
    outcome = await world.run()
    assert (outcome.status, outcome.error_code) == ("ERROR", "FINGERPRINT_RECHECK_FAILED")
    assert outcome.error is not None and "main.py" in outcome.error


async def test_an_unkeyed_review_is_not_rechecked() -> None:
    repo = tree()
    repo["index.artf"] = APP.replace(
        b'fingerprint = { files = ["main.py", "run.sh"] }', b"fingerprint = false"
    )
    world = World(repo=repo)
    assert world.keys("app/check").key is None
    world.runner.script = editing(world.repo, "main.py")
    assert (await world.run()).status == "GREEN"


async def test_errors_are_not_rechecked() -> None:
    world = World()

    async def edit_then_die(spec: ProcessSpec) -> ProcessOutcome:
        world.repo["main.py"] = b"changed"
        return ProcessOutcome(signal=11)

    world.runner.script = edit_then_die
    assert (await world.run()).error_code == "ABNORMAL_EXIT"


def test_a_runtime_review_needs_a_runtime_eval() -> None:
    world = World(repo=_with_agent_eval())
    ref = world.workspace.find_eval("app/agent")
    with pytest.raises(ValueError, match="runtime eval"):
        RuntimeReview(world.ports, world.workspace, ref, world.keys("app/agent"), RUN_DIR)


def _with_agent_eval() -> dict[str, Any]:
    repo = tree()
    repo["index.artf"] = APP + (
        b'\n[evals.agent]\ntitle = "A"\n'
        b'profile = { kind = "agent", backend = "openai", model = "m" }\n'
        b'payload.instruction = "Look."\n'
    )
    return repo


async def test_toolchain_homes_are_the_callers_own_when_set() -> None:
    world = World(environment={**CALLER_ENV, "RUSTUP_HOME": "/opt/rustup", "HOME": ""})
    await world.run()
    env = dict(world.spec.env)
    assert env["RUSTUP_HOME"] == "/opt/rustup"
    assert "CARGO_HOME" not in env  # no HOME to default it from
