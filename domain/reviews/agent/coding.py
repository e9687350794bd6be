"""An Agent review run by a coding agent (``backend = "claude-code"`` or ``"codex"``).

The agent runs its own loop; artifactize keeps every rule the API loop keeps:

- the tools are the eval's registry and nothing else: every call comes back here
  (``AgentHost.call_tool``), is counted against ``max_tool_calls`` and recorded like a
  call of the API loop;
- usage is counted against ``max_tokens`` as the agent reports it, and the model it reports
  is checked against the one requested (an alias may answer with its dated snapshot);
- a budget that runs out, or a model that does not match, cancels the agent's run (its
  process group is stopped by the adapter) and ends the review ERROR with the API loop's
  code and message;
- the final text is checked by the same validator, with the same one format repair, sent
  by resuming the agent's own session; while repairing, a tool call ends the review.

Each agent run is one attempt (its own usage totals, empty when the agent reported none),
so ``usageState`` says what was and was not reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from artifactize.domain.reviews.agent.loop import (
    BUDGET_TOKENS,
    BUDGET_TOOL_CALLS,
    MODEL_MISMATCH,
    TOOLS_WHILE_REPAIRING,
    Attempt,
    LoopSettings,
    LoopTrace,
    ToolCaller,
    ToolCallRecord,
    follow_up_answer,
    serves_requested_model,
    verdict_with_one_repair,
)
from artifactize.domain.reviews.failures import AgentFailure, FailureCode
from artifactize.domain.reviews.verdicts import (
    VerdictValidator,
)
from artifactize.domain.text import compact_json
from artifactize.ports.coding_agents import (
    AgentAnswer,
    AgentProblem,
    AgentTask,
    CodingAgentError,
    CodingAgents,
    ToolAnswer,
)
from artifactize.ports.model import (
    AssistantTurn,
    ConversationItem,
    ToolCall,
    ToolOutput,
    ToolSpec,
    usage_total,
)
from artifactize.ports.progress import AgentActivity

AGENT_SESSION_ITEM = "agentSession"
"""The key of the provider item that keeps the agent's own session ID with its answer, so a
follow-up can resume it."""


def agent_session_of(items: tuple[ConversationItem, ...]) -> str | None:
    """The agent's session ID saved with the last answer of a conversation, if any."""
    for item in reversed(items):
        if isinstance(item, AssistantTurn):
            for raw in item.provider_items:
                session = raw.get(AGENT_SESSION_ITEM)
                if isinstance(session, str):
                    return session
    return None


class _Host:
    """The domain's side of one agent run: tools, budgets and model identity."""

    def __init__(self, loop: CodingAgentLoop, repairing: bool) -> None:
        self.loop = loop
        self.repairing = repairing
        self.scope = anyio.CancelScope()
        self.failure: AgentFailure | None = None
        self.usage_seen: dict[str, int] = {}

    def fail(self, code: FailureCode, message: str) -> None:
        if self.failure is None:
            self.failure = AgentFailure(code, message)
        self.scope.cancel()

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolAnswer:
        loop = self.loop
        trace = loop.trace
        if self.repairing:
            self.fail(FailureCode.INVALID_RESULT, TOOLS_WHILE_REPAIRING)
            return ToolAnswer(({"type": "text", "text": TOOLS_WHILE_REPAIRING},), True)
        budget = loop.settings.max_tool_calls
        if budget is not None and len(trace.tool_calls) >= budget:
            self.fail(FailureCode.PROVIDER_BUDGET_EXCEEDED, BUDGET_TOOL_CALLS)
            return ToolAnswer(({"type": "text", "text": BUDGET_TOOL_CALLS},), True)
        order = len(trace.tool_calls) + 1
        record = ToolCallRecord(order, name, dict(arguments))
        trace.tool_calls.append(record)
        call_id = f"call_{order}"
        trace.items.append(
            AssistantTurn("", (ToolCall(call_id, name, compact_json(dict(arguments))),))
        )
        if loop.activity is not None:
            loop.activity.tool_started(name, order)
        try:
            result = await loop.call_tool(name, dict(arguments))
        finally:
            if loop.activity is not None:
                loop.activity.tool_finished(name)
        record.result = result.audit_summary()
        record.is_error = result.is_error
        record.error = result.error_text
        trace.items.append(ToolOutput(call_id, result.content, result.is_error))
        return ToolAnswer(result.content, result.is_error)

    def model_reported(self, model: str) -> None:
        trace = self.loop.trace
        trace.reported_model = model
        requested = self.loop.settings.model
        if not serves_requested_model(requested, model):
            self.fail(
                FailureCode.PROVIDER_ERROR,
                MODEL_MISMATCH.format(requested=requested, reported=model),
            )

    def usage(self, usage: Mapping[str, int]) -> None:
        for name, value in usage.items():
            self.usage_seen[name] = self.usage_seen.get(name, 0) + int(value)
        self.loop.trace.tokens_used += usage_total(usage)
        budget = self.loop.settings.max_tokens
        if budget is not None and self.loop.trace.tokens_used > budget:
            self.fail(FailureCode.PROVIDER_BUDGET_EXCEEDED, BUDGET_TOKENS)


