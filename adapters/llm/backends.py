"""``ModelBackends`` from the environment: API keys, endpoints and proxies.

Keys come from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` (no aliases), else the key
``artifactize login`` saved for that backend and endpoint (a ``SecretStore``): the
environment variable wins. A backend's endpoint is its
``ARTIFACTIZE_*_BASE_URL`` variable (per machine), else the profile's ``base_url`` (declared
for a team's shared server), else the public API. A key is required for the public API of
``openai`` and ``anthropic``; for ``openai-chat`` and any other endpoint it is sent only when
set (a local Ollama needs none). Everything is checked when a backend is opened, before any
connection. Each opened backend owns its own HTTP client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx2

from artifactize.adapters.llm.anthropic_messages import AnthropicMessagesBackend
from artifactize.adapters.llm.endpoints import (
    is_loopback_host,
    validate_base_url,
    validate_test_endpoint,
)
from artifactize.adapters.llm.http import new_provider_client
from artifactize.adapters.llm.openai_chat import OpenAIChatBackend
from artifactize.adapters.llm.openai_responses import OpenAIResponsesBackend
from artifactize.adapters.llm.proxies import proxy_for, without_credentials
from artifactize.ports.model import BackendUnavailable, Endpoint, ModelBackend
from artifactize.ports.secrets import ENV_SOURCE, SecretStore, SecretStoreError, key_account

OPENAI_BACKEND = "openai"
ANTHROPIC_BACKEND = "anthropic"
OPENAI_CHAT_BACKEND = "openai-chat"
ANTHROPIC_VERSION_SUFFIX = "/v1"
ALLOW_LOOPBACK_MODELS_VARIABLE = "ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS"
PROFILE_SOURCE = "profile"
DEFAULT_SOURCE = "default"

BackendFactory = Callable[[str | None, str, httpx2.AsyncClient], ModelBackend]
ClientFactory = Callable[[str | None], httpx2.AsyncClient]


@dataclass(frozen=True)
class BackendSettings:
    key_variable: str
    endpoint_variable: str
    default_base_url: str
    factory: BackendFactory
    key_required_by_default: bool = True  # at the public default endpoint
    models_path: str = "/models"


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
        models_path="/v1/models",
    ),
    OPENAI_CHAT_BACKEND: BackendSettings(
        key_variable="OPENAI_API_KEY",
        endpoint_variable="ARTIFACTIZE_OPENAI_CHAT_BASE_URL",
        default_base_url="https://api.openai.com/v1",
        factory=OpenAIChatBackend,
        key_required_by_default=False,
    ),
}
SUPPORTED_BACKENDS = tuple(SETTINGS)


def _root(backend: str, url: str) -> str:
    """The Anthropic URL names the root, but a trailing ``/v1`` is tolerated."""
    return url.removesuffix(ANTHROPIC_VERSION_SUFFIX) if backend == ANTHROPIC_BACKEND else url


def usable_key(variable: str, value: str | None, *, required: bool) -> str | None:
    """The key without surrounding whitespace, None when unset and not ``required``. It
    must be printable ASCII: anything else cannot travel in a header, and the HTTP
    library's error would quote it."""
    key = (value or "").strip()
    if not key:
        if required:
            raise BackendUnavailable(f"{variable} is required for this Agent backend.")
        return None
    if any(not (0x21 <= ord(char) <= 0x7E) for char in key):
        raise BackendUnavailable(
            f"{variable} contains characters that cannot be sent in an HTTP header "
            "(only printable ASCII without spaces is allowed)."
        )
    return key


class EnvModelBackends:
    """``ModelBackends`` reading keys, endpoints and proxies from ``environment``."""

    def __init__(
        self,
        environment: Mapping[str, str],
        client_factory: ClientFactory = new_provider_client,
        secrets: SecretStore | None = None,
    ) -> None:
        self._environment = dict(environment)
        self._client_factory = client_factory
        self._secrets = secrets

    def key(self, backend: str, base_url: str) -> tuple[str | None, str | None, str]:
        """The key for ``backend`` at ``base_url``: (value, source, name for messages).
        The environment variable wins; else the saved key of that backend and endpoint."""
        variable = self.settings(backend).key_variable
        value = self._environment.get(variable, "")
        if value.strip():
            return value, ENV_SOURCE, variable
        if self._secrets is not None:
            try:
                saved = self._secrets.get(key_account(backend, base_url))
            except SecretStoreError as exc:
                raise BackendUnavailable(f"The saved key cannot be read: {exc}") from None
            if saved is not None and saved.strip():
                return saved, self._secrets.store, f"the saved key ({self._secrets.store})"
        return None, None, variable

    def settings(self, backend: str) -> BackendSettings:
        settings = SETTINGS.get(backend)
        if settings is None:
            raise BackendUnavailable(
                f"Unknown Agent backend: {backend}; use one of: {', '.join(SUPPORTED_BACKENDS)}."
            )
        return settings

    def test_endpoint(self, backend: str) -> str | None:
        """The validated override of ``ARTIFACTIZE_*_BASE_URL``, or None when unset or empty.

        Raises ``BackendUnavailable`` for an unknown backend or an invalid override."""
        settings = self.settings(backend)
        url = validate_test_endpoint(
            settings.endpoint_variable, self._environment.get(settings.endpoint_variable, "")
        )
        return _root(backend, url) if url is not None else None

    def endpoint(self, backend: str, base_url: str | None = None) -> Endpoint:
        settings = self.settings(backend)
        url = self.test_endpoint(backend)
        source = settings.endpoint_variable
        if url is None and base_url:
            url, source = _root(backend, validate_base_url("base_url", base_url)), PROFILE_SOURCE
        if url is None:
            url, source = settings.default_base_url, DEFAULT_SOURCE
        loopback = is_loopback_host(httpx2.URL(url).host)
        proxy = proxy_for(url, self._environment)
        _, key_source, _ = self.key(backend, url)
        return Endpoint(
            backend=backend,
            base_url=url,
            source=source,
            loopback=loopback,
            key_variable=settings.key_variable,
            key_set=key_source is not None,
            key_source=key_source,
            key_required=settings.key_required_by_default and source == DEFAULT_SOURCE,
            proxy=without_credentials(proxy) if proxy is not None else None,
        )

    def open(self, backend: str, base_url: str | None = None) -> ModelBackend:
        settings = self.settings(backend)
        endpoint = self.endpoint(backend, base_url)
        value, _, name = self.key(backend, endpoint.base_url)
        key = usable_key(name, value, required=endpoint.key_required)
        proxy = proxy_for(endpoint.base_url, self._environment)
        return settings.factory(key, endpoint.base_url, self._client_factory(proxy))

    def loopback_models_allowed(self) -> bool:
        return self._environment.get(ALLOW_LOOPBACK_MODELS_VARIABLE, "").strip() == "1"
