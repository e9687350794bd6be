"""``ModelBackends`` from the environment: API keys and loopback test endpoints.

Keys come only from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``; there are no aliases,
catalogs or fallbacks (reviews-and-store.md §6.1). Everything is checked when a backend is
opened, before any connection. Each opened backend owns its own HTTP client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx2

from adapters.llm.anthropic_messages import AnthropicMessagesBackend
from adapters.llm.endpoints import validate_test_endpoint
from adapters.llm.http import new_provider_client
from adapters.llm.openai_responses import OpenAIResponsesBackend
from ports.model import BackendUnavailable, ModelBackend

OPENAI_BACKEND = "openai"
ANTHROPIC_BACKEND = "anthropic"
ANTHROPIC_VERSION_SUFFIX = "/v1"


@dataclass(frozen=True)
class BackendSettings:
    key_variable: str
    endpoint_variable: str
    default_base_url: str
    factory: Callable[[str, str, httpx2.AsyncClient], ModelBackend]


def _anthropic_root(url: str) -> str:
    """The Anthropic variable names the root, but a trailing ``/v1`` is tolerated."""
    return url.removesuffix(ANTHROPIC_VERSION_SUFFIX)


SETTINGS: Mapping[str, BackendSettings] = {
    OPENAI_BACKEND: BackendSettings(
        key_variable="OPENAI_API_KEY",
        endpoint_variable="ARTIFACTIZE_OPENAI_BASE_URL",
        default_base_url="https://api.openai.com/v1",  # the override replaces all of it
        factory=OpenAIResponsesBackend,
    ),
    ANTHROPIC_BACKEND: BackendSettings(
        key_variable="ANTHROPIC_API_KEY",
        endpoint_variable="ARTIFACTIZE_ANTHROPIC_BASE_URL",
        default_base_url="https://api.anthropic.com",
        factory=AnthropicMessagesBackend,
    ),
}


def _usable_key(variable: str, value: str | None) -> str:
    """The key without surrounding whitespace. It must be printable ASCII: anything else
    cannot travel in a header, and the HTTP library's error would quote it."""
    key = (value or "").strip()
    if not key:
        raise BackendUnavailable(f"{variable} is required for this Agent backend.")
    if any(not (0x21 <= ord(char) <= 0x7E) for char in key):
        raise BackendUnavailable(
            f"{variable} contains characters that cannot be sent in an HTTP header "
            "(only printable ASCII without spaces is allowed)."
        )
    return key


class EnvModelBackends:
    """``ModelBackends`` reading keys and test endpoints from ``environment``."""

    def __init__(
        self,
        environment: Mapping[str, str],
        client_factory: Callable[[], httpx2.AsyncClient] = new_provider_client,
    ) -> None:
        self._environment = dict(environment)
        self._client_factory = client_factory

    def _settings(self, backend: str) -> BackendSettings:
        settings = SETTINGS.get(backend)
        if settings is None:
            raise BackendUnavailable(f"Unknown Agent backend: {backend}")
        return settings

    def test_endpoint(self, backend: str) -> str | None:
        """The validated loopback override for ``backend``, or None when unset or empty.

        Raises ``BackendUnavailable`` for an unknown backend or an invalid override."""
        settings = self._settings(backend)
        url = validate_test_endpoint(
            settings.endpoint_variable, self._environment.get(settings.endpoint_variable, "")
        )
        if url is not None and backend == ANTHROPIC_BACKEND:
            url = _anthropic_root(url)
        return url

    def open(self, backend: str) -> ModelBackend:
        settings = self._settings(backend)
        base_url = self.test_endpoint(backend) or settings.default_base_url
        key = _usable_key(settings.key_variable, self._environment.get(settings.key_variable))
        return settings.factory(key, base_url, self._client_factory())
