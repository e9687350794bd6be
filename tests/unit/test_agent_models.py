"""What the coding-agent adapters read without running the agent: the models of Claude
Code's ``initialize`` answer, the model Codex recorded in its session file (bounded by
SESSION_FILE_MAX_BYTES), and the text of ``models claude-code|codex``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.coding_agents import codex as codex_module
from artifactize.adapters.coding_agents.claude_code import INITIALIZE, _initialized_models
from artifactize.adapters.coding_agents.codex import Codex
from artifactize.entrypoints.cli.render.models import agent_models_text, agent_models_view
from artifactize.ports.coding_agents import AgentInstall, AgentModel, AgentModels

THREAD = "01a24985-6035-77f0-9270-e23428218ab0"


def test_claude_code_models_come_from_the_initialize_answer_only() -> None:
    answer: dict[str, Any] = {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": INITIALIZE["request_id"],
            "response": {
                "models": [
                    {"value": "sonnet", "displayName": "Sonnet", "resolvedModel": "claude-s-5"},
                    {"value": "haiku"},
                    {"displayName": "no value"},
                ]
            },
        },
    }
    other = {**answer, "response": {**answer["response"], "request_id": "someone-else"}}
    stdout = "\n".join(["not json", json.dumps(other), json.dumps(answer)])
    assert _initialized_models(stdout) == (
        AgentModel("sonnet", "Sonnet", "claude-s-5"),
        AgentModel("haiku", None, None),
    )
    assert _initialized_models(json.dumps(other)) is None
    assert _initialized_models("") is None


def rollout(home: Path, thread: str, *models: str, padding: int = 0) -> Path:
    folder = home / ".codex" / "sessions" / "2026" / "12" / "06"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "session_meta", "payload": {"id": thread}})]
    lines += [json.dumps({"type": "turn_context", "payload": {"model": m}}) for m in models]
    text = "\n".join(lines) + "\n"
    path = folder / f"rollout-2026-12-06T04-03-27-{thread}.jsonl"
    path.write_text(text + " " * padding, encoding="utf-8")
    return path


def codex(home: Path) -> Codex:
    return Codex(processes=None, environment={"HOME": str(home)}, workdir=str(home))  # type: ignore[arg-type]


def test_codex_reports_the_model_of_the_last_turn_its_session_file_records(
    tmp_path: Path,
) -> None:
    rollout(tmp_path, THREAD, "gpt-5.5", "gpt-5.5-mini")
    assert codex(tmp_path)._session_model(THREAD) == "gpt-5.5-mini"
    assert codex(tmp_path)._session_model("01a24985-0000") is None
    assert codex(tmp_path)._session_model("../../etc") is None
    assert codex(tmp_path)._session_model(None) is None
    named = Codex(None, {"CODEX_HOME": str(tmp_path / ".codex")}, str(tmp_path))  # type: ignore[arg-type]
    assert named._session_model(THREAD) == "gpt-5.5-mini"


def test_a_session_file_at_the_size_limit_is_read_and_one_past_it_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = rollout(tmp_path, THREAD, "gpt-5.5")
    size = path.stat().st_size
    monkeypatch.setattr(codex_module, "SESSION_FILE_MAX_BYTES", size)
    assert codex(tmp_path)._session_model(THREAD) == "gpt-5.5"
    rollout(tmp_path, THREAD, "gpt-5.5", padding=1)
    assert codex(tmp_path)._session_model(THREAD) is None


def test_the_text_lists_one_model_a_line_then_where_the_agent_is() -> None:
    install = AgentInstall("claude-code", "/bin/claude", "2.1.197", True, "signed in (key)")
    found = AgentModels(
        install, (AgentModel("sonnet", "Sonnet", "claude-s-5"), AgentModel("opus", "Opus"))
    )
    text = agent_models_text(agent_models_view("claude-code", found))
    assert text.splitlines() == [
        "sonnet  Sonnet -> claude-s-5",
        "opus    Opus",
        "claude-code 2.1.197 at /bin/claude (from PATH): signed in (key)",
    ]
    silent = agent_models_view("codex", AgentModels(install, (), "Codex did not list them."))
    assert agent_models_text(silent).splitlines()[0] == "Codex did not list them."
    assert silent["models"] == [] and silent["note"] == "Codex did not list them."
