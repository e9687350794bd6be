"""Anthropic Messages API backend: one non-streaming ``POST {root}/v1/messages`` per turn.

Authenticates with ``x-api-key`` and ``anthropic-version: 2023-06-01`` (the wire format the
original tool speaks, and the one a fake or proxy expects). Thinking blocks come back signed
and are replayed verbatim through ``AssistantTurn.provider_items``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.llm.errors import UnsupportedReasoning, failure
from adapters.llm.turns import (
    Malformed,
    ProviderBackend,
    ReadTurn,
    compact_json,
    read_answer,
    tool_result_blocks,
)
from adapters.llm.usage import UsagePath, collect_usage
from ports.bounded_json import JsonRefused, read_json
from ports.model import (
    AssistantTurn,
    ConversationItem,
    FailureKind,
    FinishReason,
    ProviderFailure,
    ToolCall,
    ToolOutput,
    ToolSpec,
    TurnRequest,
    TurnResponse,
    UserText,
)

PROVIDER = "Anthropic"
ANTHROPIC_VERSION = "2023-06-01"
MAX_TOKENS_PER_TURN = 16384
"""Anthropic requires an output cap per request; this is it, not the review's token budget."""
ANTHROPIC_REASONING_EFFORTS = ("low", "medium", "high", "max")

USAGE_PATHS: tuple[UsagePath, ...] = (
    (("input_tokens",), "inputTokens"),
    (("output_tokens",), "outputTokens"),
    (("cache_read_input_tokens",), "cacheReadTokens"),
    (("cache_creation_input_tokens",), "cacheWriteTokens"),
    (("cache_creation", "ephemeral_1h_input_tokens"), "cacheWrite1hTokens"),
)

STOP_FINISH: Mapping[str, FinishReason] = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


# --- request ------------------------------------------------------------------------------


class _Unreplayable(Exception):
    """Internal: an assistant turn whose tool call arguments are not a JSON object."""


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image_block(mime_type: str, data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}}


def tool_result_content(content: tuple[Mapping[str, Any], ...]) -> list[dict[str, Any]]:
    """Tool result blocks as Anthropic content blocks, kept separate and in order."""
    return tool_result_blocks(content, _text_block, _image_block)


def _tool_input(call: ToolCall) -> dict[str, Any]:
    try:
        value = read_json(call.arguments)
    except JsonRefused:
        value = None
    if not isinstance(value, dict):
        raise _Unreplayable(f"the arguments of tool call {call.call_id!r} are not a JSON object.")
    return value


def assistant_content(turn: AssistantTurn) -> list[dict[str, Any]]:
    """The raw content blocks when we have them (signed thinking must go back verbatim),
    else text and ``tool_use`` blocks rebuilt from the provider-neutral turn."""
    if turn.provider_items:
        return [dict(block) for block in turn.provider_items]
    blocks: list[dict[str, Any]] = []
    if turn.text or not turn.tool_calls:
        blocks.append({"type": "text", "text": turn.text})
    for call in turn.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.call_id, "name": call.name, "input": _tool_input(call)}
        )
    return blocks


def messages(items: tuple[ConversationItem, ...]) -> list[dict[str, Any]]:
    """Conversation items as messages; consecutive tool outputs share one user message,
    because Anthropic expects every result of an assistant turn in the next user turn."""
    result: list[dict[str, Any]] = []
    pending_results: list[dict[str, Any]] = []

    def flush() -> None:
        if pending_results:
            result.append({"role": "user", "content": list(pending_results)})
            pending_results.clear()

    for item in items:
        if isinstance(item, ToolOutput):
            pending_results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": item.call_id,
                    "content": tool_result_content(item.content),
                    "is_error": item.is_error,
                }
            )
            continue
        flush()
        if isinstance(item, UserText):
            result.append({"role": "user", "content": [{"type": "text", "text": item.text}]})
        elif isinstance(item, AssistantTurn):
            result.append({"role": "assistant", "content": assistant_content(item)})
        else:  # pragma: no cover - the union is closed
            raise TypeError(f"Unknown conversation item: {type(item).__name__}.")
    flush()
    return result


