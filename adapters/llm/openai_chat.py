"""OpenAI Chat Completions backend (``openai-chat``): one streamed
``POST {base}/chat/completions`` per turn, for Ollama, vLLM, llama.cpp's server, LM Studio
and the gateways that speak no Responses API.

Tools travel as ``tools[].function``, tool results as ``role: "tool"`` messages. A tool
message takes text only, so a result's images follow the turn's tool messages in one user
message of ``image_url`` data URLs, each announced in its tool message. Nothing is stored on
the server side: every turn resends the conversation, assistant turns rebuilt from their
text and tool calls. ``reasoning_effort`` is sent only when the profile declares it; usage
comes with the stream's last chunk (``stream_options.include_usage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.adapters.llm.errors import UnsupportedReasoning
from artifactize.adapters.llm.http import DONE_DATA, IncompleteStream
from artifactize.adapters.llm.turns import (
    Malformed,
    ProviderBackend,
    ReadTurn,
    compact_json,
    read_answer,
    stream_error,
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

PROVIDER = "OpenAI-compatible server"
CHAT_REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
IMAGE_NOTE = "[image {number}: attached in the next user message]"
IMAGES_INTRO = "Images returned by the tool calls above, in order:"

USAGE_PATHS: tuple[UsagePath, ...] = (
    (("prompt_tokens",), "inputTokens"),
    (("completion_tokens",), "outputTokens"),
    (("total_tokens",), "totalTokens"),
    (("prompt_tokens_details", "cached_tokens"), "cacheReadTokens"),
    (("prompt_tokens_details", "cache_write_tokens"), "cacheWriteTokens"),
    (("completion_tokens_details", "reasoning_tokens"), "reasoningTokens"),
)

FINISH: Mapping[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


# --- request ------------------------------------------------------------------------------


def _tool_message(item: ToolOutput, images: list[dict[str, Any]]) -> dict[str, Any]:
    """The tool message of one result; its images go to ``images`` and are announced."""
    parts: list[str] = []
    for block in item.content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block["text"]))
        elif kind == "json":
            parts.append(compact_json(block["data"]))
        elif kind == "image":
            images.append(
                {
                    "type": "image_url",
                    "image_url": {"url": f"data:{block['mimeType']};base64,{block['data']}"},
                }
            )
            parts.append(IMAGE_NOTE.format(number=len(images)))
        else:
            raise ValueError(f"Unsupported tool output block type: {kind!r}.")
    return {
        "role": "tool",
        "tool_call_id": item.call_id,
        "content": [{"type": "text", "text": part} for part in parts] or "",
    }


def _assistant_message(turn: AssistantTurn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in turn.tool_calls
        ]
    elif not turn.text:
        message["content"] = ""
    return message


def messages(instructions: str, items: tuple[ConversationItem, ...]) -> list[dict[str, Any]]:
    """The system message, then the conversation; a run of tool messages is followed by one
    user message holding their images, because a tool message cannot hold one."""
    result: list[dict[str, Any]] = []
    if instructions:
        result.append({"role": "system", "content": instructions})
    images: list[dict[str, Any]] = []

    def flush() -> None:
        if images:
            result.append(
                {"role": "user", "content": [{"type": "text", "text": IMAGES_INTRO}, *images]}
            )
            images.clear()

    for item in items:
        if isinstance(item, ToolOutput):
            result.append(_tool_message(item, images))
            continue
        flush()
        if isinstance(item, UserText):
            result.append({"role": "user", "content": item.text})
        elif isinstance(item, AssistantTurn):
            result.append(_assistant_message(item))
        else:  # pragma: no cover - the union is closed
            raise TypeError(f"Unknown conversation item: {type(item).__name__}.")
    flush()
    return result


def tool_definitions(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.input_schema),
            },
        }
        for tool in tools
    ]


def request_body(request: TurnRequest) -> dict[str, Any]:
    """The JSON body of one turn. Raises ``UnsupportedReasoning`` before anything is sent."""
    if request.reasoning is not None and request.reasoning not in CHAT_REASONING_EFFORTS:
        raise UnsupportedReasoning("openai-chat", request.reasoning, CHAT_REASONING_EFFORTS)
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages(request.instructions, request.items),
    }
    if request.tools:
        body["tools"] = tool_definitions(request.tools)
        body["tool_choice"] = request.tool_choice
        body["parallel_tool_calls"] = False
    if request.reasoning is not None:
        body["reasoning_effort"] = request.reasoning
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    return body


# --- response -----------------------------------------------------------------------------


def _read_turn(data: Mapping[str, Any], choices: list[Any]) -> ReadTurn:
    if not choices or not isinstance(choices[0], dict):
        raise Malformed("it has no choice.")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise Malformed("choices[0] has no message object.")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise Malformed("choices[0].message.content is not a string.")
    calls: list[ToolCall] = []
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise Malformed("choices[0].message.tool_calls is not a list.")
    for index, raw in enumerate(raw_calls):
        where = f"choices[0].message.tool_calls[{index}]"
        function = raw.get("function") if isinstance(raw, dict) else None
        call_id = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(function, dict) or not isinstance(call_id, str):
            raise Malformed(f"{where} has no string 'id' and 'function' object.")
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, str):
            raise Malformed(f"{where} has no string 'name' and 'arguments'.")
        calls.append(ToolCall(call_id=call_id, name=name, arguments=arguments))
    reason = choices[0].get("finish_reason")
    reason_text = reason if isinstance(reason, str) else "none"
    finish = FINISH.get(reason_text, "other")
    refusal = message.get("refusal")
    detail = "" if finish in ("stop", "tool_calls") else reason_text
    if finish == "stop" and isinstance(refusal, str) and refusal and not content:
        finish, detail = "content_filter", f"refusal: {refusal}"
    return content or "", calls, finish, detail


# --- stream -------------------------------------------------------------------------------


class ChatStream:
    """Assembles ``chat.completion.chunk`` events into one ``chat.completion``."""

    def __init__(self, secret: str) -> None:
        self._secret = secret
        self._head: dict[str, Any] = {}
        self._content: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: Any = None
        self.started = False

    def feed(self, event: str, data: Any) -> None:
        if event == DONE_DATA or not isinstance(data, dict):
            return
        if "error" in data and "choices" not in data:
            raise stream_error(PROVIDER, data["error"], self._secret, started=self.started)
        for key in ("id", "model", "created"):
            if key in data and key not in self._head:
                self._head[key] = data[key]
        if data.get("usage"):
            self._usage = data["usage"]
        for choice in data.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice)

    def _choice(self, choice: Mapping[str, Any]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            if isinstance(delta.get("content"), str) and delta["content"]:
                self.started = True
                self._content.append(delta["content"])
            if isinstance(delta.get("refusal"), str) and delta["refusal"]:
                self.started = True
                self._refusal.append(delta["refusal"])
            for call in delta.get("tool_calls") or []:
                if isinstance(call, dict):
                    self.started = True
                    self._call(call)
        if isinstance(choice.get("finish_reason"), str):
            self._finish = choice["finish_reason"]

    def _call(self, delta: Mapping[str, Any]) -> None:
        index = delta.get("index")
        slot = self._calls.setdefault(
            index if isinstance(index, int) else len(self._calls),
            {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
        )
        if isinstance(delta.get("id"), str):
            slot["id"] = delta["id"]
        function = delta.get("function")
        if isinstance(function, dict):
            for key in ("name", "arguments"):
                if isinstance(function.get(key), str):
                    slot["function"][key] += function[key]

    def finish(self) -> dict[str, Any]:
        if self._finish is None:
            raise IncompleteStream("no chunk with a finish_reason")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._content) or None}
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if self._calls:
            message["tool_calls"] = [self._calls[index] for index in sorted(self._calls)]
        answer: dict[str, Any] = {
            **self._head,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
        }
        if self._usage is not None:
            answer["usage"] = self._usage
        return answer


# --- backend ------------------------------------------------------------------------------


class OpenAIChatBackend(ProviderBackend):
    """``ModelBackend`` for any Chat Completions server at ``base_url`` (the ``…/v1``)."""

    name = "openai-chat"
    provider = PROVIDER
    path = "/chat/completions"

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}

    def body_of(self, request: TurnRequest, secret: str) -> dict[str, Any]:
        return request_body(request)

    def assembler(self, secret: str) -> ChatStream:
        return ChatStream(secret)

    def response_of(self, data: dict[str, Any], secret: str) -> TurnResponse:
        usage = collect_usage(data.get("usage"), USAGE_PATHS)
        response = read_answer(
            data, "choices", _read_turn, provider=PROVIDER, secret=secret, usage=usage
        )
        # Replays rebuild the assistant message from text and calls; the raw choices are
        # not a conversation item of this API.
        turn = AssistantTurn(text=response.turn.text, tool_calls=response.turn.tool_calls)
        return TurnResponse(
            model=response.model,
            finish=response.finish,
            turn=turn,
            usage=response.usage,
            finish_detail=response.finish_detail,
        )
