"""``ProcessFingerprintScripts`` through fakes: what the script is given (argv, cwd, stdin,
environment), the ``files`` check, every way a script fails, and private directories
removed on every path. Real processes: tests/integration/test_fingerprint_scripts.py."""

from __future__ import annotations

import anyio
import pytest

from artifactize.domain.declarations.model import FINGERPRINT_SCRIPT_DEFAULT_TIMEOUT_MS
from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.human.reconnect import Reconnected, recheck_key
from artifactize.domain.reviews.reuse.fingerprints import (
    SCRIPT_OUTPUT_MAX_CHARS,
    FingerprintError,
    compute_fingerprint,
)
from artifactize.domain.reviews.reuse.keys import key_inputs
from artifactize.domain.reviews.reuse.scripts import (
    SCRIPT_CAPTURE_BYTES,
    ProcessFingerprintScripts,
    ScriptPorts,
    stdin_payload,
)
from artifactize.domain.reviews.runtime.env import INHERITED_VARIABLES, TOOLCHAIN_HOMES
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.ports.process import ProcessOutcome, ProcessSpec
from tests.fakes.filesystem import MemoryFilesystem, Node, Symlink
from tests.fakes.processes import FakeProcessRunner, FakePrograms, FakeScratch, Script
from tests.fakes.threads import THREADS

TOOLCHAIN_VARIABLES = {name for name, _ in TOOLCHAIN_HOMES}
CALLER_ENV = {
    "PATH": "/usr/local/bin:/usr/bin",
    "LANG": "C.UTF-8",
    "SECRET_TOKEN": "s3cret",
    "ARTIFACTIZE_STATE_HOME": "/elsewhere",
    "HOME": "/home/caller",
    "TMPDIR": "/caller-tmp",
}
PRIVATE_VARIABLES = {
    "ARTIFACTIZE_WORKSPACE_DIR",
    "ARTIFACTIZE_OUTPUT_DIR",
    "ARTIFACTIZE_TMP_DIR",
    "HOME",
    "XDG_CACHE_HOME",
    "TMPDIR",
    "TMP",
    "TEMP",
}
DEFAULT_SCRIPT = 'command = "./fp.sh", args = ["--short", "{spec}/rules.txt"], files = ["fp.sh"]'


def app(script: str = DEFAULT_SCRIPT) -> bytes:
    return f'name = "app"\nfingerprint = {{ script = {{ {script} }} }}\n'.encode()


def tree(script: str = DEFAULT_SCRIPT, **extra: Node) -> dict[str, Node]:
    return {
        "VERSION": b"1.2.3\n",
        "app": {"index.artf": app(script), "fp.sh": b"#!/bin/sh\n", "lib": {"x.txt": b"x"}},
        "spec": {"index.artf": b'name = "spec"\n', "rules.txt": b"be nice\n"},
        **extra,
    }


class World:
    def __init__(self, repo: dict[str, Node] | None = None, script: Script | None = None) -> None:
        self.filesystem = MemoryFilesystem({"/repo": repo if repo is not None else tree()})
        self.workspace: Workspace = ConfigService(self.filesystem).load("/repo")
        self.runner = FakeProcessRunner()
        self.runner.script = (
            script if script is not None else ProcessOutcome(exit_code=0, stdout=b"v1\n")
        )
        self.scratch = FakeScratch()
        self.scripts = ProcessFingerprintScripts(
            ScriptPorts(
                processes=self.runner,
                scratch=self.scratch,
                filesystem=self.filesystem,
                programs=FakePrograms(missing=frozenset({"nope"})),
                environment=CALLER_ENV,
            )
        )

    def fingerprint(self, name: str = "app") -> str:
        computed = compute_fingerprint(self.workspace, name, self.filesystem, self.scripts)
        assert computed is not None and computed.manifest is None
        return computed.value

    def failure(self, name: str = "app") -> str:
        with pytest.raises(FingerprintError) as caught:
            self.fingerprint(name)
        return caught.value.message

    @property
    def spec(self) -> ProcessSpec:
        (spec,) = self.runner.specs
        return spec


def printing(stdout: bytes) -> ProcessOutcome:
    return ProcessOutcome(exit_code=0, stdout=stdout)


# --- what the script is given ------------------------------------------------------------------


