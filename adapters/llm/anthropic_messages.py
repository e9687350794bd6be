"""Anthropic Messages API backend: one streamed ``POST {root}/v1/messages`` per turn.

Authenticates with ``x-api-key`` (when a key is set) and ``anthropic-version: 2023-06-01``.
Thinking blocks come back signed and are replayed verbatim through
``AssistantTurn.provider_items``. The stream is assembled block by block into the message the
non-streaming API would send; ``message_delta`` carries the final usage and stop reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from artifactize.adapters.llm.errors import UnsupportedReasoning, failure
from artifactize.adapters.llm.http import IncompleteStream
from artifactize.adapters.llm.turns import (
    Malformed,
    ProviderBackend,
    ReadTurn,
    compact_json,
    read_answer,
    stream_error,
    tool_result_blocks,
)
from artifactize.adapters.llm.usage import UsagePath, collect_usage
from artifactize.kernel.bounded_json import JsonRefused, read_json
from artifactize.ports.model import (
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
ANTHROPIC_REASONING_EFFORTS = ("low", "medium", "high", "xhigh", "max")

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
    "model_context_window_exceeded": "length",  # the context filled up: cut short, as max_tokens
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


REPLAY_KEYS: Mapping[str, tuple[str, ...]] = {
    "text": ("type", "text"),
    "tool_use": ("type", "id", "name", "input"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
}
"""The fields of each answer block a request may carry back; others (``citations: null``,
``caller``) are answer-only, and blocks of other types are not replayed."""


def assistant_content(turn: AssistantTurn) -> list[dict[str, Any]]:
    """The raw content blocks when we have them (signed thinking must go back verbatim),
    else text and ``tool_use`` blocks rebuilt from the provider-neutral turn."""
    if turn.provider_items:
        return [
            {key: block[key] for key in REPLAY_KEYS[str(block.get("type"))] if key in block}
            for block in turn.provider_items
            if block.get("type") in REPLAY_KEYS
        ]
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
    body["stream"] = True
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


DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
}
"""The deltas that add to a field of their block, and that field."""


class MessagesStream:
    """Assembles a Messages stream (``message_start``, content block start/delta/stop,
    ``message_delta``, ``message_stop``) into the message the non-streaming API sends."""

    def __init__(self, secret: str) -> None:
        self._secret = secret
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, dict[str, Any]] = {}
        self._pieces: dict[tuple[int, str], list[str]] = {}  # joined once, at the end
        self._partial_json: dict[int, list[str]] = {}
        self._stopped = False
        self.started = False

    def feed(self, event: str, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type", event)
        if kind == "error":
            raise stream_error(PROVIDER, data.get("error"), self._secret, started=self.started)
        if kind == "message_start" and isinstance(data.get("message"), dict):
            self._message = dict(data["message"])
            self._message["content"] = []
        elif kind == "content_block_start":
            self.started = True
            block = data.get("content_block")
            if isinstance(block, dict):
                index = _index(data)
                self._blocks[index] = dict(block)
                for field in DELTA_FIELDS.values():
                    self._pieces.pop((index, field), None)
        elif kind == "content_block_delta":
            self._delta(_index(data), data.get("delta"))
        elif kind == "content_block_stop":
            self._close_block(_index(data))
        elif kind == "message_delta" and self._message is not None:
            delta = data.get("delta")
            if isinstance(delta, dict):
                self._message.update({k: v for k, v in delta.items() if k.startswith("stop_")})
            usage = data.get("usage")
            if isinstance(usage, dict):
                merged = dict(self._message.get("usage") or {})
                merged.update({k: v for k, v in usage.items() if v is not None})
                self._message["usage"] = merged
        elif kind == "message_stop":
            self._stopped = True

    def _delta(self, index: int, delta: Any) -> None:
        block = self._blocks.get(index)
        if block is None or not isinstance(delta, dict):
            return
        kind = delta.get("type")
        field = DELTA_FIELDS.get(str(kind))
        if field is not None:
            # Kept as pieces: adding each to the block's text would copy the text so far
            # every time, quadratic in the number of deltas.
            pieces = self._pieces.get((index, field))
            if pieces is None:
                pieces = self._pieces[index, field] = [str(block.get(field, ""))]
            pieces.append(str(delta.get(field, "")))
        elif kind == "input_json_delta":
            self._partial_json.setdefault(index, []).append(str(delta.get("partial_json", "")))

    def _close_block(self, index: int) -> None:
        block = self._blocks.get(index)
        if block is not None and block.get("type") == "tool_use" and index in self._partial_json:
            text = "".join(self._partial_json.pop(index))
            try:
                block["input"] = read_json(text) if text.strip() else {}
            except ValueError:
                block["input"] = text  # read_answer reports it as malformed

    def finish(self) -> dict[str, Any]:
        if self._message is None or not self._stopped:
            raise IncompleteStream("no message_stop event")
        for (index, field), pieces in self._pieces.items():
            self._blocks[index][field] = "".join(pieces)
        message = dict(self._message)
        message["content"] = [self._blocks[index] for index in sorted(self._blocks)]
        return message


def _index(data: Mapping[str, Any]) -> int:
    index = data.get("index")
    return index if isinstance(index, int) else -1


class AnthropicMessagesBackend(ProviderBackend):
    """``ModelBackend`` for Anthropic (or a compatible server at ``base_url``, the root)."""

    name = "anthropic"
    provider = PROVIDER
    path = "/v1/messages"
    fixed_headers: ClassVar[Mapping[str, str]] = {"anthropic-version": ANTHROPIC_VERSION}

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key}

    def assembler(self, secret: str) -> MessagesStream:
        return MessagesStream(secret)

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
