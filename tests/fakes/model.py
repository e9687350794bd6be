"""A scripted model backend: each turn pops the next reply (a response or a failure)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from artifactize.ports.model import (
    AssistantTurn,
    BackendUnavailable,
    Endpoint,
    FinishReason,
    ProviderFailure,
    ToolCall,
    TurnRequest,
    TurnResponse,
)

Reply = TurnResponse | ProviderFailure | Callable[[TurnRequest], Awaitable[TurnResponse]]


def text_reply(
    text: str, model: str = "m1", usage: Mapping[str, int] | None = None
) -> TurnResponse:
    return TurnResponse(model, "stop", AssistantTurn(text), dict(usage or {"totalTokens": 10}))


def verdict_reply(verdict: str = "GREEN", model: str = "m1", **fields: Any) -> TurnResponse:
    import json

    return text_reply(json.dumps({"verdict": verdict, **fields}), model)


def call_reply(
    *calls: tuple[str, str, str],
    model: str = "m1",
    usage: Mapping[str, int] | None = None,
    finish: FinishReason = "tool_calls",
) -> TurnResponse:
    """``calls`` are (call_id, tool name, raw JSON arguments)."""
    turn = AssistantTurn("", tuple(ToolCall(i, n, a) for i, n, a in calls))
    return TurnResponse(model, finish, turn, dict(usage or {"totalTokens": 10}))


@dataclass
class ScriptedBackend:
    replies: list[Reply]
    name: str = "openai"
    requests: list[TurnRequest] = field(default_factory=list)
    closed: bool = False

    async def turn(self, request: TurnRequest) -> TurnResponse:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError("the scripted backend ran out of replies")
        reply = self.replies.pop(0)
        if isinstance(reply, ProviderFailure):
            raise reply
        if isinstance(reply, TurnResponse):
            return reply
        return await reply(request)

    async def aclose(self) -> None:
        self.closed = True


@dataclass
class ScriptedBackends:
    backend: ScriptedBackend | None
    opened: int = 0

    def open(self, backend: str, base_url: str | None = None) -> ScriptedBackend:
        if self.backend is None:
            raise BackendUnavailable("OPENAI_API_KEY is required for this Agent backend.")
        self.opened += 1
        return self.backend

    def endpoint(self, backend: str, base_url: str | None = None) -> Endpoint:
        return Endpoint(
            backend=backend,
            base_url=base_url or "https://scripted.invalid/v1",
            source="profile" if base_url else "default",
            loopback=False,
            key_variable="OPENAI_API_KEY",
            key_set=self.backend is not None,
            key_required=True,
        )

    def test_endpoint(self, backend: str) -> str | None:
        return None

    def loopback_models_allowed(self) -> bool:
        return False
