"""The official SDKs as the reference for our wire format (dev-only dependencies).

``request_problem(path, body)`` validates a request body with the SDK's own request type
for that route (``ResponseCreateParamsStreaming``, ``MessageCreateParamsStreaming``,
``CompletionCreateParamsStreaming``) with unknown fields forbidden at every depth, so a
field the API does not define is a problem. ``reply_problem`` / ``event_problem`` do the same
for what the fake provider answers (``Response``, ``Message``, ``ChatCompletion`` and each
stream event). The SDKs are slow to import, so everything is built on first use.
"""

from __future__ import annotations

import functools
from typing import Any

OPENAI_RESPONSES = "/responses"
OPENAI_CHAT = "/chat/completions"
ANTHROPIC_MESSAGES = "/v1/messages"


@functools.cache
def _request_models() -> dict[str, Any]:
    from anthropic.types.message_create_params import MessageCreateParamsStreaming
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
    from pydantic import BaseModel, ConfigDict

    def strict(params: Any) -> Any:
        # A TypedDict takes no config of its own through TypeAdapter; as a field of a model
        # that forbids extras, it and every TypedDict inside it forbid them too.
        class Body(BaseModel):
            model_config = ConfigDict(extra="forbid")
            body: params

        return Body

    return {
        OPENAI_RESPONSES: strict(ResponseCreateParamsStreaming),
        ANTHROPIC_MESSAGES: strict(MessageCreateParamsStreaming),
        OPENAI_CHAT: strict(CompletionCreateParamsStreaming),
    }


def _event_models(union: Any) -> dict[str, Any]:
    """``{event type: its model}`` of an SDK's stream event union, so an event is checked
    against its own model (a clear error) rather than the whole union."""
    import typing

    members = typing.get_args(union)
    if members and typing.get_origin(union) is typing.Annotated:
        members = typing.get_args(members[0])
    models: dict[str, Any] = {}
    for member in members:
        (event_type,) = typing.get_args(member.model_fields["type"].annotation)
        models[event_type] = member
    return models


@functools.cache
def _reply_adapters() -> dict[str, tuple[Any, Any]]:
    from anthropic.types import Message, RawMessageStreamEvent
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent
    from pydantic import TypeAdapter

    return {
        OPENAI_RESPONSES: (TypeAdapter(Response), _event_models(ResponseStreamEvent)),
        ANTHROPIC_MESSAGES: (TypeAdapter(Message), _event_models(RawMessageStreamEvent)),
        OPENAI_CHAT: (TypeAdapter(ChatCompletion), {None: ChatCompletionChunk}),
    }


def _first_lines(error: Exception, count: int = 6) -> str:
    return " | ".join(str(error).splitlines()[:count])


def request_problem(path: str, body: Any) -> str | None:
    """Why ``body`` is not a valid streaming request of ``path``'s API, else None."""
    from pydantic import ValidationError

    model = _request_models().get(path)
    if model is None:
        return None
    try:
        model.model_validate({"body": body})
    except ValidationError as error:
        return _first_lines(error)
    return None


def reply_problem(path: str, body: Any) -> str | None:
    from pydantic import ValidationError

    adapters = _reply_adapters().get(path)
    if adapters is None:
        return None
    try:
        adapters[0].validate_python(body)
    except ValidationError as error:
        return _first_lines(error)
    return None


def event_problem(path: str, event: Any) -> str | None:
    from pydantic import ValidationError

    adapters = _reply_adapters().get(path)
    if adapters is None:
        return None
    models = adapters[1]
    model = models.get(None) or models.get(event.get("type"))
    if model is None:
        return f"the SDK knows no event of type {event.get('type')!r}"
    try:
        model.model_validate(event)
    except ValidationError as error:
        return _first_lines(error)
    return None