def test_the_script_runs_in_the_owner_folder_with_resolved_operands_and_its_stdin() -> None:
    world = World()
    assert world.fingerprint() == "v1"
    spec = world.spec
    assert spec.argv == ("/repo/app/fp.sh", "--short", "/repo/spec/rules.txt")
    assert spec.cwd == "/repo/app"
    assert spec.stdin == b'{"version":1,"artifactId":"app"}' == stdin_payload("app")
    assert spec.timeout_ms == FINGERPRINT_SCRIPT_DEFAULT_TIMEOUT_MS == 30_000
    assert spec.capture_limit_bytes == SCRIPT_CAPTURE_BYTES


def test_a_declared_timeout_and_a_program_from_path() -> None:
    world = World(tree('command = "git-describe", args = [], timeout_ms = 1'))
    world.fingerprint()
    assert world.spec.argv == ("/usr/bin/git-describe",)
    assert world.spec.timeout_ms == 1


def test_the_environment_is_path_lang_and_private_directories_only() -> None:
    world = World()
    world.fingerprint()
    env = world.spec.env
    assert set(env) == set(INHERITED_VARIABLES) | PRIVATE_VARIABLES | TOOLCHAIN_VARIABLES
    assert (env["PATH"], env["LANG"]) == (CALLER_ENV["PATH"], CALLER_ENV["LANG"])
    assert "s3cret" not in env.values()
    root = world.scratch.created[0]
    assert root.startswith("/tmp/fingerprint-")
    for name in ("HOME", "TMPDIR", "TMP", "ARTIFACTIZE_OUTPUT_DIR", "XDG_CACHE_HOME"):
        assert env[name].startswith(f"{root}/") and env[name] in world.scratch.created
    assert world.scratch.live == set()  # all deleted afterwards


def test_nothing_is_salted_every_call_gets_the_same_literal_value() -> None:
    world = World()
    assert world.fingerprint() == world.fingerprint() == "v1"
    first, second = world.runner.specs
    assert (first.argv, first.stdin, first.cwd) == (second.argv, second.stdin, second.cwd)
    assert first.env["HOME"] != second.env["HOME"]  # fresh private directories each time


# --- the output rule, through the implementation ----------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "value"),
    [
        (b"x" * SCRIPT_OUTPUT_MAX_CHARS, "x" * SCRIPT_OUTPUT_MAX_CHARS),
        (b"x" * SCRIPT_OUTPUT_MAX_CHARS + b"\n", "x" * SCRIPT_OUTPUT_MAX_CHARS),
        (b"v1.2.3:a_b-c\n", "v1.2.3:a_b-c"),
    ],
)
def test_output_accepted(stdout: bytes, value: str) -> None:
    assert World(script=printing(stdout)).fingerprint() == value


@pytest.mark.parametrize(
    ("stdout", "problem"),
    [
        (b"x" * (SCRIPT_OUTPUT_MAX_CHARS + 1), "it has 129 characters"),
        (b"v1\r\n", "byte 3 is b'\\r'"),
        (b"", "it is empty"),
        (b" v1", "byte 1 is b' '"),
    ],
)
def test_output_refused_names_the_artifact(stdout: bytes, problem: str) -> None:
    message = World(script=printing(stdout)).failure()
    assert message.startswith("Artifact `app`: fingerprint script output must be 1-128 ")
    assert message.endswith(problem)


def test_output_past_the_capture_limit_is_refused() -> None:
    outcome = ProcessOutcome(exit_code=0, stdout=b"x" * SCRIPT_CAPTURE_BYTES, stdout_truncated=True)
    assert World(script=outcome).failure() == (
        "Artifact `app`: fingerprint script `./fp.sh` printed more than 4096 bytes"
    )


# --- failures ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "problem"),
    [
        (ProcessOutcome(exit_code=1, stdout=b"v1\n", stderr=b"TOKEN=s3cret"), "exited with code 1"),
        (
            ProcessOutcome(exit_code=0, timed_out=True, stdout=b"v1"),
            "did not finish within 30000 ms",
        ),
        (ProcessOutcome(signal=9), "was ended by signal 9"),
        (ProcessOutcome(spawn_error="Permission denied"), "could not start: Permission denied"),
        (ProcessOutcome(), "ended without an exit status"),
        (
            ProcessOutcome(exit_code=0, stdout=b"v1", streams_held_open=True),
            "left a process holding its output open, so the output may be incomplete",
        ),
    ],
)
def test_a_failed_script_is_a_fingerprint_error_without_stderr(
    outcome: ProcessOutcome, problem: str
) -> None:
    world = World(script=outcome)
    message = world.failure()
    assert message == f"Artifact `app`: fingerprint script `./fp.sh` {problem}"
    assert "s3cret" not in message
    assert world.scratch.live == set()


