"""The Agent loop: turns with a model backend, tool calls through the registry, a verdict.

The loop owns everything a provider must not decide: the deadline, the token and tool-call
budgets, retries, the one format repair, and the validation of the final verdict. Tools run
one at a time, in the order the model asked for them. The caller bounds the whole loop by
the review's deadline (an anyio cancel scope); the loop itself never sleeps past it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from artifactize.domain.reviews.failures import AgentFailure, FailureCode
from artifactize.domain.reviews.verdicts import (
    InvalidVerdict,
    VerdictValidator,
    parse_final_text,
    repair_message,
)
from artifactize.domain.tools.results import ToolResult
from artifactize.kernel.bounded_json import JsonRefused, read_json
from artifactize.ports.clock import Sleeper
from artifactize.ports.documents import AttemptDocument, ToolCallDocument
from artifactize.ports.model import (
    AssistantTurn,
    ConversationItem,
    FailureKind,
    ModelBackend,
    ProviderFailure,
    ToolOutput,
    ToolSpec,
    TurnRequest,
    TurnResponse,
    UserText,
    usage_total,
)
from artifactize.ports.progress import AgentActivity

TURN_ATTEMPTS_MAX = 3  # one try and two retries
RETRY_BACKOFF_INITIAL_SECONDS = 0.25  # then doubled per retry: 0.25 s, 0.5 s
RETRY_BACKOFF_MAX_SECONDS = 8.0
RETRY_WAIT_MAX_SECONDS = 60.0
"""A provider asking for a longer wait (``retry-after: 3600``) fails the turn at once: the
review would only time out waiting."""
NO_RETRY_WORDS = (
    "quota",
    "billing",
    "credit",
    "authentication",
    "unauthorized",
    "permission",
    "usage limit",
)
BAD_ARGUMENTS = "Tool arguments must be one JSON object."

BUDGET_TOKENS = "PROVIDER_BUDGET_EXCEEDED: review exceeded its maxTokens budget."
BUDGET_TOOL_CALLS = "PROVIDER_BUDGET_EXCEEDED: review exceeded its maxToolCalls budget."
REPEATED_CALL_ID = "Provider repeated a tool-call ID; no further tools were executed."
NO_CALLABLE_TOOL = "Provider ended with tool calls but supplied no callable tool."
EMPTY_ANSWER = "The Agent gave an empty answer."
TOOLS_WHILE_REPAIRING = "Invalid final Agent result after one format repair: tools are disabled."

MODEL_MISMATCH = (
    "Provider model mismatch: requested {requested}, received {reported}. "
    'Declare the exact model ID the provider serves (model = "{reported}") '
    "if that model is the one you want."
)
SNAPSHOT_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})")
"""A dated snapshot name: the alias with ``-YYYY-MM-DD`` or ``-YYYYMMDD`` appended."""

ToolCaller = Callable[[str, Any], Awaitable[ToolResult]]


@dataclass(frozen=True)
class LoopSettings:
    model: str
    reasoning: str | None
    max_tool_calls: int | None
    max_tokens: int | None


@dataclass
class Attempt:
    """One provider request: ``{turn, attempt, usage, error?}`` as saved with the request."""

    turn: int
    attempt: int
    usage: Mapping[str, int]
    error: str | None = None

    def to_json(self) -> AttemptDocument:
        data: AttemptDocument = {
            "turn": self.turn,
            "attempt": self.attempt,
            "usage": dict(self.usage),
        }
        if self.error is not None:
            data["error"] = self.error
        return data


@dataclass
class ToolCallRecord:
    """The audit of one tool call; ``error`` stays set until the call completes."""

    order: int
    name: str
    arguments: Any
    result: str = ""
    is_error: bool = True
    error: str | None = "Tool call did not complete."

    def to_json(self) -> ToolCallDocument:
        return {
            "order": self.order,
            "name": self.name,
            "arguments": self.arguments,
            "result": self.result,
            "isError": self.is_error,
            "error": self.error,
        }


@dataclass
class LoopTrace:
    """What the loop did, kept even when it fails: attempts, tool calls and the conversation."""

    attempts: list[Attempt] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    items: list[ConversationItem] = field(default_factory=list)
    tokens_used: int = 0
    reported_model: str | None = None  # the model the provider said served the last turn

    def follow_up(self, history: tuple[ConversationItem, ...], message: str) -> None:
        """A follow-up's start: the saved conversation, then the question."""
        self.items.extend(history)
        self.items.append(UserText(message))


