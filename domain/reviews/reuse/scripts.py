"""Fingerprint scripts as processes (reference/declarations.md §3.1 "Script fingerprint").

An owner declares ``fingerprint = { script = { command, args, files?, timeout_ms? } }`` when
its review depends on more than its own bytes (a version file elsewhere, a lock file, a
generated schema). The script runs like a runtime eval's command, so it shares that
machinery instead of copying it:

- the program and every ``{name}`` operand are resolved by ``CommandResolver``, within the
  script's scope: the owner plus the Artifacts its args name (each with its child and mount
  closure), never the owner's evals' scopes;
- the environment is ``runtime_environment`` (PATH and LANG, nothing else of the caller's)
  over private HOME/TMP/output directories from ``create_private_dirs``, removed afterwards
  on every path;
- stdin is ``{"version":1,"artifactId":"<name>"}``, cwd the owner's working directory.

``files`` are checked (present, no symlink on the way), never hashed: they say what the
script reads, so a missing one fails loudly instead of giving a stale value. Every failure
is a ``FingerprintError`` naming the Artifact; stderr is never shown (it may hold secrets
the script read). The domain validates the returned stdout (``script_output_value``).

``run`` is synchronous, like every fingerprint computation: it drives the async process port
with its own event loop (``anyio.run``), so it must be called from a thread without a running
loop (``Verify.prepare`` before the Run's loop starts; rechecks on a worker thread, through
the ``WorkerThreads`` port).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

import anyio

from artifactize.domain.declarations.model import ScriptFingerprint
from artifactize.domain.declarations.templates import TemplateError, parse_operand
from artifactize.domain.project.scope import closure, working_directory
from artifactize.domain.project.state_home import StateLocationError, check_outside_repo
from artifactize.domain.project.workspace import Artifact, Workspace
from artifactize.domain.reviews.reuse.errors import FingerprintError
from artifactize.domain.reviews.runtime.env import (
    RuntimeDirs,
    create_private_dirs,
    remove_private_dirs,
    runtime_environment,
)
from artifactize.domain.tools.commands.prep import CommandResolver
from artifactize.domain.tools.results import ToolError
from artifactize.ports.filesystem import EntryKind, Filesystem
from artifactize.ports.process import ProcessOutcome, ProcessRunner, ProcessSpec
from artifactize.ports.programs import ProgramFinder
from artifactize.ports.scratch import ScratchSpace

STDIN_VERSION = 1
# stdout kept: well past the 129 bytes a valid value can take, so "too long" is reported as
# such, and small enough that a runaway script cannot fill memory.
SCRIPT_CAPTURE_BYTES = 4096
DIRS_PREFIX = "fingerprint-"

COMMAND_UNAVAILABLE = "fingerprint script command `{command}` is unavailable or outside its scope"
ARGUMENT_UNRESOLVED = "fingerprint script argument `{arg}` cannot be resolved: {reason}"
FILE_MISSING = "fingerprint.script.files entry `{path}` does not exist"
FILE_SYMLINK = (
    "fingerprint.script.files entry `{path}` goes through the symbolic link `{link}`; "
    "listed files must not be or sit below symlinks"
)
DIRS_FAILED = "fingerprint script private directories cannot be created: {reason}"
DIRS_INSIDE = "fingerprint script private directory {path} is inside the workspace {workspace}"
CLEANUP_FAILED = "fingerprint script private directories cannot be removed: {reason}"


@dataclass(frozen=True)
class ScriptPorts:
    """What running a fingerprint script needs from the world."""

    processes: ProcessRunner
    scratch: ScratchSpace
    filesystem: Filesystem
    programs: ProgramFinder
    environment: Mapping[str, str]  # the caller's; only PATH and LANG reach the script


class ProcessFingerprintScripts:
    """``FingerprintScripts`` over the process, scratch, filesystem and program ports."""

    def __init__(self, ports: ScriptPorts) -> None:
        self.ports = ports

    def run(self, workspace: Workspace, artifact: Artifact, script: ScriptFingerprint) -> bytes:
        argv = self._argv(workspace, artifact, script)
        created: list[str] = []
        try:
            dirs = self._create_dirs(workspace, artifact, created)
            env = runtime_environment(self.ports.environment, workspace.root_path, dirs)
            spec = ProcessSpec(
                argv=argv,
                cwd=working_directory(workspace, artifact),
                env=env,
                timeout_ms=script.timeout_ms,
                stdin=stdin_payload(artifact.name),
                capture_limit_bytes=SCRIPT_CAPTURE_BYTES,
            )
            outcome = anyio.run(self.ports.processes.run, spec)
        except BaseException:
            with contextlib.suppress(OSError):  # the first failure is the one reported
                remove_private_dirs(self.ports.scratch, created)
            raise
        try:
            remove_private_dirs(self.ports.scratch, created)
        except OSError as exc:
            raise _failed(artifact, CLEANUP_FAILED.format(reason=exc.strerror or exc)) from None
        return _stdout(artifact, script, outcome)

    def _argv(
        self, workspace: Workspace, artifact: Artifact, script: ScriptFingerprint
    ) -> tuple[str, ...]:
        """Program and operands, resolved before anything is created; then the files check."""
        resolver = CommandResolver(
            workspace,
            self.ports.filesystem,
            self.ports.programs,
            self.ports.environment,
            script_scope(workspace, artifact, script),
        )
        problem = resolver.owner_problem(artifact)
        if problem is not None:
            raise _failed(artifact, problem)
        try:
            program = resolver.program(artifact, script.command)
        except ToolError:
            raise _failed(artifact, COMMAND_UNAVAILABLE.format(command=script.command)) from None
        operands: list[str] = []
        for arg in script.args:
            try:
                operands.append(resolver.operand(artifact, arg))
            except ToolError as exc:
                reason = ARGUMENT_UNRESOLVED.format(arg=arg, reason=exc.message)
                raise _failed(artifact, reason) from None
        for path in script.files:
            check_listed_file(resolver, artifact, path)
        return (program, *operands)

    def _create_dirs(
        self, workspace: Workspace, artifact: Artifact, created: list[str]
    ) -> RuntimeDirs:
        try:
            dirs = create_private_dirs(self.ports.scratch, None, created, DIRS_PREFIX)
        except OSError as exc:
            raise _failed(artifact, DIRS_FAILED.format(reason=exc.strerror or exc)) from None
        try:
            check_outside_repo(dirs.root, workspace.root_path)
        except StateLocationError:
            message = DIRS_INSIDE.format(path=dirs.root, workspace=workspace.root_path)
            raise _failed(artifact, message) from None
        return dirs


def stdin_payload(artifact_name: str) -> bytes:
    """``{"version":1,"artifactId":"<name>"}``: compact, in this key order."""
    payload = {"version": STDIN_VERSION, "artifactId": artifact_name}
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


def script_scope(
    workspace: Workspace, owner: Artifact, script: ScriptFingerprint
) -> tuple[str, ...]:
    """The owner and the Artifacts its args name, each with its child and mount closure."""
    names = [owner.name]
    for arg in script.args:
        with contextlib.suppress(TemplateError):  # the resolver reports a bad operand
            operand = parse_operand(arg)
            target = workspace.resolve_name(owner, operand.name) if operand else None
            if target is not None:
                names.append(target.name)
    return closure(workspace, names)


def check_listed_file(resolver: CommandResolver, owner: Artifact, path: str) -> None:
    """An owner-relative ``files`` entry exists, and no component of it is a symlink."""
    folder = tuple(owner.folder.split("/")) if owner.folder else ()
    parts = tuple(path.split("/"))
    for depth in range(1, len(parts) + 1):
        kind = resolver.kind_at((*folder, *parts[:depth]))
        if kind is EntryKind.SYMLINK:
            link = "/".join(parts[:depth])
            raise _failed(owner, FILE_SYMLINK.format(path=path, link=link))
        if kind is None or (depth < len(parts) and kind is not EntryKind.DIRECTORY):
            raise _failed(owner, FILE_MISSING.format(path=path))


def _stdout(artifact: Artifact, script: ScriptFingerprint, outcome: ProcessOutcome) -> bytes:
    """The stdout of a script that ended well; stderr is never part of a message."""
    if outcome.spawn_error is not None:
        problem = f"could not start: {outcome.spawn_error}"
    elif outcome.timed_out:
        problem = f"did not finish within {script.timeout_ms} ms"
    elif outcome.signal is not None:
        problem = f"was ended by signal {outcome.signal}"
    elif outcome.exit_code is None:
        problem = "ended without an exit status"
    elif outcome.exit_code != 0:
        problem = f"exited with code {outcome.exit_code}"
    elif outcome.stdout_truncated:
        problem = f"printed more than {SCRIPT_CAPTURE_BYTES} bytes"
    elif outcome.streams_held_open:
        problem = "left a process holding its output open, so the output may be incomplete"
    else:
        return outcome.stdout
    raise _failed(artifact, f"fingerprint script `{script.command}` {problem}")


def _failed(artifact: Artifact, problem: str) -> FingerprintError:
    return FingerprintError(f"Artifact `{artifact.name}`: {problem}")
