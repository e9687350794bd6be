"""What the model backends do alike around one turn: the backend shell, tool result blocks,
and the first checks of an answer.

A backend names its provider, its path below the base URL and its auth headers, and turns a
``TurnRequest`` into its wire body and the answer back into a ``TurnResponse``; the POST, the
error mapping and the size limits are ``provider_http.post_json``'s.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Mapping
from typing import Any

import httpx2

from adapters.llm.errors import malformed
from adapters.llm.http import post_json
from ports.model import AssistantTurn, FinishReason, ToolCall, TurnRequest, TurnResponse

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


class ProviderBackend(abc.ABC):
    """A ``ModelBackend`` shell: one ``post_json`` to ``base_url`` + ``path`` per turn.

    Subclasses set ``name``, ``provider`` (as messages name it) and ``path``, and implement
    ``auth_headers``, ``body_of`` (the wire body; raise before anything is sent) and
    ``response_of`` (a 2xx JSON object to a ``TurnResponse``); ``secret`` is the API key,
    to redact from messages."""

    name: str
    provider: str
    path: str

    def __init__(self, api_key: str, base_url: str, client: httpx2.AsyncClient) -> None:
        self._api_key = api_key
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

    async def turn(self, request: TurnRequest) -> TurnResponse:
        body = self.body_of(request, self._api_key)
        data = await post_json(
            self._client,
            self._url,
            self.auth_headers(self._api_key),
            body,
            provider=self.provider,
            secret=self._api_key,
        )
        return self.response_of(data, self._api_key)

    async def aclose(self) -> None:
        await self._client.aclose()