class AgentLoop:
    def __init__(
        self,
        backend: ModelBackend,
        call_tool: ToolCaller,
        validator: VerdictValidator,
        settings: LoopSettings,
        sleep: Sleeper = anyio.sleep,
        activity: AgentActivity | None = None,
    ) -> None:
        self.activity = activity  # told each turn and tool call, for live progress
        self.backend = backend
        self.call_tool = call_tool
        self.validator = validator
        self.settings = settings
        self.sleep = sleep
        self.trace = LoopTrace()
        self._call_ids: set[str] = set()
        self._turns = 0

    async def run(
        self, instructions: str, user_text: str, tools: tuple[ToolSpec, ...]
    ) -> dict[str, Any]:
        """The validated verdict object; raises AgentFailure with the request's error code."""

        async def ask(_prompt: str, repairing: bool) -> str:  # the prompt is in the trace
            return await self._until_text(instructions, tools, repairing=repairing)

        return await verdict_with_one_repair(self.trace, user_text, self.validator, ask)

    async def answer(
        self,
        instructions: str,
        history: tuple[ConversationItem, ...],
        message: str,
        tools: tuple[ToolSpec, ...],
    ) -> str:
        """A follow-up: ``message`` after a saved conversation, answered in free text.

        Tools stay available; the answer is not a verdict and is not validated. Call IDs of
        the earlier conversation still count as used."""
        for item in history:
            if isinstance(item, AssistantTurn):
                self._call_ids.update(call.call_id for call in item.tool_calls)
        self.trace.follow_up(history, message)
        return follow_up_answer(await self._until_text(instructions, tools, repairing=False))

    async def _until_text(
        self, instructions: str, tools: tuple[ToolSpec, ...], *, repairing: bool
    ) -> str:
        """Turns, running the tools the model calls, until it answers without a tool call.

        The repair turn keeps the tool list (a provider may refuse a conversation with tool
        calls but no tools) and forbids calling them."""
        while True:
            self._turns += 1
            request = TurnRequest(
                model=self.settings.model,
                instructions=instructions,
                items=tuple(self.trace.items),
                tools=tools,
                tool_choice="none" if repairing else "auto",
                reasoning=self.settings.reasoning,
            )
            response = await self._turn(self._turns, request)
            if not response.turn.tool_calls:
                if response.finish != "stop":
                    self._incomplete(response)
                self.trace.items.append(response.turn)
                return response.turn.text
            if repairing:
                raise AgentFailure(FailureCode.INVALID_RESULT, TOOLS_WHILE_REPAIRING)
            if response.finish not in ("tool_calls", "stop"):
                self._incomplete(response)
            self.trace.items.append(response.turn)
            await self._run_calls(response)

    def _incomplete(self, response: TurnResponse) -> None:
        if response.finish == "tool_calls":
            raise AgentFailure(FailureCode.PROVIDER_ERROR, NO_CALLABLE_TOOL)
        detail = response.finish_detail or response.finish
        raise AgentFailure(
            FailureCode.PROVIDER_ERROR, f"Provider response was incomplete: {detail}."
        )

    async def _turn(self, turn: int, request: TurnRequest) -> TurnResponse:
        if self.activity is not None:
            self.activity.turn_started(turn)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self.backend.turn(request)
            except ProviderFailure as failure:
                self.trace.attempts.append(Attempt(turn, attempt, failure.usage, failure.message))
                self._count_tokens(failure.usage)
                wait = _backoff(failure, attempt)
                if (
                    not _retryable(failure)
                    or attempt >= TURN_ATTEMPTS_MAX
                    or wait > RETRY_WAIT_MAX_SECONDS
                    or wait > _time_left()
                ):
                    raise AgentFailure(FailureCode(failure.kind.value), failure.message) from None
                await self.sleep(wait)
                continue
            self.trace.attempts.append(Attempt(turn, attempt, response.usage))
            self._count_tokens(response.usage)
            self.trace.reported_model = response.model
            if not serves_requested_model(self.settings.model, response.model):
                raise AgentFailure(
                    FailureCode.PROVIDER_ERROR,
                    MODEL_MISMATCH.format(requested=self.settings.model, reported=response.model),
                )
            return response

    def _count_tokens(self, usage: Mapping[str, int]) -> None:
        self.trace.tokens_used += usage_total(usage)
        budget = self.settings.max_tokens
        if budget is not None and self.trace.tokens_used > budget:
            raise AgentFailure(FailureCode.PROVIDER_BUDGET_EXCEEDED, BUDGET_TOKENS)

    async def _run_calls(self, response: TurnResponse) -> None:
        for call in response.turn.tool_calls:
            if call.call_id in self._call_ids:
                raise AgentFailure(FailureCode.PROVIDER_ERROR, REPEATED_CALL_ID)
            self._call_ids.add(call.call_id)
            budget = self.settings.max_tool_calls
            if budget is not None and len(self.trace.tool_calls) >= budget:
                raise AgentFailure(FailureCode.PROVIDER_BUDGET_EXCEEDED, BUDGET_TOOL_CALLS)
            arguments = _parse_arguments(call.arguments)
            record = ToolCallRecord(len(self.trace.tool_calls) + 1, call.name, arguments)
            self.trace.tool_calls.append(record)
            if arguments is _INVALID:
                record.arguments = call.arguments
                result = ToolResult.error(BAD_ARGUMENTS)
            else:
                if self.activity is not None:
                    self.activity.tool_started(call.name, len(self.trace.tool_calls))
                try:
                    result = await self.call_tool(call.name, arguments)
                finally:
                    if self.activity is not None:
                        self.activity.tool_finished(call.name)
            record.result = result.audit_summary()
            record.is_error = result.is_error
            record.error = result.error_text
            self.trace.items.append(ToolOutput(call.call_id, result.content, result.is_error))


