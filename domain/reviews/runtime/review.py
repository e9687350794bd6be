"""One runtime review: run the eval's command once and turn its exit into a verdict.

The order is the contract:

1. prepare, creating nothing: the program (a bare name from ``PATH``, a ``/``-path inside the
   admitted scope with no symlinks, or an absolute path as given) and every ``{name}``
   operand resolved to an absolute scoped path, exactly as command tools resolve them
   (``CommandResolver``); a failure is ERROR ``PREPARATION_FAILED``;
2. create one private invocation directory below the Run directory (refused inside the
   workspace) holding ``output``, ``tmp``, ``home`` and ``cache`` directories;
3. run the command in the target's working directory, in its own process group, with the
   private environment (``runtime_env``), the profile's deadline and capped output;
4. remove the invocation directory on every path (success, error, cancellation); a removal
   failure replaces the verdict with ERROR ``RUNTIME_ERROR``;
5. for a verdict of a keyed request, recheck the fingerprints: a changed key is ERROR
   ``INPUT_CHANGED``, a failed recheck ERROR ``FINGERPRINT_RECHECK_FAILED``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio

from artifactize.domain.declarations.model import RuntimeProfile
from artifactize.domain.project.runtime_programs import (
    ARGUMENT_UNRESOLVED,
    program_document,
    program_problem,
)
from artifactize.domain.project.scope import eval_scope, working_directory
from artifactize.domain.project.state_home import StateLocationError, check_outside_repo
from artifactize.domain.project.workspace import EvalRef, Workspace
from artifactize.domain.reviews.agent.review import ReviewOutcome
from artifactize.domain.reviews.failures import INPUT_CHANGED, FailureCode
from artifactize.domain.reviews.reuse.fingerprints import FingerprintError, FingerprintScripts
from artifactize.domain.reviews.reuse.keys import KeyInputs, key_inputs
from artifactize.domain.reviews.runtime.env import (
    InvocationPool,
    RuntimeDirs,
    create_private_dirs,
    remove_private_dirs,
    runtime_environment,
)
from artifactize.domain.reviews.runtime.outcome import RUNTIME_OUTPUT_MAX_BYTES, runtime_outcome
from artifactize.domain.tools.commands.prep import CommandResolver
from artifactize.domain.tools.results import ToolError
from artifactize.ports.clock import Clock
from artifactize.ports.documents import ProgramDocument
from artifactize.ports.filesystem import Filesystem, FilesystemError
from artifactize.ports.process import ProcessOutcome, ProcessRunner, ProcessSpec
from artifactize.ports.programs import ProgramFinder
from artifactize.ports.scratch import ScratchSpace
from artifactize.ports.statuses import VERDICT_STATUSES, ExecutionStatus
from artifactize.ports.threads import WorkerThreads

MILLISECONDS_PER_SECOND = 1000
CANCELLED = "Runtime eval was cancelled."
RUN_DIR_UNUSABLE = "The Run directory {path} cannot hold runtime output: {reason}"
OUTPUT_INSIDE_WORKSPACE = "Runtime output directory {path} is inside the workspace {workspace}."
CLEANUP_FAILED = "Runtime eval cleanup failed: {reason}"


@dataclass(frozen=True)
class RuntimePorts:
    """What a runtime review needs from the world."""

    processes: ProcessRunner
    scratch: ScratchSpace
    filesystem: Filesystem
    programs: ProgramFinder
    clock: Clock
    environment: Mapping[str, str]  # the caller's; only PATH and LANG reach the command
    scripts: FingerprintScripts | None = None  # None: fingerprint scripts are not supported
    threads: WorkerThreads = field(kw_only=True)  # preparing, removing, rechecking
    # A Run's emptied private folders, handed to its next runtime eval (None: each eval
    # creates and removes its own)
    pool: InvocationPool | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class PreparedRuntime:
    """What will run, and where: recorded on the request as ``argv`` and ``cwd``."""

    argv: tuple[str, ...]
    cwd: str
    program: ProgramDocument


class RuntimePreparationError(Exception):
    """The command cannot be prepared; the message is what the request records."""


class RuntimeReview:
    """Runs one runtime eval. Create, ``await run()``.

    When the caller cancels ``run()``, the process group is killed and the private
    directories removed before the cancellation propagates; ``cancelled_outcome()`` gives
    what to record."""

    def __init__(
        self,
        ports: RuntimePorts,
        workspace: Workspace,
        eval_ref: EvalRef,
        keys: KeyInputs,
        run_dir: str,
    ) -> None:
        if not isinstance(eval_ref.eval.profile, RuntimeProfile):
            raise ValueError("a runtime review needs a runtime eval")
        self.ports = ports
        self.workspace = workspace
        self.eval_ref = eval_ref
        self.profile: RuntimeProfile = eval_ref.eval.profile
        self.keys = keys
        self.run_dir = run_dir
        self.qualified_id = eval_ref.qualified_id
        self.prepared: PreparedRuntime | None = None  # set once preparation succeeded
        self.parent: str | None = None  # the canonical Run folder, once the pool is asked

    def cancelled_outcome(self) -> ReviewOutcome:
        return self._stamped(ReviewOutcome.failed(FailureCode.CANCELLED, CANCELLED))

    async def run(self) -> ReviewOutcome:
        created: list[str] = []  # the invocation directory, once it exists
        try:
            outcome = await self._execute(created)
        finally:
            if created:  # only after a failure or a cancellation
                with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
                    await self.ports.threads.run(self._remove, created)
        return self._stamped(outcome)

    def _clean_and_recheck(self, outcome: ReviewOutcome, created: list[str]) -> ReviewOutcome:
        """Remove the invocation directory (a failure replaces a verdict), then recheck."""
        try:
            self._remove(created)
        except OSError as exc:
            if outcome.status != ExecutionStatus.ERROR:  # an earlier error stays the reason
                outcome = self._replaced(outcome, FailureCode.RUNTIME_ERROR, _cleanup(exc))
        return self._recheck(outcome)

    async def _execute(self, created: list[str]) -> ReviewOutcome:
        """Preparation (the folders), the command, then the removal and the fingerprint
        recheck: blocking work, all of it in one worker-thread trip (``run_between``)."""
        started: list[float] = []  # when the command was about to start

        def before() -> ProcessSpec:
            spec = self._prepare(created)
            started.append(self.ports.clock.monotonic())
            return spec

        def after(process: ProcessOutcome) -> ReviewOutcome:
            elapsed = self.ports.clock.monotonic() - started[0]
            duration_ms = max(round(elapsed * MILLISECONDS_PER_SECOND), 0)
            outcome = runtime_outcome(process, duration_ms, self.profile.timeout_ms)
            return self._clean_and_recheck(outcome, created)

        try:
            return await self.ports.processes.run_between(before, after)
        except RuntimePreparationError as exc:  # what was partly created: the ``finally``
            return ReviewOutcome.failed(FailureCode.PREPARATION_FAILED, str(exc))

    def _prepare(self, created: list[str]) -> ProcessSpec:
        """Resolve argv and cwd (creating nothing), then the private directories."""
        self.prepared = self._resolve()
        dirs = self._create_dirs(created)
        return ProcessSpec(
            argv=self.prepared.argv,
            cwd=self.prepared.cwd,
            env=runtime_environment(self.ports.environment, self.workspace.root_path, dirs),
            timeout_ms=self.profile.timeout_ms,
            capture_limit_bytes=RUNTIME_OUTPUT_MAX_BYTES,
        )

    def _resolve(self) -> PreparedRuntime:
        target = self.eval_ref.artifact
        resolver = CommandResolver(
            self.workspace,
            self.ports.filesystem,
            self.ports.programs,
            self.ports.environment,
            eval_scope(self.workspace, self.qualified_id),
        )
        problem = resolver.owner_problem(target)
        if problem is not None:
            raise RuntimePreparationError(problem)
        try:
            program = resolver.program(target, self.profile.command)
        except ToolError as exc:
            raise RuntimePreparationError(
                program_problem(
                    target, self.profile.command, exc, windows=self.ports.programs.windows_paths
                )
            ) from None
        operands: list[str] = []
        for arg in self.profile.args:
            try:
                operands.append(resolver.operand(target, arg))
            except ToolError as exc:
                message = ARGUMENT_UNRESOLVED.format(arg=arg, reason=exc.message)
                raise RuntimePreparationError(message) from None
        return PreparedRuntime(
            (program, *operands),
            working_directory(self.workspace, target),
            program_document(self.ports.programs, program),
        )

    def _create_dirs(self, created: list[str]) -> RuntimeDirs:
        """A fresh private invocation directory below the Run directory, never inside the
        workspace (checked on the canonical path, links followed), with its four children."""
        try:
            parent = self.ports.filesystem.canonical_directory(self.run_dir)
        except FilesystemError as exc:
            message = RUN_DIR_UNUSABLE.format(path=self.run_dir, reason=exc.message)
            raise RuntimePreparationError(message) from None
        try:
            check_outside_repo(parent, self.workspace.root_path)
        except StateLocationError:
            message = OUTPUT_INSIDE_WORKSPACE.format(
                path=parent, workspace=self.workspace.root_path
            )
            raise RuntimePreparationError(message) from None
        try:
            if self.ports.pool is not None:
                self.parent = parent
                return self.ports.pool.take(parent, created)
            return create_private_dirs(self.ports.scratch, parent, created)
        except OSError as exc:
            message = RUN_DIR_UNUSABLE.format(path=parent, reason=exc.strerror or exc)
            raise RuntimePreparationError(message) from None

    def _remove(self, created: list[str]) -> None:
        """Remove the invocation directory (or hand it to the pool when its command left it
        as created); it leaves ``created`` once it is gone."""
        if self.ports.pool is not None and self.parent is not None:
            self.ports.pool.give_back(self.parent, created)
            return
        remove_private_dirs(self.ports.scratch, created)

    def _recheck(self, outcome: ReviewOutcome) -> ReviewOutcome:
        """A verdict of a keyed request holds only if the fingerprints did not change."""
        if outcome.status not in VERDICT_STATUSES or self.keys.key is None:
            return outcome
        try:
            again = key_inputs(
                self.workspace, self.qualified_id, self.ports.filesystem, self.ports.scripts
            )
        except FingerprintError as exc:
            return self._replaced(outcome, FailureCode.FINGERPRINT_RECHECK_FAILED, str(exc))
        if again.key != self.keys.key:
            return self._replaced(outcome, FailureCode.INPUT_CHANGED, INPUT_CHANGED)
        return outcome

    @staticmethod
    def _replaced(outcome: ReviewOutcome, code: FailureCode, message: str) -> ReviewOutcome:
        """An ERROR instead of the verdict, keeping the record of what ran."""
        failed = ReviewOutcome.failed(code, message)
        failed.child = outcome.child
        return failed

    def _stamped(self, outcome: ReviewOutcome) -> ReviewOutcome:
        if self.prepared is not None:
            outcome.cwd, outcome.argv = self.prepared.cwd, self.prepared.argv
            outcome.program = self.prepared.program
        return outcome


def _cleanup(error: OSError) -> str:
    return CLEANUP_FAILED.format(reason=error.strerror or error)
