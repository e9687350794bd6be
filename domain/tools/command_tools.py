"""Running a command tool: prepare, spawn in its own process group, normalize, clean up.

Preparation resolves everything first (program, operands, execution paths, a plain
template's values): any failure returns ``Agent tool preparation failed.`` and nothing is
created or spawned. Each call then gets private output and temporary directories outside
the workspace, removed on success, failure and cancellation alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from domain.declarations.model import CommandAgentTool
from domain.scope import physical_path, scope_entries, working_directory
from domain.text import compact_json
from domain.tools.command_output import (
    EXECUTION_FAILED,
    INVALID_OUTPUT,
    InvalidOutput,
    normalize_json_output,
)
from domain.tools.command_prep import CommandResolver
from domain.tools.images import IMAGE_MAX_BYTES, SIZE_REFUSED, ImageError
from domain.tools.locations import open_directory_at
from domain.tools.plain import SubstitutionError, plain_result, substitute
from domain.tools.results import ToolError, ToolResult
from domain.workspace import Artifact, Workspace
from ports.filesystem import Filesystem, FilesystemError, FileTooLarge
from ports.process import ProcessOutcome, ProcessRunner, ProcessSpec
from ports.scratch import ScratchSpace

PREPARATION_FAILED = "Agent tool preparation failed."
TIMED_OUT = "Agent tool timed out."
PROTOCOL_VERSION = 1
CALLER_PREFIX = "ARTIFACTIZE_"
SESSION_DIR_VARIABLE = "ARTIFACTIZE_SESSION_DIR"


@dataclass(frozen=True)
class PreparedCommand:
    argv: tuple[str, ...]
    cwd: str
    execution_paths: Mapping[str, str]


def author_environment(
    environment: Mapping[str, str], tmp_dir: str, session_dir: str | None = None
) -> dict[str, str]:
    """The author's own environment (real home), without the caller's ``ARTIFACTIZE_*``,
    with a private temporary directory (and the session directory for bound tools)."""
    env = {k: v for k, v in environment.items() if not k.startswith(CALLER_PREFIX)}
    env.update({"TMPDIR": tmp_dir, "TMP": tmp_dir, "TEMP": tmp_dir})
    if session_dir is not None:
        env[SESSION_DIR_VARIABLE] = session_dir
    return env


@dataclass(frozen=True)
class CommandRunner:
    workspace: Workspace
    filesystem: Filesystem
    resolver: CommandResolver
    processes: ProcessRunner
    scratch: ScratchSpace
    environment: Mapping[str, str]

    def prepare(
        self, owner: Artifact, tool: CommandAgentTool, args: Mapping[str, Any]
    ) -> PreparedCommand:
        """Resolve everything before anything is created; raises ``ToolError``."""
        try:
            problem = self.resolver.owner_problem(owner)
            if problem:
                raise ToolError(problem)
            program = self.resolver.program(owner, tool.command)
            if tool.protocol == "json":
                rest = tuple(self.resolver.operand(owner, arg) for arg in tool.args)
            else:
                rest = substitute(tool.args, args)
            paths = {p: self.resolver.execution_path(p) for p in tool.execution_paths}
        except (ToolError, SubstitutionError):
            raise ToolError(PREPARATION_FAILED) from None
        return PreparedCommand((program, *rest), working_directory(self.workspace, owner), paths)

    def envelope(
        self,
        owner: Artifact,
        prepared: PreparedCommand,
        output_dir: str,
        tmp_dir: str,
        args: Mapping[str, Any],
    ) -> bytes:
        context: dict[str, Any] = {
            "artifactId": owner.name,
            "artifactPath": physical_path(self.workspace, owner),
            "outputDir": output_dir,
            "tmpDir": tmp_dir,
            "scope": scope_entries(self.workspace, self.resolver.scope),
        }
        if prepared.execution_paths:
            context["executionPaths"] = dict(prepared.execution_paths)
        request = {"version": PROTOCOL_VERSION, "context": context, "args": dict(args)}
        return compact_json(request).encode("utf-8")

    async def call(
        self,
        owner: Artifact,
        tool: CommandAgentTool,
        args: Mapping[str, Any],
        output_root: str | None,
        session_dir: str | None = None,
    ) -> ToolResult:
        prepared = await anyio.to_thread.run_sync(self.prepare, owner, tool, args)
        created: list[str] = []
        try:
            output_dir = self.scratch.create_private_directory(output_root, "output-")
            created.append(output_dir)
            tmp_dir = self.scratch.create_private_directory(output_root, "tmp-")
            created.append(tmp_dir)
            stdin = (
                self.envelope(owner, prepared, output_dir, tmp_dir, args)
                if tool.protocol == "json"
                else b""
            )
            spec = ProcessSpec(
                argv=prepared.argv,
                cwd=prepared.cwd,
                env=author_environment(self.environment, tmp_dir, session_dir),
                timeout_ms=tool.timeout_ms,
                stdin=stdin,
            )
            outcome = await self.processes.run(spec)
            return await anyio.to_thread.run_sync(self._result, tool, outcome, output_dir)
        finally:
            with anyio.CancelScope(shield=True):
                for path in reversed(created):
                    await anyio.to_thread.run_sync(self.scratch.remove_tree, path)

    def _result(
        self, tool: CommandAgentTool, outcome: ProcessOutcome, output_dir: str
    ) -> ToolResult:
        if outcome.spawn_error is not None:
            return ToolResult.error(EXECUTION_FAILED)
        if outcome.timed_out:
            return ToolResult.error(TIMED_OUT)
        if tool.protocol == "plain":
            return plain_result(outcome.stdout, outcome.stdout_truncated, outcome.exit_code == 0)
        if outcome.exit_code != 0:
            return ToolResult.error(EXECUTION_FAILED)
        if outcome.stdout_truncated or outcome.stderr_truncated:
            return ToolResult.error(INVALID_OUTPUT)
        try:
            return normalize_json_output(
                outcome.stdout, output_dir, lambda parts: self._read_output(output_dir, parts)
            )
        except InvalidOutput:
            return ToolResult.error(INVALID_OUTPUT)

    def _read_output(self, output_dir: str, components: tuple[str, ...]) -> bytes:
        """An image file below the output directory, through the pinned no-follow walk."""
        try:
            with open_directory_at(self.filesystem, output_dir, components[:-1]) as parent:
                return parent.read_file(components[-1], IMAGE_MAX_BYTES)
        except FileTooLarge:
            raise ImageError(SIZE_REFUSED) from None
        except (FilesystemError, ValueError):
            raise InvalidOutput(
                "the image file cannot be read below the output directory"
            ) from None
