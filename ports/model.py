"""Model backend port: one turn of an LLM conversation, provider-neutral.

The Agent loop (domain) owns the conversation, budgets, retries and the deadline; a backend
adapter only translates one turn to its provider's wire format and back. Nothing here knows
about tools beyond their published name, description and input schema.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: ``<name>_<artifactId>``, its description and JSON Schema."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the provider's raw JSON text."""

    call_id: str
    name: str
    arguments: str


# --- conversation items -----------------------------------------------------------------


@dataclass(frozen=True)
class UserText:
    text: str


@dataclass(frozen=True)
class AssistantTurn:
    """What the model said in one turn, replayed verbatim in later turns.

    ``provider_items`` holds the adapter's own raw output items (for example OpenAI
    reasoning items with encrypted content) so the next request can send them back; the
    domain never reads them."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    provider_items: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ToolOutput:
    """The result of one tool call: content blocks as the registry returns them.

    Blocks are ``{"type": "text", "text"}``, ``{"type": "json", "data"}`` or
    ``{"type": "image", "mimeType", "data"}`` (base64); the adapter keeps them separate."""

    call_id: str
    content: tuple[Mapping[str, Any], ...]
    is_error: bool


ConversationItem = UserText | AssistantTurn | ToolOutput


@dataclass(frozen=True)
class TurnRequest:
    model: str
    instructions: str  # the system preamble
    items: tuple[ConversationItem, ...]
    tools: tuple[ToolSpec, ...]
    tool_choice: Literal["auto", "none"] = "auto"
    reasoning: str | None = None


FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "other"]


@dataclass(frozen=True)
class TurnResponse:
    """One completed provider turn.

    ``usage`` holds only the counters the provider reported, under the keys
    ``inputTokens, outputTokens, totalTokens, cacheReadTokens, cacheWriteTokens,
    cacheWrite1hTokens, reasoningTokens`` (0 kept when reported; absent when not)."""

    model: str
    finish: FinishReason
    turn: AssistantTurn
    usage: Mapping[str, int] = field(default_factory=dict)
    finish_detail: str = ""  # the provider's own reason when ``finish`` is not stop/tool_calls


class FailureKind(enum.Enum):
    """How a provider turn failed; the loop decides on retries and error codes from this."""

    AUTHENTICATION = "AUTHENTICATION"
    QUOTA = "QUOTA"
    RATE_LIMIT = "RATE_LIMIT"
    TRANSIENT = "TRANSIENT"  # overload, 5xx, connection reset/refused, read timeout
    PROVIDER_ERROR = "PROVIDER_ERROR"  # anything else: 4xx, malformed answers


class ProviderFailure(Exception):
    """A turn that did not complete. ``message`` is already cleaned and bounded.

    ``usage`` is what the provider reported before failing (usually nothing);
    ``streamed`` says whether any output had arrived, which rules out a retry;
    ``should_retry`` is the provider's own say (``x-should-retry``), None when silent;
    ``retry_after`` the wait it asked for, in seconds; ``backoff_jitter`` the factor in
    (0.75, 1] the loop applies to its own backoff, drawn by the adapter because the domain
    has no randomness of its own."""

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        *,
        retry_after: float | None = None,
        usage: Mapping[str, int] | None = None,
        streamed: bool = False,
        should_retry: bool | None = None,
        backoff_jitter: float = 1.0,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.usage: Mapping[str, int] = usage or {}
        self.streamed = streamed
        self.should_retry = should_retry
        self.backoff_jitter = backoff_jitter


class BackendUnavailable(Exception):
    """The backend cannot be used at all (missing API key, invalid test endpoint, unknown
    backend name). Raised before any connection is made; the message names the variable."""


@dataclass(frozen=True)
class Endpoint:
    """Where a backend's turns go, resolved and checked before any connection.

    ``source`` says who chose ``base_url``: ``"default"`` (the public API), ``"profile"``
    (the eval's ``base_url``) or the environment variable's name. ``proxy`` is the proxy URL
    in effect without its credentials, None when the connection is direct (always for a
    loopback endpoint). The key's value is never here, only whether it is set and where from."""

    backend: str
    base_url: str
    source: str
    loopback: bool
    key_variable: str
    key_set: bool
    key_required: bool
    proxy: str | None = None
    key_source: str | None = None
    """Where the key comes from: ``"env"``, ``"keyring"`` or ``"file"``; None when unset."""


class ModelBackend(Protocol):
    name: str

    async def turn(self, request: TurnRequest) -> TurnResponse:
        """Run one turn. Raises ProviderFailure; honours anyio cancellation at any await."""
        ...

    async def aclose(self) -> None: ...


class ModelBackends(Protocol):
    def open(self, backend: str, base_url: str | None = None) -> ModelBackend:
        """A ready backend by name (``openai``, ``anthropic`` or ``openai-chat``) at the
        endpoint ``endpoint(backend, base_url)`` names; raises BackendUnavailable."""
        ...

    def endpoint(self, backend: str, base_url: str | None = None) -> Endpoint:
        """The endpoint in effect: the environment variable, else the profile's
        ``base_url``, else the public default. Raises BackendUnavailable for an unknown
        backend or an invalid URL (a missing key is reported in ``key_set``)."""
        ...

    def test_endpoint(self, backend: str) -> str | None:
        """The base URL the environment variable sets for ``backend``, if any."""
        ...

    def loopback_models_allowed(self) -> bool:
        """Whether verdicts of a loopback endpoint may reach the team store
        (``ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS=1``)."""
        ...


@dataclass(frozen=True)
class Probe:
    """Whether an endpoint answered a model listing within the wait: ``status`` is its HTTP
    status (None: no answer at all), ``detail`` a short, key-free reason when not ready."""

    answered: bool
    status: int | None
    detail: str
    seconds: float


class ModelCatalog(Protocol):
    """What an endpoint serves: ``artifactize models`` and ``artifactize doctor``."""

    async def list_models(self, backend: str, base_url: str | None = None) -> list[str]:
        """The model IDs the endpoint lists. Raises BackendUnavailable before connecting,
        ProviderFailure when the endpoint fails or refuses."""
        ...

    async def probe(self, backend: str, base_url: str | None, timeout: float) -> Probe:
        """Ask the endpoint for its models, waiting at most ``timeout`` seconds."""
        ...


def usage_total(usage: Mapping[str, int]) -> int:
    """Tokens a turn counts against ``max_tokens``: the reported total, else 0."""
    return int(usage.get("totalTokens", 0))


ALLOWED_BLOCK_TYPES: Sequence[str] = ("text", "json", "image")
