"""OpenAI Responses API backend: one streamed ``POST {base}/responses`` per turn.

Nothing is stored on OpenAI's side (``store: false``), so every turn resends the whole
conversation, and nothing may point at a stored item: messages and function calls are
replayed without their server item IDs, reasoning items as the API requires them (their
``id`` with their ``encrypted_content``). Parallel tool calls are disabled because the
Agent loop runs tools one at a time. The stream's final event (``response.completed`` or
``response.incomplete``) carries the whole response, usage included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.adapters.llm.errors import UnsupportedReasoning
from artifactize.adapters.llm.http import IncompleteStream
from artifactize.adapters.llm.turns import (
    Malformed,
    ProviderBackend,
    ReadTurn,
    read_answer,
    stream_error,
    tool_result_blocks,
)
from artifactize.adapters.llm.usage import UsagePath, collect_usage
from artifactize.ports.model import (
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
    (("input_tokens_details", "cache_write_tokens"), "cacheWriteTokens"),
    (("output_tokens_details", "reasoning_tokens"), "reasoningTokens"),
)

# incomplete_details.reason -> finish reason; any other reason is "other".
INCOMPLETE_FINISH: Mapping[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


# --- request ------------------------------------------------------------------------------


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "input_text", "text": text}


def _image_part(mime_type: str, data: str) -> dict[str, Any]:
    return {"type": "input_image", "image_url": f"data:{mime_type};base64,{data}"}


def tool_output_parts(content: tuple[Mapping[str, Any], ...]) -> list[dict[str, Any]]:
    """Tool result blocks as Responses input parts, kept separate and in order."""
    return tool_result_blocks(content, _text_part, _image_part)


REASONING_REPLAY_KEYS = ("type", "id", "summary", "encrypted_content")
"""What a reasoning item keeps on replay: under ``store: false`` the API finds it by its
encrypted content, and its type requires the ``id`` and ``summary``."""


def _assistant_message(text: str) -> dict[str, Any]:
    """An assistant message as input: no item ID, so nothing refers to a stored item."""
    return {"type": "message", "role": "assistant", "content": text}


def _function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def _replay_item(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """One output item as the next request may send it under ``store: false``."""
    kind = item.get("type")
    if kind == "reasoning":
        return {key: item[key] for key in REASONING_REPLAY_KEYS if key in item}
    if kind == "message":
        parts = item.get("content")
        texts = [
            str(part.get("text") if part.get("type") == "output_text" else part.get("refusal"))
            for part in (parts if isinstance(parts, list) else [])
            if isinstance(part, dict) and part.get("type") in ("output_text", "refusal")
        ]
        return _assistant_message("".join(texts)) if texts else None
    if kind == "function_call":
        return _function_call(
            str(item.get("call_id")), str(item.get("name")), str(item.get("arguments"))
        )
    return None  # an item type we neither read nor can replay without its stored ID


def assistant_items(turn: AssistantTurn) -> list[dict[str, Any]]:
    """The output items replayed without server item IDs (reasoning with its ID and
    encrypted content), else a message and function calls rebuilt from the
    provider-neutral turn."""
    if turn.provider_items:
        replayed = [_replay_item(item) for item in turn.provider_items]
        return [item for item in replayed if item is not None]
    items: list[dict[str, Any]] = []
    if turn.text:
        items.append(_assistant_message(turn.text))
    for call in turn.tool_calls:
        items.append(_function_call(call.call_id, call.name, call.arguments))
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
    body["stream"] = True
    body["parallel_tool_calls"] = False
    body["include"] = ["reasoning.encrypted_content"]
    if request.reasoning is not None:
        body["reasoning"] = {"effort": request.reasoning}
    return body


# --- response -----------------------------------------------------------------------------


def _string(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise Malformed(f"{where} has no string {key!r}.")
    return value


def _read_output(output: list[Any]) -> tuple[str, str, list[ToolCall]]:
    """(text, refusal, tool calls) of the output items; unknown item types are skipped."""
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCall] = []
    for index, item in enumerate(output):
        where = f"output[{index}]"
        if not isinstance(item, dict):
            raise Malformed(f"{where} is not an object.")
        kind = item.get("type")
        if kind == "message":
            content = item.get("content")
            if not isinstance(content, list):
                raise Malformed(f"{where} has no content list.")
            for part in content:
                if not isinstance(part, dict):
                    raise Malformed(f"{where} has a content part that is not an object.")
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


def _read_turn(data: Mapping[str, Any], output: list[Any]) -> ReadTurn:
    text, refusal, calls = _read_output(output)
    finish, detail = _finish(data, refusal, bool(calls))
    return text, calls, finish, detail


# --- backend ------------------------------------------------------------------------------


FINAL_EVENTS = ("response.completed", "response.incomplete")
FAILED_EVENT = "response.failed"
QUIET_EVENTS = ("response.created", "response.in_progress", "response.queued")
"""Events before any output: a failure after them can still be retried."""


class ResponsesStream:
    """Assembles a Responses stream: the final event carries the whole response."""

    def __init__(self, secret: str) -> None:
        self._secret = secret
        self._final: dict[str, Any] | None = None
        self.started = False

    def feed(self, event: str, data: Any) -> None:
        kind = data.get("type", event) if isinstance(data, dict) else event
        if kind == "error":
            raise stream_error(PROVIDER, data, self._secret, started=self.started)
        response = data.get("response") if isinstance(data, dict) else None
        if kind == FAILED_EVENT and isinstance(response, dict):
            error = response.get("error")
            if isinstance(error, dict) and error.get("code"):  # classified by its code
                raise stream_error(PROVIDER, error, self._secret, started=self.started)
            self._final = response  # read as a failed response: "status failed"
            return
        if kind not in QUIET_EVENTS:
            self.started = True
        if kind in FINAL_EVENTS and isinstance(response, dict):
            self._final = response

    def finish(self) -> dict[str, Any]:
        if self._final is None:
            raise IncompleteStream(f"no {' or '.join(FINAL_EVENTS)} event")
        return self._final


class OpenAIResponsesBackend(ProviderBackend):
    """``ModelBackend`` for OpenAI (or a compatible server at ``base_url``, the ``…/v1``)."""

    name = "openai"
    provider = PROVIDER
    path = "/responses"

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}

    def body_of(self, request: TurnRequest, secret: str) -> dict[str, Any]:
        return request_body(request)

    def assembler(self, secret: str) -> ResponsesStream:
        return ResponsesStream(secret)

    def response_of(self, data: dict[str, Any], secret: str) -> TurnResponse:
        usage = collect_usage(data.get("usage"), USAGE_PATHS)
        return read_answer(
            data, "output", _read_turn, provider=PROVIDER, secret=secret, usage=usage
        )