def test_a_missing_files_entry_fails_before_anything_runs() -> None:
    script = 'command = "./fp.sh", args = [], files = ["fp.sh", "lib/gone.txt"]'
    world = World(tree(script))
    assert world.failure() == (
        "Artifact `app`: fingerprint.script.files entry `lib/gone.txt` does not exist"
    )
    assert world.runner.specs == [] and world.scratch.created == []


def test_a_files_entry_below_a_regular_file_does_not_exist() -> None:
    world = World(tree('command = "./fp.sh", args = [], files = ["fp.sh/x"]'))
    assert world.failure().endswith("entry `fp.sh/x` does not exist")


@pytest.mark.parametrize(
    ("files", "link"),
    [('"link.txt"', "link.txt"), ('"linked/x.txt"', "linked")],
)
def test_a_symlinked_files_entry_is_refused(files: str, link: str) -> None:
    repo = tree(f'command = "./fp.sh", args = [], files = [{files}]')
    app_folder = repo["app"]
    assert isinstance(app_folder, dict)
    app_folder.update({"link.txt": Symlink("lib/x.txt"), "linked": Symlink("lib")})
    world = World(repo)
    message = world.failure()
    assert message.startswith(f"Artifact `app`: fingerprint.script.files entry `{files[1:-1]}` ")
    assert f"goes through the symbolic link `{link}`" in message
    assert world.runner.specs == []


def test_a_files_entry_that_is_a_folder_is_accepted() -> None:
    world = World(tree('command = "./fp.sh", args = [], files = ["lib"]'))
    assert world.fingerprint() == "v1"


def test_an_unavailable_program_names_the_artifact() -> None:
    world = World(tree('command = "nope", args = []'))
    assert world.failure() == (
        "Artifact `app`: fingerprint script command `nope` is unavailable or outside its scope"
    )


def test_an_unresolvable_operand_names_the_artifact() -> None:
    world = World(tree('command = "./fp.sh", args = ["{spec}/ghost.txt"]'))
    assert world.failure() == (
        "Artifact `app`: fingerprint script argument `{spec}/ghost.txt` cannot be resolved: "
        "Artifact input does not exist: ghost.txt"
    )


def test_a_cleanup_failure_aborts() -> None:
    world = World()
    world.scratch.remove_fails = True
    assert world.failure().startswith(
        "Artifact `app`: fingerprint script private directories cannot be removed: "
    )


def test_a_directory_creation_failure_aborts_and_removes_what_exists() -> None:
    world = World()
    world.scratch.create_fails_after = 2
    assert world.failure() == (
        "Artifact `app`: fingerprint script private directories cannot be created: "
        "Permission denied"
    )
    assert world.scratch.live == set() and world.runner.specs == []


def test_without_an_implementation_scripts_are_not_supported() -> None:
    world = World()
    with pytest.raises(FingerprintError) as caught:
        compute_fingerprint(world.workspace, "app", world.filesystem, None)
    assert caught.value.message == (
        "Artifact `app`: fingerprint scripts are not supported in this version"
    )


# --- wiring: the Human recheck passes the implementation through -------------------------------

HUMAN = b"""name = "app"
fingerprint = { script = { command = "./fp.sh", args = [] } }
[evals.signoff]
title = "Signed off"
profile = { kind = "human" }
payload.instruction = "Look."
"""


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_human_recheck_runs_the_script(anyio_backend: str) -> None:
    world = World({"app": {"index.artf": HUMAN, "fp.sh": b""}})
    ref = world.workspace.find_eval("app/signoff")
    keys = await anyio.to_thread.run_sync(  # never on the loop's thread: it runs its own loop
        key_inputs, world.workspace, "app/signoff", world.filesystem, world.scripts
    )
    assert keys.fingerprints == {"app": "v1"} and keys.key is not None
    reconnected = Reconnected(world.workspace, ref)
    token = Cancellation()
    assert (
        await recheck_key(reconnected, keys.key, world.filesystem, token, THREADS, world.scripts)
        is None
    )
    world.runner.script = printing(b"v2\n")
    changed = await recheck_key(
        reconnected, keys.key, world.filesystem, token, THREADS, world.scripts
    )
    assert changed is not None and changed.error_code == "INPUT_CHANGED"
    unsupported = await recheck_key(reconnected, keys.key, world.filesystem, token, THREADS)
    assert unsupported is not None
    assert unsupported.error_code == "FINGERPRINT_RECHECK_FAILED"
    assert (
        unsupported.error == "Artifact `app`: fingerprint scripts are not supported in this version"
    )
