"""OpenAI Responses API backend: one non-streaming ``POST {base}/responses`` per turn.

Nothing is stored on OpenAI's side (``store: false``), so every turn resends the whole
conversation; reasoning items come back with their encrypted content and are replayed
verbatim through ``AssistantTurn.provider_items``. Parallel tool calls are disabled because
the Agent loop runs tools one at a time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx2

from adapters.provider_errors import UnsupportedReasoning, malformed
from adapters.provider_http import post_json
from adapters.provider_usage import UsagePath, collect_usage
from ports.model import (
    AssistantTurn,
    ConversationItem,
    FinishReason,
    ToolCall,
    ToolOutput,
    ToolSpec,
    TurnRequest,
    TurnResponse,
    UserText,
)

PROVIDER = "OpenAI"
OPENAI_REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

USAGE_PATHS: tuple[UsagePath, ...] = (
    (("input_tokens",), "inputTokens"),
    (("output_tokens",), "outputTokens"),
    (("total_tokens",), "totalTokens"),
    (("input_tokens_details", "cached_tokens"), "cacheReadTokens"),
    (("output_tokens_details", "reasoning_tokens"), "reasoningTokens"),
)

# incomplete_details.reason -> finish reason; any other reason is "other".
INCOMPLETE_FINISH: Mapping[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- request ------------------------------------------------------------------------------


def tool_output_parts(content: tuple[Mapping[str, Any], ...]) -> list[dict[str, Any]]:
    """Tool result blocks as Responses input parts, kept separate and in order."""
    parts: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "input_text", "text": block["text"]})
        elif kind == "json":
            parts.append({"type": "input_text", "text": compact_json(block["data"])})
        elif kind == "image":
            url = f"data:{block['mimeType']};base64,{block['data']}"
            parts.append({"type": "input_image", "image_url": url})
        else:
            raise ValueError(f"Unsupported tool output block type: {kind!r}.")
    return parts


def assistant_items(turn: AssistantTurn) -> list[dict[str, Any]]:
    """The raw output items when we have them (reasoning must go back verbatim), else a
    message and function calls rebuilt from the provider-neutral turn."""
    if turn.provider_items:
        return [dict(item) for item in turn.provider_items]
    items: list[dict[str, Any]] = []
    if turn.text:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text}],
            }
        )
    for call in turn.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    return items


def input_items(items: tuple[ConversationItem, ...]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, UserText):
            result.append({"role": "user", "content": [{"type": "input_text", "text": item.text}]})
        elif isinstance(item, AssistantTurn):
            result.extend(assistant_items(item))
        elif isinstance(item, ToolOutput):
            # An error result is marked only by its text: Responses has no error flag.
            result.append(
                {
                    "type": "function_call_output",
                    "call_id": item.call_id,
                    "output": tool_output_parts(item.content),
                }
            )
        else:  # pragma: no cover - the union is closed
            raise TypeError(f"Unknown conversation item: {type(item).__name__}.")
    return result


def tool_definitions(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.input_schema),
            "strict": False,
        }
        for tool in tools
    ]


def request_body(request: TurnRequest) -> dict[str, Any]:
    """The JSON body of one turn. Raises ``UnsupportedReasoning`` before anything is sent.

    ``tools`` and ``tool_choice`` are sent only together: with no tools there is nothing to
    choose, and some provider versions reject a ``tool_choice`` without ``tools``."""
    if request.reasoning is not None and request.reasoning not in OPENAI_REASONING_EFFORTS:
        raise UnsupportedReasoning("openai", request.reasoning, OPENAI_REASONING_EFFORTS)
    body: dict[str, Any] = {"model": request.model}
    if request.instructions:
        body["instructions"] = request.instructions
    body["input"] = input_items(request.items)
    if request.tools:
        body["tools"] = tool_definitions(request.tools)
        body["tool_choice"] = request.tool_choice
    body["store"] = False
    body["parallel_tool_calls"] = False
    body["include"] = ["reasoning.encrypted_content"]
    if request.reasoning is not None:
        body["reasoning"] = {"effort": request.reasoning}
    return body


# --- response -----------------------------------------------------------------------------


class _Malformed(Exception):
    """Internal: the detail of an unreadable response, turned into a ProviderFailure."""


def _string(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise _Malformed(f"{where} has no string {key!r}.")
    return value


def _read_output(output: list[Any]) -> tuple[str, str, list[ToolCall]]:
    """(text, refusal, tool calls) of the output items; unknown item types are skipped."""
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCall] = []
    for index, item in enumerate(output):
        where = f"output[{index}]"
        if not isinstance(item, dict):
            raise _Malformed(f"{where} is not an object.")
        kind = item.get("type")
        if kind == "message":
            content = item.get("content")
            if not isinstance(content, list):
                raise _Malformed(f"{where} has no content list.")
            for part in content:
                if not isinstance(part, dict):
                    raise _Malformed(f"{where} has a content part that is not an object.")
                if part.get("type") == "output_text":
                    texts.append(_string(part, "text", where))
                elif part.get("type") == "refusal":
                    refusals.append(_string(part, "refusal", where))
        elif kind == "function_call":
            calls.append(
                ToolCall(
                    call_id=_string(item, "call_id", where),
                    name=_string(item, "name", where),
                    arguments=_string(item, "arguments", where),
                )
            )
    return "".join(texts), " ".join(refusals), calls


def _finish(data: Mapping[str, Any], refusal: str, has_calls: bool) -> tuple[FinishReason, str]:
    """An incomplete answer wins over its tool calls: their arguments may be cut short."""
    status = data.get("status")
    if status == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        reason_text = reason if isinstance(reason, str) else "unknown"
        return INCOMPLETE_FINISH.get(reason_text, "other"), reason_text
    if has_calls:
        return "tool_calls", ""
    if status == "completed":
        if refusal:
            return "content_filter", f"refusal: {refusal}"
        return "stop", ""
    error = data.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    detail = f"status {status}" if isinstance(status, str) else "no status"
    return "other", f"{detail}: {message}" if isinstance(message, str) else detail


def parse_response(data: dict[str, Any], secret: str) -> TurnResponse:
    usage = collect_usage(data.get("usage"), USAGE_PATHS)
    try:
        model = data.get("model")
        if not isinstance(model, str):
            raise _Malformed("it has no string 'model'.")
        output = data.get("output")
        if not isinstance(output, list):
            raise _Malformed("it has no 'output' list.")
        text, refusal, calls = _read_output(output)
    except _Malformed as error:
        raise malformed(PROVIDER, str(error), secret, usage) from None  # our own detail
    finish, detail = _finish(data, refusal, bool(calls))
    turn = AssistantTurn(text=text, tool_calls=tuple(calls), provider_items=tuple(output))
    return TurnResponse(model=model, finish=finish, turn=turn, usage=usage, finish_detail=detail)


# --- backend ------------------------------------------------------------------------------


class OpenAIResponsesBackend:
    """``ModelBackend`` for OpenAI (or a compatible server at ``base_url``, the ``…/v1``)."""

    name: str = "openai"

    def __init__(self, api_key: str, base_url: str, client: httpx2.AsyncClient) -> None:
        self._api_key = api_key
        self._url = base_url.rstrip("/") + "/responses"
        self._client = client

    def __repr__(self) -> str:  # never the key
        return f"OpenAIResponsesBackend(url={self._url!r})"

    async def turn(self, request: TurnRequest) -> TurnResponse:
        body = request_body(request)
        data = await post_json(
            self._client,
            self._url,
            {"authorization": f"Bearer {self._api_key}"},
            body,
            provider=PROVIDER,
            secret=self._api_key,
        )
        return parse_response(data, self._api_key)

    async def aclose(self) -> None:
        await self._client.aclose()
