"""End to end: ``verify`` of the handbook example's Agent eval through each of the three
backends against the fake provider, answering with dated snapshot names as the real APIs do.

The script of each run: the model calls the example's ``outline_docs`` tool (a text block and
a PNG), answers in prose (not a verdict), is asked once to repair, answers GREEN; the second
``verify`` reuses the verdict without a request. Every request body passes the official
SDK's request type.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.fake_provider import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    FakeProvider,
    Reply,
    anthropic_text,
    anthropic_tool_use,
    chat_text,
    chat_tool_call,
    for_model,
    openai_text,
    openai_tool_call,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "handbook"
EVAL = "docs/accuracy"
DECLARED = (
    'profile = { kind = "agent", backend = "openai", model = "gpt-5.1", reasoning = "medium", '
    "max_tool_calls = 40 }"
)
PROSE = "The guide matches the code, as far as I can tell."
GREEN = '{"verdict": "GREEN", "checked": 3}'
CALL = ("call_1", "outline_docs", {"page": "guide.md"})
CALC_GREEN = '{"verdict": "GREEN"}'
CALC_MODEL = "claude-sonnet-4-5"  # calc/review, which docs/accuracy consumes


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def image_sent(body: dict[str, Any]) -> bool:
    return "data:image/png;base64," in json.dumps(
        body
    ) or '"media_type": "image/png"' in json.dumps(body)


BACKENDS: dict[str, tuple[str, str, str, str, Callable[[], list[Reply]]]] = {
    # backend: (model, reasoning, snapshot the fake reports, route, script)
    "openai": (
        "gpt-5.1",
        "medium",
        "gpt-5.1-2025-11-13",
        OPENAI_RESPONSES,
        lambda: [
            openai_tool_call(*CALL, reasoning="enc-1"),
            openai_text(PROSE),
            openai_text(GREEN),
        ],
    ),
    "anthropic": (
        "claude-opus-4-5",
        "high",
        "claude-opus-4-5-20250929",
        ANTHROPIC_MESSAGES,
        lambda: [
            anthropic_tool_use(*CALL, thinking="Look at the outline."),
            anthropic_text(PROSE),
            anthropic_text(GREEN),
        ],
    ),
    "openai-chat": (
        "qwen3:8b",
        "low",
        "qwen3:8b-2025-11-13",
        OPENAI_CHAT,
        lambda: [chat_tool_call(*CALL, text="Let me look."), chat_text(PROSE), chat_text(GREEN)],
    ),
}


def repository(tmp_path: Path, backend: str, model: str, reasoning: str) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    declaration = repo / "docs" / "index.artf"
    text = declaration.read_text(encoding="utf-8")
    assert DECLARED in text, "the example's declaration changed; update this test"
    profile = (
        f'profile = {{ kind = "agent", backend = "{backend}", model = "{model}", '
        f'reasoning = "{reasoning}", max_tool_calls = 40 }}'
    )
    declaration.write_text(text.replace(DECLARED, profile), encoding="utf-8")
    return repo


def verify(repo: Path, state: Path, fake: FakeProvider, *extra: str) -> tuple[int, Any]:
    env = {**os.environ, **fake.env(), "ARTIFACTIZE_REMOTE": "off"}
    line = ["--repo", str(repo)]
    line += ["--state-dir", str(state), "--json", "verify", *extra]
    done = run_cli(*line, env=env, cwd=REPO_ROOT)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else done.stderr


def assert_green_but_the_signoff(code: int, run: Any) -> None:
    """Every Agent and runtime eval of the Run GREEN; the Run INCOMPLETE (exit 4) only
    because the example's documentation owner has not signed off yet (a Human eval)."""
    assert code == 4, run
    statuses = {r["evalId"]: r["status"] for r in run["requests"]}
    assert statuses.pop("docs/signoff") == "WAITING_HUMAN"
    assert set(statuses.values()) == {"GREEN"}, statuses
    assert run["validation"]["unmetObligations"] == ["docs"]


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_an_agent_review_through_each_backend(
    tmp_path: Path, fake: FakeProvider, backend: str
) -> None:
    model, reasoning, snapshot, route, script = BACKENDS[backend]
    repo = repository(tmp_path, backend, model, reasoning)
    # --recursive runs what docs consumes first: calc's Agent review (Anthropic) among them.
    fake.enqueue(*for_model(CALC_MODEL, anthropic_text(CALC_GREEN)), *for_model(model, *script()))
    code, run = verify(repo, tmp_path / "state", fake, "--recursive", EVAL)
    assert_green_but_the_signoff(code, run)
    request = {r["evalId"]: r for r in run["requests"]}[EVAL]
    assert (run["status"], request["status"]) == ("INCOMPLETE", "GREEN")
    assert request["result"] == {"verdict": "GREEN", "checked": 3}
    assert request["agent"] == {
        "backend": backend,
        "baseUrl": fake.base_url,
        "endpointSource": f"ARTIFACTIZE_{backend.upper().replace('-', '_')}_BASE_URL",
        "requestedModel": model,
        "reportedModel": snapshot,
    }
    (call,) = request["toolCalls"]
    assert call["name"] == "outline_docs" and call["isError"] is False
    assert len(request["usage"]) == 3 and all(
        a["usage"]["inputTokens"] > 0 for a in request["usage"]
    )

    first, second, repair = [p for p in fake.posts(route) if p.body["model"] == model]
    assert not image_sent(first.body)
    assert image_sent(second.body)  # the tool's PNG reached the model as an image
    assert "Your final response did not match the required schema" in json.dumps(repair.body)
    assert all(post.body["stream"] is True for post in (first, second, repair))
    assert fake.pending == 0 and fake.exhausted == 0
    fake.assert_sdk_valid()

    shown = run_cli(
        "--state-dir", str(tmp_path / "state"), "--json", "run", "show", run["id"], cwd=REPO_ROOT
    )
    saved = {r["evalId"]: r for r in json.loads(shown.stdout)["requests"]}[EVAL]
    assert saved["agent"] == request["agent"]  # run show has both model names too

    posts = len(fake.posts())
    code, again = verify(repo, tmp_path / "state", fake, "--recursive", EVAL)
    assert_green_but_the_signoff(code, again)
    reused = {r["evalId"]: r for r in again["requests"]}[EVAL]
    assert reused["source"]["requestId"] == request["id"]
    assert len(fake.posts()) == posts  # reused: the provider heard nothing more


def test_the_examples_agent_evals_as_declared(tmp_path: Path, fake: FakeProvider) -> None:
    """Both Agent evals of the example, untouched: OpenAI and Anthropic, aliases answered by
    dated snapshots."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    fake.enqueue(openai_text(GREEN), anthropic_text(CALC_GREEN))  # one eval per route
    code, run = verify(repo, tmp_path / "state", fake, "--recursive", EVAL)
    assert_green_but_the_signoff(code, run)
    models = {
        r["evalId"]: (r["agent"]["requestedModel"], r["agent"]["reportedModel"])
        for r in run["requests"]
        if r["agent"] is not None
    }
    assert models == {
        "docs/accuracy": ("gpt-5.1", "gpt-5.1-2025-11-13"),
        "calc/review": ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
    }
    fake.assert_sdk_valid()
