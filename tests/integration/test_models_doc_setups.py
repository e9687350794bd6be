"""Every setup of docs/models.md, exercised as far as it can be without the real service:
its profile line is a valid declaration, its endpoint resolves to the declared server (with
the key rules the doc states), and one turn of its backend and model runs against the fake
provider (standing in through the machine's variable, which wins over ``base_url``), with
every request body valid for the official SDK."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifactize.adapters.llm.backends import EnvModelBackends
from artifactize.domain.declarations.diagnostics import KeyProblems
from artifactize.domain.declarations.model import AgentProfile, ArtifactKind
from artifactize.domain.declarations.parse import parse_declaration
from artifactize.ports.model import TurnRequest, UserText
from tests.support.fake_provider import FakeProvider, anthropic_text, chat_text, openai_text

DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"
SETUPS = (
    "OpenAI",
    "Anthropic",
    "Azure OpenAI",
    "OpenRouter",
    "LiteLLM gateway",
    "vLLM",
    "Ollama",
    "llama.cpp's server",
    "LM Studio",
)
VARIABLES = {
    "openai": "ARTIFACTIZE_OPENAI_BASE_URL",
    "anthropic": "ARTIFACTIZE_ANTHROPIC_BASE_URL",
    "openai-chat": "ARTIFACTIZE_OPENAI_CHAT_BASE_URL",
}
REPLIES = {"openai": openai_text, "anthropic": anthropic_text, "openai-chat": chat_text}
pytestmark = pytest.mark.anyio


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def setups() -> dict[str, str]:
    """``{setup heading: its profile line}`` from the Setups section of the doc."""
    text = DOC.read_text(encoding="utf-8").split("## Setups", 1)[1].split("\n## ", 1)[0]
    found: dict[str, str] = {}
    for section in text.split("\n### ")[1:]:
        heading = section.splitlines()[0].strip()
        match = re.search(r"```toml\n(profile = .*)\n```", section)
        assert match, f"setup {heading!r} has no profile line"
        found[heading] = match.group(1)
    return found


def profile_of(line: str) -> AgentProfile:
    text = f'name = "doc"\n[evals.review]\ntitle = "T"\n{line}\npayload.instruction = "Look."\n'
    problems = KeyProblems()
    declaration = parse_declaration(
        tomllib.loads(text), ArtifactKind.FOLDER, target=None, is_root=False, problems=problems
    )
    assert problems.items == [] and declaration is not None, problems.items
    (item,) = declaration.evals
    assert isinstance(item.profile, AgentProfile)
    return item.profile


def test_the_doc_has_every_setup_the_issue_names() -> None:
    assert tuple(setups()) == SETUPS


@pytest.mark.parametrize("heading", SETUPS)
async def test_a_documented_setup(heading: str, fake: FakeProvider) -> None:
    profile = profile_of(setups()[heading])
    variable = VARIABLES[profile.backend]

    # Where it goes without the machine's variable: the declared server, else the default.
    declared = EnvModelBackends({}).endpoint(profile.backend, profile.base_url)
    if profile.base_url is None:
        assert (declared.source, declared.key_required) == ("default", True)
    else:
        assert declared.base_url == profile.base_url.rstrip("/")
        assert (declared.source, declared.key_required) == ("profile", False)
        assert declared.loopback is profile.base_url.startswith(("http://localhost", "http://127."))

    # One turn of this backend and model against the fake, standing in for the server.
    fake.enqueue(REPLIES[profile.backend]('{"verdict": "GREEN"}'))
    env = {variable: fake.base_url}
    if profile.base_url is None:  # the public endpoints need their key
        env.update({"OPENAI_API_KEY": "sk-doc", "ANTHROPIC_API_KEY": "sk-ant-doc"})
    backend = EnvModelBackends(env).open(profile.backend, profile.base_url)
    try:
        request = TurnRequest(
            model=profile.model,
            instructions="Be strict.",
            items=(UserText("Review."),),
            tools=(),
            reasoning=profile.reasoning,
        )
        response = await backend.turn(request)
    finally:
        await backend.aclose()
    assert response.turn.text == '{"verdict": "GREEN"}'
    assert response.model.startswith(profile.model)
    (sent,) = fake.posts()
    assert sent.body["model"] == profile.model
    fake.assert_sdk_valid()
