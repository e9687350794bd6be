"""Unit rules of the coding-agent work: the event-line reader of an agent's stdout, the
``verify --comment`` limit, and the coding-agent loop's budgets and repair with a scripted
``CodingAgents`` (no process)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from artifactize.adapters.coding_agents.stream import EVENT_LINE_MAX_BYTES, EventLines
from artifactize.domain.reviews.agent.coding import CodingAgentLoop
from artifactize.domain.reviews.agent.loop import LoopSettings
from artifactize.domain.reviews.failures import AgentFailure, FailureCode
from artifactize.domain.reviews.run.policy import COMMENT_MAX_CHARS, check_comment
from artifactize.domain.reviews.verdicts import VerdictValidator
from artifactize.domain.tools.results import ToolResult
from artifactize.ports.coding_agents import (
    AgentAnswer,
    AgentHost,
    AgentInstall,
    AgentModels,
    AgentTask,
)
from artifactize.ports.process import STDERR, STDOUT

pytestmark = pytest.mark.anyio


def reader() -> tuple[EventLines, list[Mapping[str, Any]], list[str]]:
    events: list[Mapping[str, Any]] = []
    bad: list[str] = []
    return EventLines(events.append, bad.append), events, bad


def test_events_are_read_across_chunks_and_stderr_is_ignored() -> None:
    lines, events, bad = reader()
    lines.observe(STDOUT, b'{"type": "a"}\n{"ty')
    lines.observe(STDERR, b"not json at all\n")
    lines.observe(STDOUT, b'pe": "b"}\n\n{"type": "c"}')
    lines.close()
    assert [e["type"] for e in events] == ["a", "b", "c"] and bad == []


def test_a_line_that_is_not_a_json_object_breaks_the_stream_once() -> None:
    lines, events, bad = reader()
    lines.observe(STDOUT, b'Welcome!\n{"type": "a"}\n[1]\n')
    assert events == [] and bad == ["Welcome!"]


def test_a_line_at_the_limit_is_held_and_one_past_it_is_refused() -> None:
    lines, _, bad = reader()
    lines.observe(STDOUT, b"x" * EVENT_LINE_MAX_BYTES)
    assert bad == []
    lines.observe(STDOUT, b"x")
    assert bad == [f"a line over {EVENT_LINE_MAX_BYTES} bytes"]


def test_a_comment_at_the_limit_is_kept_and_one_past_it_refused() -> None:
    assert check_comment("x" * COMMENT_MAX_CHARS)
    with pytest.raises(ValueError, match=f"at most {COMMENT_MAX_CHARS}"):
        check_comment("x" * (COMMENT_MAX_CHARS + 1))
    for bad in ("", "   ", "two\nlines"):
        with pytest.raises(ValueError):
            check_comment(bad)


class Agents:
    """A scripted agent: each run calls the listed tools, reports usage, then answers."""

    def __init__(self, *runs: tuple[list[str], Mapping[str, int], str]) -> None:
        self.runs = list(runs)
        self.tasks: list[AgentTask] = []

    async def run(self, task: AgentTask, host: AgentHost) -> AgentAnswer:
        self.tasks.append(task)
        calls, usage, text = self.runs.pop(0)
        host.model_reported(task.model)
        host.usage(usage)
        for name in calls:
            await host.call_tool(name, {"path": "a"})
        return AgentAnswer(text, f"session-{len(self.tasks)}", task.model, dict(usage))

    async def install(self, backend: str) -> AgentInstall:
        raise NotImplementedError

    async def models(self, backend: str) -> AgentModels:
        raise NotImplementedError


async def tool(name: str, arguments: Any) -> ToolResult:
    return ToolResult.text(f"{name} ok")


def loop(
    agents: Agents, max_tool_calls: int | None = None, max_tokens: int | None = None
) -> CodingAgentLoop:
    settings = LoopSettings("m", None, max_tool_calls, max_tokens)
    return CodingAgentLoop(
        agents, "claude-code", None, 60000, tool, VerdictValidator(None, None), settings
    )


async def test_tool_calls_up_to_the_budget_run_and_one_past_it_ends_the_review() -> None:
    usage = {"totalTokens": 10}
    ok = loop(Agents((["read_a", "read_a"], usage, '{"verdict": "GREEN"}')), max_tool_calls=2)
    assert await ok.run("sys", "review", ()) == {"verdict": "GREEN"}
    assert [call.name for call in ok.trace.tool_calls] == ["read_a", "read_a"]
    over = loop(Agents((["read_a"] * 3, usage, '{"verdict": "GREEN"}')), max_tool_calls=2)
    with pytest.raises(AgentFailure) as failure:
        await over.run("sys", "review", ())
    assert failure.value.code == FailureCode.PROVIDER_BUDGET_EXCEEDED


async def test_tokens_at_the_budget_pass_and_past_it_end_the_review() -> None:
    at = loop(Agents(([], {"totalTokens": 50}, '{"verdict": "RED"}')), max_tokens=50)
    assert await at.run("sys", "review", ()) == {"verdict": "RED"}
    past = loop(Agents(([], {"totalTokens": 51}, '{"verdict": "RED"}')), max_tokens=50)
    with pytest.raises(AgentFailure) as failure:
        await past.run("sys", "review", ())
    assert failure.value.code == FailureCode.PROVIDER_BUDGET_EXCEEDED


async def test_one_repair_resumes_the_agent_session_and_a_tool_call_while_repairing_fails() -> None:
    agents = Agents(([], {}, "fine"), ([], {}, '{"verdict": "GREEN"}'))
    repaired = loop(agents)
    assert await repaired.run("sys", "review", ()) == {"verdict": "GREEN"}
    assert [task.resume for task in agents.tasks] == [None, "session-1"]
    assert [a.usage for a in repaired.trace.attempts] == [{}, {}]  # none reported: honest
    calling = loop(Agents(([], {}, "fine"), (["read_a"], {}, '{"verdict": "GREEN"}')))
    with pytest.raises(AgentFailure) as failure:
        await calling.run("sys", "review", ())
    assert failure.value.code == FailureCode.INVALID_RESULT
