"""Running a command tool: prepare, spawn in its own process group, normalize, clean up.

Preparation resolves everything first (program, operands, execution paths, a plain
template's values): any failure returns ``Agent tool preparation failed.`` and nothing is
created or spawned. Each call then gets private output and temporary directories outside
the workspace, removed on success, failure and cancellation alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from artifactize.domain.declarations.model import CommandAgentTool
from artifactize.domain.project.scope import physical_path, scope_entries, working_directory
from artifactize.domain.project.workspace import Artifact, Workspace
from artifactize.domain.text import compact_json
from artifactize.domain.tools.commands import diagnostics
from artifactize.domain.tools.commands.json_output import (
    EXECUTION_FAILED,
    INVALID_OUTPUT,
    InvalidOutput,
    normalize_json_output,
)
from artifactize.domain.tools.commands.plain import SubstitutionError, plain_result, substitute
from artifactize.domain.tools.commands.prep import CommandResolver
from artifactize.domain.tools.images import IMAGE_MAX_BYTES, SIZE_REFUSED, ImageError
from artifactize.domain.tools.locations import open_directory_at
from artifactize.domain.tools.results import ToolError, ToolResult
from artifactize.ports.filesystem import Filesystem, FilesystemError, FileTooLarge
from artifactize.ports.process import ProcessOutcome, ProcessRunner, ProcessSpec
from artifactize.ports.scratch import ScratchSpace
from artifactize.ports.sessions import ProcessLauncher, SpawnObserver
from artifactize.ports.threads import WorkerThreads

PREPARATION_FAILED = "Agent tool preparation failed."
TIMED_OUT = "Agent tool timed out."
CLEANUP_FAILED = "Agent tool cleanup failed."
PROTOCOL_VERSION = 1
CALLER_PREFIX = "ARTIFACTIZE_"
SESSION_DIR_VARIABLE = "ARTIFACTIZE_SESSION_DIR"
DEFAULT_LANG = "en_US.UTF-8"


@dataclass(frozen=True)
class PreparedCommand:
    argv: tuple[str, ...]
    cwd: str
    execution_paths: Mapping[str, str]


def author_environment(
    environment: Mapping[str, str],
    tmp_dir: str,
    session_dir: str | None = None,
    *,
    output_dir: str | None = None,
    workspace_dir: str | None = None,
) -> dict[str, str]:
    """The author's own environment (real home), without the caller's ``ARTIFACTIZE_*``,
    with a private temporary directory (and the session directory for bound tools).

    Like the runtime environment, ``LANG`` falls back to ``en_US.UTF-8`` and artifactize's
    own ``ARTIFACTIZE_WORKSPACE_DIR``/``ARTIFACTIZE_OUTPUT_DIR``/``ARTIFACTIZE_TMP_DIR``
    name the canonical workspace and the call's private directories.
    """
    env = {k: v for k, v in environment.items() if not k.startswith(CALLER_PREFIX)}
    env.setdefault("LANG", DEFAULT_LANG)
    env.update({"TMPDIR": tmp_dir, "TMP": tmp_dir, "TEMP": tmp_dir})
    env["ARTIFACTIZE_TMP_DIR"] = tmp_dir
    if output_dir is not None:
        env["ARTIFACTIZE_OUTPUT_DIR"] = output_dir
    if workspace_dir is not None:
        env["ARTIFACTIZE_WORKSPACE_DIR"] = workspace_dir
    if session_dir is not None:
        env[SESSION_DIR_VARIABLE] = session_dir
    return env


def _lexical(path: str) -> str:
    """``path`` with its empty, ``.`` and ``..`` components resolved lexically."""
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return ("/" if path.startswith("/") else "") + "/".join(parts)


def _within(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it (both absolute and canonical)."""
    base = root.rstrip("/")
    return path == base or path.startswith(f"{base}/")


