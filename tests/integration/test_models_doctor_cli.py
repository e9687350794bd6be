"""``artifactize models BACKEND`` and ``artifactize doctor`` as a user runs them, against the
fake provider on 127.0.0.1 (and a listener that never answers)."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.fake_provider import FAKE_ANTHROPIC_KEY, FAKE_OPENAI_KEY, FakeProvider

REPO_ROOT = Path(__file__).resolve().parents[2]
AGENT_EVAL = """name = "doc"
[evals.review]
title = "T"
profile = {profile}
payload.instruction = "Look."
"""


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def run(
    tmp_path: Path, env: dict[str, str], *args: str, as_json: bool = True
) -> tuple[int, Any, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ARTIFACTIZE_", "OPENAI_", "ANTHROPIC_", "VISUAL", "EDITOR"))
        and "proxy" not in k.lower()
    }
    line = [
        "--repo",
        str(tmp_path / "repo"),
    ]
    line += ["--state-dir", str(tmp_path / "state"), *(["--json"] if as_json else []), *args]
    done = run_cli(*line, env={**base, **env}, cwd=REPO_ROOT)
    out: Any = done.stdout
    if as_json and done.stdout.strip():
        out = json.loads(done.stdout)
    return done.returncode, out, done.stderr


def workspace(tmp_path: Path, profile: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / "index.artf").write_text(AGENT_EVAL.format(profile=profile), encoding="utf-8")


# --- models -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        ("openai", ["gpt-fake", "gpt-fake-mini"]),
        ("openai-chat", ["gpt-fake", "gpt-fake-mini"]),
        ("anthropic", ["claude-fake", "claude-fake-haiku"]),
    ],
)
def test_models_lists_what_the_endpoint_serves(
    tmp_path: Path, fake: FakeProvider, backend: str, expected: list[str]
) -> None:
    code, out, _ = run(tmp_path, fake.env(), "models", backend)
    assert code == 0
    assert out == {"backend": backend, "models": expected}
    code, text, _ = run(tmp_path, fake.env(), "models", backend, as_json=False)
    assert (code, text) == (0, "\n".join(expected) + "\n")
    (get, *_) = [r for r in fake.requests if r.method == "GET"]
    if backend == "anthropic":
        assert get.header("x-api-key") == FAKE_ANTHROPIC_KEY
    else:
        assert get.header("authorization") == f"Bearer {FAKE_OPENAI_KEY}"


def test_models_of_a_keyless_local_server(tmp_path: Path, fake: FakeProvider) -> None:
    env = {"ARTIFACTIZE_OPENAI_CHAT_BASE_URL": fake.base_url}
    code, out, _ = run(tmp_path, env, "models", "openai-chat")
    assert (code, out["models"]) == (0, ["gpt-fake", "gpt-fake-mini"])
    assert fake.requests[0].header("authorization") is None


def test_models_with_base_url_option(tmp_path: Path, fake: FakeProvider) -> None:
    code, out, _ = run(tmp_path, {}, "models", "openai-chat", "--base-url", fake.base_url)
    assert (code, out["models"]) == (0, ["gpt-fake", "gpt-fake-mini"])


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["models", "gemini-cli"], {}, "Unknown Agent backend: gemini-cli; use one of: "),
        (
            ["models", "codex"],
            {"PATH": "/nonexistent"},
            "Codex is not installed (codex is not on PATH): install it",
        ),
        (["models", "openai"], {}, "OPENAI_API_KEY is required for this Agent backend."),
        (
            ["models", "openai-chat", "--base-url", "http://ollama.lan:11434/v1"],
            {},
            "base_url must be an https:// URL",
        ),
        (
            ["models", "openai"],
            {"OPENAI_API_KEY": "k", "ARTIFACTIZE_OPENAI_BASE_URL": "http://u:secretpw@localhost:1"},
            "ARTIFACTIZE_OPENAI_BASE_URL must be an https:// URL",
        ),
    ],
)
def test_models_refusals_name_the_input_and_the_fix(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    code, out, err = run(tmp_path, env, *args)
    assert code == 2
    assert out["error"].startswith(message)
    assert "secretpw" not in json.dumps(out) + err


def test_models_refused_by_the_endpoint(tmp_path: Path) -> None:
    with FakeProvider(required_openai_key="sk-right") as fake:
        env = {**fake.env(openai_key="sk-wrong-0123456789")}
        code, out, _ = run(tmp_path, env, "models", "openai")
    assert code == 2
    assert out["error"].startswith("OpenAI returned HTTP 401")
    assert "sk-wrong-0123456789" not in out["error"]


# --- doctor -------------------------------------------------------------------------------


def test_doctor_ready_against_the_fake(tmp_path: Path, fake: FakeProvider) -> None:
    workspace(tmp_path, '{ kind = "agent", backend = "openai", model = "gpt-5.1" }')
    code, report, _ = run(tmp_path, fake.env(), "doctor")
    assert code == 0, report
    assert report["ready"] is True and report["problems"] == []
    (backend,) = report["backends"]
    assert backend["backend"] == "openai" and backend["evals"] == ["doc/review"]
    assert backend["baseUrl"] == fake.base_url
    assert backend["endpointSource"] == "ARTIFACTIZE_OPENAI_BASE_URL"
    assert backend["key"] == {"variable": "OPENAI_API_KEY", "set": True, "required": False}
    assert (backend["answers"], backend["status"]) == (True, 200)
    assert backend["proxy"] is None and backend["loopback"] is True
    assert "stay out of the team store" in backend["loopbackRule"]
    assert report["stateHome"]["writable"] is True
    assert report["teamStore"]["configured"] is False
    assert report["editor"]["needed"] is False
    assert FAKE_OPENAI_KEY not in json.dumps(report)  # never the key's value
    code, text, _ = run(tmp_path, fake.env(), "doctor", as_json=False)
    assert code == 0 and text.rstrip().endswith("Ready.")
    assert FAKE_OPENAI_KEY not in text


def test_doctor_names_a_missing_key_and_exits_1(tmp_path: Path) -> None:
    workspace(tmp_path, '{ kind = "agent", backend = "anthropic", model = "claude-x" }')
    code, report, _ = run(tmp_path, {}, "doctor")
    assert code == 1
    assert report["problems"] == ["anthropic: ANTHROPIC_API_KEY is required and not set."]
    (backend,) = report["backends"]
    assert backend["key"] == {"variable": "ANTHROPIC_API_KEY", "set": False, "required": True}
    assert backend["ready"] is False


def test_doctor_an_endpoint_that_does_not_answer_within_2_s(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections (backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        workspace(
            tmp_path,
            f'{{ kind = "agent", backend = "openai-chat", model = "llama3", base_url = "{url}" }}',
        )
        code, report, _ = run(tmp_path, {}, "doctor")
    assert code == 1
    (backend,) = report["backends"]
    assert (backend["answers"], backend["endpointSource"]) == (False, "profile")
    assert backend["key"]["required"] is False
    assert "ReadTimeout" in backend["detail"]
    assert report["problems"][0].startswith(f"openai-chat: {url} did not answer within 2 s")


def test_doctor_with_a_refused_key(tmp_path: Path) -> None:
    workspace(tmp_path, '{ kind = "agent", backend = "openai", model = "m" }')
    with FakeProvider(required_openai_key="sk-right") as fake:
        code, report, _ = run(tmp_path, fake.env(openai_key="sk-wrong-0123456789"), "doctor")
    assert code == 1
    assert "refused the key in OPENAI_API_KEY (HTTP 401)" in report["problems"][0]
    assert "sk-wrong" not in json.dumps(report)


def test_doctor_reports_the_proxy_and_the_editor(tmp_path: Path, fake: FakeProvider) -> None:
    workspace(
        tmp_path,
        '{ kind = "agent", backend = "openai-chat", model = "m", '
        'base_url = "https://gateway.example.test/v1" }',
    )
    env = {"HTTPS_PROXY": f"http://user:pw@127.0.0.1:{fake.port}", "EDITOR": "nano"}
    code, report, _ = run(tmp_path, env, "doctor")
    (backend,) = report["backends"]
    assert backend["proxy"] == f"http://127.0.0.1:{fake.port}"  # without its credentials
    assert backend["loopbackRule"] is None
    assert report["editor"] == {"variable": "EDITOR", "command": "nano", "needed": False}
    assert "pw@" not in json.dumps(report)
    assert code == 1  # the fake is no CONNECT proxy: the gateway does not answer


def test_doctor_without_a_workspace_still_checks_the_machine(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    code, report, _ = run(tmp_path, {}, "doctor")
    assert report["backends"] == []
    assert report["stateHome"]["writable"] is True
    assert code == (0 if not report["problems"] else 1)
    assert all(p.startswith("Workspace: ") for p in report["problems"])


def test_doctor_names_the_loopback_rule_against_a_configured_store(
    tmp_path: Path, fake: FakeProvider
) -> None:
    workspace(tmp_path, '{ kind = "agent", backend = "openai", model = "m" }')
    env = {
        **fake.env(),
        "ARTIFACTIZE_REMOTE": "http://127.0.0.1:9/",
        "ARTIFACTIZE_REMOTE_TOKEN": "azt_x",
    }
    code, report, _ = run(tmp_path, env, "doctor")
    assert code == 1
    assert report["teamStore"]["configured"] is True and report["teamStore"]["reachable"] is False
    assert any("verify will refuse the team store while openai" in p for p in report["problems"])
    code, report, _ = run(
        tmp_path, {**env, "ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS": "1"}, "doctor"
    )
    assert not any("verify will refuse" in p for p in report["problems"])
    assert "lets its verdicts into the team store" in report["backends"][0]["loopbackRule"]
