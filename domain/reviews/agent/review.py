"""One Agent review, from execution-path pins to a verdict that still holds.

The order is the contract (seed 000, "Tool sessions"):

1. pin the execution paths of every tool and session in the admitted scope
   (a path that cannot be pinned fails with PREPARATION_FAILED before the Agent is called);
2. run the Agent loop under the review's deadline; tool sessions start lazily inside it,
   so their startup and readiness count toward that deadline;
3. after the loop, on every ending, stop and clean up every session that started
   (shielded from the caller's cancellation; a cleanup failure replaces the verdict);
4. only then revalidate the inputs (declarations) and recheck the fingerprints;
5. hand back the outcome, which the caller commits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio

from artifactize.domain.declarations.model import AgentProfile
from artifactize.domain.project.scope import eval_scope, scope_entries
from artifactize.domain.project.workspace import EvalRef, Workspace
from artifactize.domain.reviews.agent.coding import CodingAgentLoop
from artifactize.domain.reviews.agent.loop import AgentLoop, LoopSettings, LoopTrace, ToolCaller
from artifactize.domain.reviews.agent.prompt import AgentPrompt, build_prompt
from artifactize.domain.reviews.failures import (
    CANCELLED,
    DECLARATIONS_CHANGED,
    INPUT_CHANGED,
    TIMED_OUT,
    AgentFailure,
    FailureCode,
)
from artifactize.domain.reviews.reuse.fingerprints import FingerprintError, FingerprintScripts
from artifactize.domain.reviews.reuse.keys import KeyInputs, eval_def_hash, key_inputs
from artifactize.domain.reviews.verdicts import VerdictValidator
from artifactize.domain.tools.pinning import PinningError, pin_execution_paths
from artifactize.domain.tools.registry import AgentToolRegistry, RegistryError, ToolPorts
from artifactize.domain.tools.sessions import SessionPorts, ToolSessions
from artifactize.ports.callbacks import WorkspaceReloader
from artifactize.ports.clock import Clock
from artifactize.ports.coding_agents import CODING_AGENT_BACKENDS, CodingAgents
from artifactize.ports.documents import AgentDocument, ChildDocument, ProgramDocument
from artifactize.ports.model import (
    BackendUnavailable,
    Endpoint,
    ModelBackend,
    ModelBackends,
    ToolSpec,
)
from artifactize.ports.progress import AgentActivity
from artifactize.ports.statuses import ErrorCode, ExecutionStatus
from artifactize.ports.threads import WorkerThreads

T = TypeVar("T")


@dataclass(frozen=True)
class ReviewPorts:
    clock: Clock
    backends: ModelBackends
    tools: ToolPorts
    sessions: SessionPorts
    reload: WorkspaceReloader[Workspace]  # re-read the workspace for input revalidation
    scripts: FingerprintScripts | None = None  # None: fingerprint scripts are not supported
    coding_agents: CodingAgents | None = None  # None: claude-code/codex are not wired
    threads: WorkerThreads = field(kw_only=True)  # pinning, re-reading, rechecking


@dataclass
class ReviewOutcome:
    """How the review ended. ``result`` is set only for GREEN/RED.

    ``cwd``, ``argv`` and ``child`` are set by runtime reviews only: where and what ran (once
    prepared) and how the process ended (once it started); see docs/runtime-evals.md."""

    status: ExecutionStatus  # GREEN | RED | ERROR
    result: dict[str, Any] | None = None
    error: str | None = None
    error_code: ErrorCode | None = None
    execution_paths: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    trace: LoopTrace = field(default_factory=LoopTrace)
    cwd: str | None = None
    argv: tuple[str, ...] | None = None
    child: ChildDocument | None = None
    program: ProgramDocument | None = None  # runtime reviews: the program, once prepared
    agent: AgentDocument | None = None  # Agent reviews: endpoint, requested/reported model

    @classmethod
    def failed(
        cls, code: FailureCode, message: str, trace: LoopTrace | None = None
    ) -> ReviewOutcome:
        return cls(
            ExecutionStatus.ERROR, error=message, error_code=code, trace=trace or LoopTrace()
        )


class AgentReview:
    """Runs one Agent eval. Create, ``await run()``, read ``outcome``.

    When the caller cancels ``run()``, sessions are still cleaned up before the
    cancellation propagates, and ``cancelled_outcome()`` gives what to record."""

    def __init__(
        self,
        ports: ReviewPorts,
        workspace: Workspace,
        eval_ref: EvalRef,
        keys: KeyInputs,
        output_root: str | None,
    ) -> None:
        if not isinstance(eval_ref.eval.profile, AgentProfile):
            raise ValueError("an Agent review needs an Agent eval")
        self.ports = ports
        self.workspace = workspace
        self.eval_ref = eval_ref
        self.profile: AgentProfile = eval_ref.eval.profile
        self.keys = keys
        self.output_root = output_root
        self.qualified_id = eval_ref.qualified_id
        self.scope = eval_scope(workspace, self.qualified_id)
        self.pins: Mapping[str, Mapping[str, str]] = {}
        self.loop: AgentLoop | CodingAgentLoop | None = None
        self.prompt: AgentPrompt | None = None  # set once the conversation starts
        self.tool_specs: tuple[ToolSpec, ...] = ()
        self.endpoint: Endpoint | None = None  # set once the backend is opened
        self.activity: AgentActivity | None = None  # live progress: turns and tool calls

    @property
    def trace(self) -> LoopTrace:
        return self.loop.trace if self.loop is not None else LoopTrace()

    def cancelled_outcome(self) -> ReviewOutcome:
        outcome = ReviewOutcome.failed(FailureCode.CANCELLED, CANCELLED, self.trace)
        outcome.execution_paths = self.pins
        outcome.agent = self.agent_record()
        return outcome

    async def run(self) -> ReviewOutcome:
        outcome = await self._review()
        outcome.execution_paths = self.pins
        outcome.agent = self.agent_record()
        return outcome

    def agent_record(self) -> AgentDocument:
        """What the execution records of the model: the endpoint it went to (never the key)
        and the model requested and reported (a dated snapshot of an alias, say)."""
        endpoint = self.endpoint
        return {
            "backend": self.profile.backend,
            "baseUrl": endpoint.base_url if endpoint is not None else None,
            "endpointSource": endpoint.source if endpoint is not None else None,
            "requestedModel": self.profile.model,
            "reportedModel": self.trace.reported_model,
        }

    async def _review(self) -> ReviewOutcome:
        if self.profile.backend in CODING_AGENT_BACKENDS:
            return await self._review_by_coding_agent()
        try:
            self.pins = await self.ports.threads.run(
                pin_execution_paths, self.workspace, self.ports.tools.filesystem, self.scope
            )
            self.endpoint = self.ports.backends.endpoint(
                self.profile.backend, self.profile.base_url
            )
            backend = self.ports.backends.open(self.profile.backend, self.profile.base_url)
        except (PinningError, BackendUnavailable, RegistryError) as exc:
            return ReviewOutcome.failed(FailureCode.PREPARATION_FAILED, str(exc))
        try:
            result = await self._converse(backend)
        except AgentFailure as failure:
            return ReviewOutcome.failed(failure.code, failure.message, self.trace)
        finally:
            with anyio.CancelScope(shield=True):
                await backend.aclose()
        return await self._settle(result)

    async def _review_by_coding_agent(self) -> ReviewOutcome:
        """As ``_review``, with the coding agent's own loop in place of the API loop; its
        endpoint is whatever the agent's own settings say (recorded as the profile's)."""
        agents = self.ports.coding_agents
        if agents is None:
            message = f"The {self.profile.backend} backend is not available in this build."
            return ReviewOutcome.failed(FailureCode.AGENT_UNAVAILABLE, message)
        try:
            self.pins = await self.ports.threads.run(
                pin_execution_paths, self.workspace, self.ports.tools.filesystem, self.scope
            )
        except (PinningError, RegistryError) as exc:
            return ReviewOutcome.failed(FailureCode.PREPARATION_FAILED, str(exc))
        try:
            result = await self._converse_with(agents)
        except AgentFailure as failure:
            return ReviewOutcome.failed(failure.code, failure.message, self.trace)
        return await self._settle(result)

    async def _converse_with(self, agents: CodingAgents) -> dict[str, Any]:
        def coding_loop(call_tool: ToolCaller, validator: VerdictValidator) -> CodingAgentLoop:
            return CodingAgentLoop(
                agents,
                self.profile.backend,
                self.profile.base_url,
                self.profile.timeout_ms,
                call_tool,
                validator,
                self._settings(),
                activity=self.activity,
            )

        return await self._converse_in(coding_loop)

    def _settings(self) -> LoopSettings:
        return LoopSettings(
            self.profile.model,
            self.profile.reasoning,
            self.profile.max_tool_calls,
            self.profile.max_tokens,
        )

    async def _converse(self, backend: ModelBackend) -> dict[str, Any]:
        def api_loop(call_tool: ToolCaller, validator: VerdictValidator) -> AgentLoop:
            return AgentLoop(
                backend, call_tool, validator, self._settings(), activity=self.activity
            )

        return await self._converse_in(api_loop)

    async def _converse_in(
        self, make_loop: Callable[[ToolCaller, VerdictValidator], AgentLoop | CodingAgentLoop]
    ) -> dict[str, Any]:
        """The Agent loop (the API loop, or a coding agent's) under the deadline, then
        session cleanup on every ending."""
        registry = AgentToolRegistry.for_eval(self.workspace, self.qualified_id, self.ports.tools)
        sessions = registry.sessions(self.ports.sessions)
        bound = registry.with_sessions(sessions)
        definitions = registry.list()
        prompt = build_prompt(self.workspace, self.eval_ref, definitions, self.scope)
        tools = tuple(ToolSpec(d.name, d.description, d.input_schema) for d in definitions)
        self.prompt, self.tool_specs = prompt, tools
        validator = VerdictValidator(self.eval_ref.eval.pass_schema, self.eval_ref.eval.fail_schema)

        async def call_tool(name: str, arguments: Any) -> Any:
            return await bound.call(name, arguments, self.output_root)

        self.loop = make_loop(call_tool, validator)
        work = self.loop.run(prompt.instructions, prompt.user_text, tools)
        return await converse_then_close(work, self.profile.timeout_ms, sessions)

    async def _settle(self, result: dict[str, Any]) -> ReviewOutcome:
        """Input revalidation and the fingerprint recheck, after every session stopped."""
        trace = self.trace
        try:
            current = await self.ports.threads.run(self.ports.reload)
            changed = _definition_changed(self.workspace, current, self.qualified_id)
        except Exception:  # a workspace that no longer loads is a changed input
            changed = True
        if changed:
            return ReviewOutcome.failed(FailureCode.INPUT_CHANGED, DECLARATIONS_CHANGED, trace)
        if self.keys.key is not None:
            try:
                again = await self.ports.threads.run(
                    key_inputs,
                    current,
                    self.qualified_id,
                    self.ports.tools.filesystem,
                    self.ports.scripts,
                )
            except FingerprintError as exc:
                return ReviewOutcome.failed(FailureCode.FINGERPRINT_RECHECK_FAILED, str(exc), trace)
            if again.key != self.keys.key:
                return ReviewOutcome.failed(FailureCode.INPUT_CHANGED, INPUT_CHANGED, trace)
        return ReviewOutcome(ExecutionStatus(result["verdict"]), result=result, trace=trace)


async def converse_then_close(work: Awaitable[T], timeout_ms: int, sessions: ToolSessions) -> T:
    """``work`` (an Agent loop) under the review deadline, then, on every ending, the
    sessions' stop and cleanup, shielded from cancellation. Raises AgentFailure: the loop's
    own, TIMEOUT, or SESSION_CLEANUP_FAILED, which replaces any result."""
    result: T | None = None
    failure: AgentFailure | None = None
    try:
        with anyio.move_on_after(timeout_ms / 1000) as deadline:
            result = await work
        if deadline.cancelled_caught:
            failure = AgentFailure(FailureCode.TIMEOUT, TIMED_OUT)
    except AgentFailure as exc:
        failure = exc
    finally:
        with anyio.CancelScope(shield=True):
            problems = await sessions.close()
    if problems:
        raise AgentFailure(FailureCode.SESSION_CLEANUP_FAILED, "; ".join(problems))
    if failure is not None:
        raise failure
    assert result is not None
    return result


def _definition_changed(before: Workspace, after: Workspace, qualified_id: str) -> bool:
    """Whether the eval, or the Artifacts and tools it was reviewed with, changed."""
    try:
        found = after.find_eval(qualified_id)
    except LookupError:
        return True
    old = before.find_eval(qualified_id)
    if eval_def_hash(found.eval) != eval_def_hash(old.eval) or found.eval != old.eval:
        return True
    old_scope = eval_scope(before, qualified_id)
    if eval_scope(after, qualified_id) != old_scope:
        return True
    if scope_entries(after, old_scope) != scope_entries(before, old_scope):
        return True
    return any(
        after.artifact(name).declaration != before.artifact(name).declaration for name in old_scope
    )