@dataclass(frozen=True)
class CommandRunner:
    workspace: Workspace
    filesystem: Filesystem
    resolver: CommandResolver
    processes: ProcessRunner
    scratch: ScratchSpace
    environment: Mapping[str, str]
    launcher: ProcessLauncher | None = None  # reports spawned groups (tool sessions' journal)
    threads: WorkerThreads = field(kw_only=True)  # preparing and finishing, off the loop

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
        except (ToolError, SubstitutionError) as exc:
            recorder = diagnostics.current()
            if recorder is not None:  # only `tools check --execute` records (for the author)
                recorder.preparation_error = str(exc)
            raise ToolError(PREPARATION_FAILED) from None
        return PreparedCommand((program, *rest), working_directory(self.workspace, owner), paths)

    def check_output_root(self, output_root: str | None) -> None:
        """The caller's output root must lie outside the workspace, checked before and after
        canonicalizing (its nearest existing ancestor, links followed); nothing is created."""
        if output_root is None:
            return
        root = self.workspace.root_path
        if _within(_lexical(output_root), root):
            raise ToolError(PREPARATION_FAILED)
        existing, rest = output_root, ""
        while existing:
            try:
                canonical = self.filesystem.canonical_directory(existing)
            except (FilesystemError, ValueError):
                existing, _, name = existing.rpartition("/")
                rest = f"{name}/{rest}" if rest else name
                continue
            if _within(_lexical(f"{canonical}/{rest}"), root):
                raise ToolError(PREPARATION_FAILED)
            return

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
        observe: SpawnObserver | None = None,
    ) -> ToolResult:
        """Run one call; ``observe`` (with a launcher) records the group before it runs on."""
        # Blocking work stays off the event loop. A plain call is one worker-thread trip:
        # preparation and the private directories, the run, then normalizing and removing
        # them (``run_between``); a session's call, whose group the launcher records, takes
        # two trips around the run. Each trip costs a thread's and the loop's wake-ups, which
        # on a busy machine weigh more than the work itself. ``created`` lists the directories
        # that exist, so whatever ends the call (a failure, a cancellation), the ``finally``
        # removes what is left.
        created: list[str] = []
        try:
            if observe is not None and self.launcher is not None:
                spec, output_dir = await self.threads.run(
                    self.start_spec, owner, tool, args, output_root, session_dir, created
                )
                outcome = await self.launcher.run_observed(spec, observe)
                return await self.threads.run(self._finish, tool, outcome, output_dir, created)
            started: list[str] = []  # the output directory, once ``before`` has made it

            def before() -> ProcessSpec:
                spec, output_dir = self.start_spec(
                    owner, tool, args, output_root, session_dir, created
                )
                started.append(output_dir)
                return spec

            def after(outcome: ProcessOutcome) -> ToolResult:
                return self._finish(tool, outcome, started[0], created)

            return await self.processes.run_between(before, after)
        finally:
            if created:  # only after a failure or cancellation, which is what the caller sees
                with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
                    await self.threads.run(self.remove, created)

    def start_spec(
        self,
        owner: Artifact,
        tool: CommandAgentTool,
        args: Mapping[str, Any],
        output_root: str | None,
        session_dir: str | None,
        created: list[str],
    ) -> tuple[ProcessSpec, str]:
        """Prepare (a failure creates nothing), then the private directories and the spec."""
        prepared = self.prepare(owner, tool, args)
        self.check_output_root(output_root)
        try:
            output_dir = self.scratch.create_private_directory(output_root, "output-")
            created.append(output_dir)
            tmp_dir = self.scratch.create_private_directory(output_root, "tmp-")
            created.append(tmp_dir)
        except OSError:  # the root cannot hold directories (a file, no permission…)
            raise ToolError(PREPARATION_FAILED) from None
        stdin = (
            self.envelope(owner, prepared, output_dir, tmp_dir, args)
            if tool.protocol == "json"
            else b""
        )
        spec = ProcessSpec(
            argv=prepared.argv,
            cwd=prepared.cwd,
            env=author_environment(
                self.environment,
                tmp_dir,
                session_dir,
                output_dir=output_dir,
                workspace_dir=self.workspace.root_path,
            ),
            timeout_ms=tool.timeout_ms,
            stdin=stdin,
        )
        return spec, output_dir

    def _finish(
        self, tool: CommandAgentTool, outcome: ProcessOutcome, output_dir: str, created: list[str]
    ) -> ToolResult:
        """Normalize (image files are read from the output directory), then remove it all.

        A directory that cannot be removed is reported instead of the result."""
        result = self._result(tool, outcome, output_dir)
        try:
            self.remove(created)
        except OSError:
            return ToolResult.error(CLEANUP_FAILED)
        return result

    def remove(self, created: list[str]) -> None:
        """Remove the call's directories, newest first; each leaves ``created`` once gone."""
        while created:
            self.scratch.remove_tree(created[-1])
            created.pop()

    def _result(
        self, tool: CommandAgentTool, outcome: ProcessOutcome, output_dir: str
    ) -> ToolResult:
        recorder = diagnostics.current()  # set only by `tools check --execute`
        if recorder is not None:
            recorder.process_ended(outcome)
        if outcome.spawn_error is not None:
            return ToolResult.error(EXECUTION_FAILED)
        if outcome.timed_out:
            return ToolResult.error(TIMED_OUT)
        if tool.protocol == "plain":
            return plain_result(outcome.stdout, outcome.stdout_truncated, outcome.exit_code == 0)
        if outcome.exit_code != 0:
            return ToolResult.error(EXECUTION_FAILED)
        if outcome.stdout_truncated or outcome.stderr_truncated:
            if recorder is not None:
                stream = "stdout" if outcome.stdout_truncated else "stderr"
                recorder.output_refused(outcome.stdout, f"{stream} exceeded its capture limit")
            return ToolResult.error(INVALID_OUTPUT)
        try:
            return normalize_json_output(
                outcome.stdout, output_dir, lambda parts: self._read_output(output_dir, parts)
            )
        except InvalidOutput as exc:
            if recorder is not None:
                recorder.output_refused(outcome.stdout, str(exc), exc.where)
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
