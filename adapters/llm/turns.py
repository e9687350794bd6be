"""What the model backends do alike around one turn: the backend shell, tool result blocks,
stream error events, and the first checks of an answer.

A backend names its provider, its path below the base URL and its headers, turns a
``TurnRequest`` into its wire body, assembles its stream into the answer the non-streaming
API would send, and reads that answer into a ``TurnResponse``; the POST, the error mapping
and the limits are ``http.post_turn``'s.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import httpx2

from artifactize.adapters.llm.errors import (
    STREAM_STATUS,
    classify_status,
    clean_text,
    error_object_details,
    failure,
    malformed,
)
from artifactize.adapters.llm.http import STREAM_IDLE_TIMEOUT_SECONDS, StreamAssembler, post_turn
from artifactize.ports.model import (
    AssistantTurn,
    FinishReason,
    ProviderFailure,
    ToolCall,
    TurnRequest,
    TurnResponse,
)

ReadTurn = tuple[str, list[ToolCall], FinishReason, str]
"""(text, tool calls, finish reason, finish detail) read from an answer."""


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_result_blocks(
    content: tuple[Mapping[str, Any], ...],
    text: Callable[[str], dict[str, Any]],
    image: Callable[[str, str], dict[str, Any]],
) -> list[dict[str, Any]]:
    """Tool result blocks in a provider's shape, kept separate and in order: ``text(t)`` for
    text and for JSON (as compact JSON text), ``image(mime_type, base64_data)`` for images."""
    blocks: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            blocks.append(text(block["text"]))
        elif kind == "json":
            blocks.append(text(compact_json(block["data"])))
        elif kind == "image":
            blocks.append(image(block["mimeType"], block["data"]))
        else:
            raise ValueError(f"Unsupported tool output block type: {kind!r}.")
    return blocks


class Malformed(Exception):
    """Raised by a backend's reader with the detail of an unreadable answer; ``read_answer``
    turns it into a ProviderFailure."""


def read_answer(
    data: Mapping[str, Any],
    items_key: str,
    read: Callable[[Mapping[str, Any], list[Any]], ReadTurn],
    *,
    provider: str,
    secret: str,
    usage: dict[str, int],
) -> TurnResponse:
    """The turn of a 2xx answer: its reported model, ``usage``, and what ``read(data, items)``
    made of the list under ``items_key``, which is kept verbatim as the provider items.

    A missing model or list, or a ``Malformed`` raised by ``read``, becomes a PROVIDER_ERROR
    ``ProviderFailure`` that keeps ``usage``."""
    try:
        model = data.get("model")
        if not isinstance(model, str):
            raise Malformed("it has no string 'model'.")
        items = data.get(items_key)
        if not isinstance(items, list):
            raise Malformed(f"it has no {items_key!r} list.")
        text, calls, finish, detail = read(data, items)
    except Malformed as error:
        raise malformed(provider, str(error), secret, usage) from None  # our own detail
    turn = AssistantTurn(text=text, tool_calls=tuple(calls), provider_items=tuple(items))
    return TurnResponse(model=model, finish=finish, turn=turn, usage=usage, finish_detail=detail)


def stream_error(provider: str, error: Any, secret: str, *, started: bool) -> ProviderFailure:
    """The failure an ``error`` event of a stream reports, classified by its codes."""
    details = error_object_details(error)
    kind = classify_status(STREAM_STATUS, details.searchable, details.codes)
    detail = clean_text(details.message) or "no error message"
    return failure(kind, f"{provider} stream reported an error: {detail}", secret, streamed=started)


class ProviderBackend(abc.ABC):
    """A ``ModelBackend`` shell: one streamed ``post_turn`` to ``base_url`` + ``path`` per
    turn.

    Subclasses set ``name``, ``provider`` (as messages name it) and ``path``, and implement
    ``auth_headers``, ``body_of`` (the wire body; raise before anything is sent),
    ``assembler`` (a fresh ``StreamAssembler``) and ``response_of`` (a 2xx JSON object to a
    ``TurnResponse``); ``secret`` is the API key, to redact from messages. Without a key
    (a keyless local server) no auth header is sent; ``fixed_headers`` always are."""

    name: str
    provider: str
    path: str
    fixed_headers: ClassVar[Mapping[str, str]] = {}
    stream_idle_timeout: float = STREAM_IDLE_TIMEOUT_SECONDS

    def __init__(self, api_key: str | None, base_url: str, client: httpx2.AsyncClient) -> None:
        self._api_key = api_key or ""
        self._url = base_url.rstrip("/") + self.path
        self._client = client

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(url={self._url!r})"

    @abc.abstractmethod
    def auth_headers(self, api_key: str) -> dict[str, str]: ...

    @abc.abstractmethod
    def body_of(self, request: TurnRequest, secret: str) -> dict[str, Any]: ...

    @abc.abstractmethod
    def response_of(self, data: dict[str, Any], secret: str) -> TurnResponse: ...

    @abc.abstractmethod
    def assembler(self, secret: str) -> StreamAssembler: ...

    def headers(self) -> dict[str, str]:
        headers = dict(self.fixed_headers)
        if self._api_key:
            headers.update(self.auth_headers(self._api_key))
        return headers

    async def turn(self, request: TurnRequest) -> TurnResponse:
        body = self.body_of(request, self._api_key)
        data = await post_turn(
            self._client,
            self._url,
            self.headers(),
            body,
            self.assembler(self._api_key),
            provider=self.provider,
            secret=self._api_key,
            idle_timeout=self.stream_idle_timeout,
        )
        return self.response_of(data, self._api_key)

    async def aclose(self) -> None:
        await self._client.aclose()