def serves_requested_model(requested: str, reported: str) -> bool:
    """Whether ``reported`` is the model asked for: the same ID, or a dated snapshot of it.

    Providers answer an alias with the snapshot that served it (``gpt-5.1`` →
    ``gpt-5.1-2025-11-13``, ``claude-sonnet-4-5`` → ``claude-sonnet-4-5-20250929``); any
    other name is a different model and must be declared as such."""
    if reported == requested:
        return True
    suffix = reported.removeprefix(requested)
    return suffix != reported and SNAPSHOT_SUFFIX.fullmatch(suffix) is not None


_INVALID: Any = object()


def _parse_arguments(text: str) -> Any:
    try:
        value = read_json(text) if text.strip() else {}
    except JsonRefused:
        return _INVALID
    return value if isinstance(value, dict) else _INVALID


def _retryable(failure: ProviderFailure) -> bool:
    """Never once output arrived; else the provider's ``x-should-retry`` decides when it
    said; else transient failures and rate limits, unless their words say quota or auth."""
    if failure.streamed or usage_total(failure.usage) > 0:
        return False
    if failure.should_retry is not None:
        return failure.should_retry
    if failure.kind not in (FailureKind.RATE_LIMIT, FailureKind.TRANSIENT):
        return False
    lowered = failure.message.lower()
    return not any(word in lowered for word in NO_RETRY_WORDS)


def _backoff(failure: ProviderFailure, attempt: int) -> float:
    """The provider's wait when it gave one, else exponential backoff with the adapter's
    jitter (as the SDKs: the factor is drawn in (0.75, 1])."""
    if failure.retry_after is not None and failure.retry_after >= 0:
        return failure.retry_after
    base = min(RETRY_BACKOFF_INITIAL_SECONDS * 2.0 ** (attempt - 1), RETRY_BACKOFF_MAX_SECONDS)
    return base * failure.backoff_jitter


def _time_left() -> float:
    """Seconds until the enclosing deadline (the review's ``timeout_ms``), inf without one."""
    return float(anyio.current_effective_deadline() - anyio.current_time())


async def verdict_with_one_repair(
    trace: LoopTrace,
    user_text: str,
    validator: VerdictValidator,
    ask: Callable[[str, bool], Awaitable[str]],
) -> dict[str, Any]:
    """The validated verdict of the answer to ``user_text``; when that is no valid verdict,
    of the answer to one format repair (``ask(prompt, repairing)`` answers each; the API
    loop and the coding agents alike)."""
    trace.items.append(UserText(user_text))
    text = await ask(user_text, False)
    try:
        return parse_final_text(text, validator)
    except InvalidVerdict as exc:
        message = repair_message(exc)
    trace.items.append(UserText(message))
    return repaired_verdict(await ask(message, True), validator)


def follow_up_answer(text: str) -> str:
    """A follow-up's answer: free text, not validated, but never empty."""
    if not text.strip():
        raise AgentFailure(FailureCode.INVALID_RESULT, EMPTY_ANSWER)
    return text


def repaired_verdict(text: str, validator: VerdictValidator) -> dict[str, Any]:
    """The verdict of the answer to the one format repair; a second invalid answer ends the
    review INVALID_RESULT (the API loop and the coding agents alike)."""
    try:
        return parse_final_text(text, validator)
    except InvalidVerdict as exc:
        raise AgentFailure(
            FailureCode.INVALID_RESULT,
            f"Invalid final Agent result after one format repair: {exc.message}.",
        ) from None
