"""``ModelCatalog`` over the endpoints ``EnvModelBackends`` resolves: ``GET …/models``.

OpenAI and OpenAI-compatible servers answer ``{"data": [{"id"}…]}`` at ``{base}/models``;
Anthropic pages ``{"data", "has_more", "last_id"}`` at ``{root}/v1/models``. The key goes in
the backend's own header, never in the URL; failures are redacted as a turn's are.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import httpx2

from artifactize.adapters.llm.anthropic_messages import ANTHROPIC_VERSION
from artifactize.adapters.llm.backends import ANTHROPIC_BACKEND, EnvModelBackends, usable_key
from artifactize.adapters.llm.errors import (
    clean_text,
    malformed,
    safe_message,
    status_failure,
    transport_failure,
)
from artifactize.adapters.llm.http import MAX_ERROR_BODY_BYTES, new_provider_client
from artifactize.adapters.llm.proxies import proxy_for
from artifactize.ports.model import Endpoint, Probe, ProviderFailure
from artifactize.ports.secrets import SecretStore

LIST_TIMEOUT_SECONDS = 10.0
MODEL_PAGES_MAX = 20
"""Anthropic lists models in pages; more than this many pages is not a model list."""
ANTHROPIC_PAGE_LIMIT = 1000
PROVIDER_NAMES = {"openai": "OpenAI", "anthropic": "Anthropic", "openai-chat": "Endpoint"}


class EnvModelCatalog:
    def __init__(self, environment: Mapping[str, str], secrets: SecretStore | None = None) -> None:
        self._environment = dict(environment)
        self._backends = EnvModelBackends(environment, secrets=secrets)

    def _prepare(self, backend: str, base_url: str | None) -> tuple[Endpoint, str, dict[str, str]]:
        endpoint = self._backends.endpoint(backend, base_url)
        value, _, name = self._backends.key(backend, endpoint.base_url)
        key = usable_key(name, value, required=endpoint.key_required)
        headers: dict[str, str] = {"accept": "application/json"}
        if backend == ANTHROPIC_BACKEND:
            headers["anthropic-version"] = ANTHROPIC_VERSION
            if key:
                headers["x-api-key"] = key
        elif key:
            headers["authorization"] = f"Bearer {key}"
        return endpoint, key or "", headers

    async def list_models(self, backend: str, base_url: str | None = None) -> list[str]:
        endpoint, secret, headers = self._prepare(backend, base_url)
        provider = PROVIDER_NAMES.get(backend, backend)
        url = endpoint.base_url + self._backends.settings(backend).models_path
        models: list[str] = []
        after: str | None = None
        async with new_provider_client(proxy_for(endpoint.base_url, self._environment)) as client:
            for _ in range(MODEL_PAGES_MAX):
                params = {}
                if backend == ANTHROPIC_BACKEND:
                    params = {"limit": str(ANTHROPIC_PAGE_LIMIT)}
                    if after is not None:
                        params["after_id"] = after
                data = await _get(client, url, headers, params, provider, secret)
                items = data.get("data")
                if not isinstance(items, list):
                    raise malformed(provider, "the model list has no 'data' list.", secret)
                models.extend(
                    str(item["id"]) for item in items if isinstance(item, dict) and "id" in item
                )
                last = data.get("last_id")
                if not (data.get("has_more") is True and isinstance(last, str)):
                    return models
                after = last
        raise malformed(provider, f"the model list runs past {MODEL_PAGES_MAX} pages.", secret)

    async def probe(self, backend: str, base_url: str | None, timeout: float) -> Probe:
        endpoint, secret, headers = self._prepare(backend, base_url)
        url = endpoint.base_url + self._backends.settings(backend).models_path
        started = time.monotonic()
        status: int | None = None
        detail = ""
        client = new_provider_client(proxy_for(endpoint.base_url, self._environment))
        try:
            answer = await client.get(url, headers=headers, timeout=timeout)
            status = answer.status_code
            if not 200 <= status < 300:
                detail = f"HTTP {status}: {clean_text(answer.text[:MAX_ERROR_BODY_BYTES])}"
        except httpx2.HTTPError as error:
            detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        finally:
            await client.aclose()
        return Probe(
            answered=status is not None,
            status=status,
            detail=safe_message(detail, secret)[:300],
            seconds=round(time.monotonic() - started, 3),
        )


async def _get(
    client: httpx2.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    params: Mapping[str, str],
    provider: str,
    secret: str,
) -> dict[str, Any]:
    problem: ProviderFailure | None = None
    data: Any = None
    try:
        answer = await client.get(url, headers=headers, params=params, timeout=LIST_TIMEOUT_SECONDS)
        if 200 <= answer.status_code < 300:
            try:
                data = answer.json()
            except ValueError:
                problem = malformed(provider, "the model list is not JSON.", secret)
        else:
            problem = status_failure(
                provider,
                answer.status_code,
                answer.headers,
                answer.content[:MAX_ERROR_BODY_BYTES],
                secret,
            )
    except httpx2.HTTPError as error:
        problem = transport_failure(provider, error, secret)
    if problem is not None:
        raise problem
    if not isinstance(data, dict):
        raise malformed(provider, "the model list is not a JSON object.", secret)
    return data