def tool_definitions(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "input_schema": dict(tool.input_schema),
        }
        for tool in tools
    ]


def request_body(request: TurnRequest) -> dict[str, Any]:
    """The JSON body of one turn. Raises ``UnsupportedReasoning`` before anything is sent.

    ``tools`` and ``tool_choice`` are sent only together: Anthropic rejects a
    ``tool_choice`` without ``tools``. Note that Anthropic also rejects a history holding
    ``tool_use`` blocks when no tools are defined, so a repair turn after tool use should
    keep its tools with ``tool_choice="none"``."""
    if request.reasoning is not None and request.reasoning not in ANTHROPIC_REASONING_EFFORTS:
        raise UnsupportedReasoning("anthropic", request.reasoning, ANTHROPIC_REASONING_EFFORTS)
    body: dict[str, Any] = {"model": request.model, "max_tokens": MAX_TOKENS_PER_TURN}
    if request.instructions:
        body["system"] = request.instructions
    body["messages"] = messages(request.items)
    if request.tools:
        body["tools"] = tool_definitions(request.tools)
        body["tool_choice"] = {"type": request.tool_choice}
    if request.reasoning is not None:
        body["thinking"] = {"type": "adaptive"}
        body["output_config"] = {"effort": request.reasoning}
    return body


# --- response -----------------------------------------------------------------------------


def _read_content(content: list[Any]) -> tuple[str, list[ToolCall]]:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, block in enumerate(content):
        where = f"content[{index}]"
        if not isinstance(block, dict):
            raise Malformed(f"{where} is not an object.")
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise Malformed(f"{where} has no string 'text'.")
            texts.append(text)
        elif kind == "tool_use":
            call_id, name, tool_input = block.get("id"), block.get("name"), block.get("input")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise Malformed(f"{where} has no string 'id' and 'name'.")
            if not isinstance(tool_input, dict):
                raise Malformed(f"{where} has no 'input' object.")
            calls.append(ToolCall(call_id=call_id, name=name, arguments=compact_json(tool_input)))
    return "".join(texts), calls


def usage_of(raw: Any) -> dict[str, int]:
    """Reported counters; ``totalTokens`` is input + output only when both were reported.

    Anthropic reports no total. Its ``input_tokens`` excludes cache reads and writes, so the
    total counts fresh input and output only, which is what a token budget should weigh;
    cache counters stay visible under their own keys."""
    usage = collect_usage(raw, USAGE_PATHS)
    if "inputTokens" in usage and "outputTokens" in usage:
        usage["totalTokens"] = usage["inputTokens"] + usage["outputTokens"]
    return usage


def _read_turn(data: Mapping[str, Any], content: list[Any]) -> ReadTurn:
    text, calls = _read_content(content)
    stop_reason = data.get("stop_reason")
    stop_text = stop_reason if isinstance(stop_reason, str) else "none"
    finish = STOP_FINISH.get(stop_text, "other")
    detail = "" if finish in ("stop", "tool_calls") else stop_text
    return text, calls, finish, detail


# --- backend ------------------------------------------------------------------------------


class AnthropicMessagesBackend(ProviderBackend):
    """``ModelBackend`` for Anthropic (or a compatible server at ``base_url``, the root)."""

    name = "anthropic"
    provider = PROVIDER
    path = "/v1/messages"

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}

    def body_of(self, request: TurnRequest, secret: str) -> dict[str, Any]:
        problem: ProviderFailure | None = None
        body: dict[str, Any] = {}
        try:
            body = request_body(request)
        except _Unreplayable as error:
            problem = failure(
                FailureKind.PROVIDER_ERROR,
                f"Cannot send the conversation to {PROVIDER}: {error}",
                secret,
            )
        if problem is not None:
            raise problem
        return body

    def response_of(self, data: dict[str, Any], secret: str) -> TurnResponse:
        usage = usage_of(data.get("usage"))
        return read_answer(
            data, "content", _read_turn, provider=PROVIDER, secret=secret, usage=usage
        )