class CodingAgentLoop:
    """The API loop's rules around a coding agent's own loop; ``trace`` as the API loop's."""

    def __init__(
        self,
        agents: CodingAgents,
        backend: str,
        base_url: str | None,
        timeout_ms: int,
        call_tool: ToolCaller,
        validator: VerdictValidator,
        settings: LoopSettings,
        activity: AgentActivity | None = None,
    ) -> None:
        self.agents = agents
        self.backend = backend
        self.base_url = base_url
        self.timeout_ms = timeout_ms
        self.call_tool = call_tool
        self.validator = validator
        self.settings = settings
        self.activity = activity
        self.trace = LoopTrace()
        self._runs = 0

    async def run(
        self, instructions: str, user_text: str, tools: tuple[ToolSpec, ...]
    ) -> dict[str, Any]:
        """The validated verdict object; raises AgentFailure with the request's error code."""
        session: str | None = None  # the repair resumes the first answer's session

        async def ask(prompt: str, repairing: bool) -> str:
            nonlocal session
            answer = await self._agent(instructions, prompt, tools, session, repairing=repairing)
            session = answer.session_id
            return answer.text

        return await verdict_with_one_repair(self.trace, user_text, self.validator, ask)

    async def answer(
        self,
        instructions: str,
        history: tuple[ConversationItem, ...],
        message: str,
        tools: tuple[ToolSpec, ...],
    ) -> str:
        """A follow-up, resuming the agent's own session when the review saved one."""
        self.trace.follow_up(history, message)
        resume = agent_session_of(history)
        answer = await self._agent(instructions, message, tools, resume, repairing=False)
        return follow_up_answer(answer.text)

    async def _agent(
        self,
        instructions: str,
        prompt: str,
        tools: tuple[ToolSpec, ...],
        resume: str | None,
        *,
        repairing: bool,
    ) -> AgentAnswer:
        self._runs += 1
        if self.activity is not None:
            self.activity.turn_started(self._runs)
        task = AgentTask(
            backend=self.backend,
            model=self.settings.model,
            instructions=instructions,
            prompt=prompt,
            tools=tools,
            timeout_ms=self.timeout_ms,
            base_url=self.base_url,
            reasoning=self.settings.reasoning,
            resume=resume,
        )
        host = _Host(self, repairing)
        answer: AgentAnswer | None = None
        error: CodingAgentError | None = None
        try:
            with host.scope:
                answer = await self.agents.run(task, host)
        except CodingAgentError as exc:
            error = exc
        reported = dict(answer.usage) if answer is not None and answer.usage else host.usage_seen
        attempt_error = host.failure.message if host.failure is not None else None
        if error is not None and attempt_error is None:
            attempt_error = error.message
        self.trace.attempts.append(Attempt(self._runs, 1, reported, attempt_error))
        if host.failure is not None:
            raise host.failure
        if error is not None:
            code = (
                FailureCode.AGENT_UNAVAILABLE
                if error.problem is AgentProblem.UNAVAILABLE
                else FailureCode.AGENT_ERROR
            )
            raise AgentFailure(code, error.message)
        assert answer is not None
        if answer.reported_model is not None:
            host.model_reported(answer.reported_model)
            if host.failure is not None:
                raise host.failure
        provider_items = (
            ({AGENT_SESSION_ITEM: answer.session_id},) if answer.session_id is not None else ()
        )
        self.trace.items.append(AssistantTurn(answer.text, (), provider_items))
        return answer
