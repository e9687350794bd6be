"""Saved API keys: ``login`` / ``logout`` (``domain/use_cases/api_keys.py``) over a fake secrets
port, and the key lookup of the API backends (the variable wins, else the key saved for
that backend and endpoint)."""

from __future__ import annotations

import pytest

from artifactize.adapters.llm.backends import EnvModelBackends
from artifactize.domain.use_cases.api_keys import MAX_KEY_CHARS, ApiKeyError, ApiKeys
from artifactize.ports.model import BackendUnavailable
from artifactize.ports.secrets import SecretStoreError, key_account

LOCAL = "http://127.0.0.1:8080/v1"


class FakeSecrets:
    store = "keyring"

    def __init__(self) -> None:
        self.saved: dict[str, str] = {}

    def get(self, account: str) -> str | None:
        return self.saved.get(account)

    def put(self, account: str, secret: str) -> None:
        self.saved[account] = secret

    def delete(self, account: str) -> bool:
        return self.saved.pop(account, None) is not None


def keys(environment: dict[str, str] | None = None) -> tuple[ApiKeys, FakeSecrets]:
    secrets = FakeSecrets()
    return ApiKeys(EnvModelBackends(environment or {}, secrets=secrets), secrets), secrets


def test_login_saves_for_the_backend_and_endpoint_and_says_the_store() -> None:
    api_keys, secrets = keys()
    change = api_keys.login("openai-chat", LOCAL + "/", " sk-local-1\n")
    assert change.to_json() == {
        "backend": "openai-chat",
        "baseUrl": LOCAL,
        "store": "keyring",
        "changed": True,
    }
    assert secrets.saved == {key_account("openai-chat", LOCAL): "sk-local-1"}
    change = api_keys.login("openai", None, "sk-default")
    assert change.base_url == "https://api.openai.com/v1"


def test_logout_removes_only_that_endpoint_and_says_when_there_was_none() -> None:
    api_keys, secrets = keys()
    api_keys.login("anthropic", None, "sk-a")
    api_keys.login("anthropic", LOCAL, "sk-b")
    assert api_keys.logout("anthropic", LOCAL).changed is True
    assert api_keys.logout("anthropic", LOCAL).changed is False
    assert list(secrets.saved.values()) == ["sk-a"]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("", "No API key"),
        (" \n", "No API key"),
        ("sk one", "printable ASCII"),
        ("sk-é", "printable ASCII"),
        ("k" * (MAX_KEY_CHARS + 1), f"longer than {MAX_KEY_CHARS}"),
    ],
)
def test_login_refuses_a_bad_key_without_quoting_it(text: str, rule: str) -> None:
    api_keys, secrets = keys()
    with pytest.raises(ApiKeyError, match=rule) as raised:
        api_keys.login("openai", None, text)
    assert text.strip() == "" or text not in str(raised.value)
    assert secrets.saved == {}


def test_a_key_at_the_length_limit_is_saved() -> None:
    api_keys, secrets = keys()
    api_keys.login("openai", None, "k" * MAX_KEY_CHARS)
    assert list(secrets.saved.values()) == ["k" * MAX_KEY_CHARS]


def test_login_refuses_an_unknown_backend_and_a_bad_url() -> None:
    api_keys, _ = keys()
    with pytest.raises(ApiKeyError, match="Unknown Agent backend: gemini"):
        api_keys.login("gemini", None, "sk-1")
    with pytest.raises(ApiKeyError, match="base_url"):
        api_keys.login("openai", "ftp://example.com", "sk-1")


def test_the_variable_wins_else_the_saved_key_of_that_endpoint() -> None:
    secrets = FakeSecrets()
    secrets.put(key_account("openai", "https://api.openai.com/v1"), "sk-saved")
    backends = EnvModelBackends({}, secrets=secrets)
    endpoint = backends.endpoint("openai")
    assert (endpoint.key_set, endpoint.key_source) == (True, "keyring")
    assert backends.key("openai", endpoint.base_url)[:2] == ("sk-saved", "keyring")
    other = backends.endpoint("openai", LOCAL)  # saved for another endpoint: not sent here
    assert (other.key_set, other.key_source) == (False, None)
    with_variable = EnvModelBackends({"OPENAI_API_KEY": "sk-env"}, secrets=secrets)
    assert with_variable.endpoint("openai").key_source == "env"
    assert with_variable.key("openai", endpoint.base_url)[:2] == ("sk-env", "env")
    assert EnvModelBackends({}).endpoint("openai").key_source is None


def test_an_unreadable_store_makes_the_backend_unavailable() -> None:
    class Broken(FakeSecrets):
        def get(self, account: str) -> str | None:
            raise SecretStoreError("the keys file is damaged")

    with pytest.raises(BackendUnavailable, match="saved key cannot be read"):
        EnvModelBackends({}, secrets=Broken()).endpoint("openai")
