"""The Agent loop against a scripted backend: turns, tools, budgets, retries and repair."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from artifactize.domain.reviews.agent.loop import (
    BAD_ARGUMENTS,
    BUDGET_TOKENS,
    BUDGET_TOOL_CALLS,
    NO_CALLABLE_TOOL,
    REPEATED_CALL_ID,
    RETRY_WAIT_MAX_SECONDS,
    TURN_ATTEMPTS_MAX,
    AgentLoop,
    LoopSettings,
    serves_requested_model,
)
from artifactize.domain.reviews.failures import AgentFailure, FailureCode
from artifactize.domain.reviews.verdicts import VerdictValidator
from artifactize.domain.tools.results import ToolResult
from artifactize.ports.model import (
    FailureKind,
    ProviderFailure,
    ToolOutput,
    ToolSpec,
    TurnRequest,
    TurnResponse,
    UserText,
)
from tests.fakes.model import ScriptedBackend, call_reply, text_reply, verdict_reply

pytestmark = pytest.mark.anyio


PASS_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}
TOOLS = (ToolSpec("read_doc", "Read a file of doc.", {"type": "object"}),)


class Tools:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def __call__(self, name: str, args: Any) -> ToolResult:
        self.calls.append((name, args))
        return ToolResult.text(f"contents of {args.get('path')}")


def make_loop(
    replies: list[Any],
    *,
    max_tool_calls: int | None = None,
    max_tokens: int | None = None,
    model: str = "m1",
) -> tuple[AgentLoop, ScriptedBackend, Tools, list[float]]:
    backend = ScriptedBackend(list(replies))
    tools = Tools()
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    loop = AgentLoop(
        backend,
        tools,
        VerdictValidator(PASS_SCHEMA, None),
        LoopSettings(model, None, max_tool_calls, max_tokens),
        sleep=sleep,
    )
    return loop, backend, tools, sleeps


async def run(loop: AgentLoop) -> dict[str, Any]:
    return await loop.run("system", "review doc", TOOLS)


async def test_tool_call_then_verdict() -> None:
    loop, backend, tools, _ = make_loop(
        [
            call_reply(("c1", "read_doc", '{"path": "notes.txt"}')),
            verdict_reply("GREEN", summary="fine"),
        ]
    )
    assert await run(loop) == {"verdict": "GREEN", "summary": "fine"}
    assert tools.calls == [("read_doc", {"path": "notes.txt"})]
    second = backend.requests[1]
    output = second.items[-1]
    assert isinstance(output, ToolOutput)
    assert output.call_id == "c1" and not output.is_error
    assert output.content == ({"type": "text", "text": "contents of notes.txt"},)
    assert [a.to_json() for a in loop.trace.attempts] == [
        {"turn": 1, "attempt": 1, "usage": {"totalTokens": 10}},
        {"turn": 2, "attempt": 1, "usage": {"totalTokens": 10}},
    ]
    (record,) = loop.trace.tool_calls
    assert record.to_json()["isError"] is False and record.error is None
    assert backend.requests[0].tools == TOOLS and backend.requests[0].tool_choice == "auto"


async def test_red_verdict_is_a_result_not_a_failure() -> None:
    loop, *_ = make_loop([verdict_reply("RED")])
    assert await run(loop) == {"verdict": "RED"}


async def test_one_repair_turn_without_tools() -> None:
    loop, backend, _, _ = make_loop(
        [text_reply("It looks good to me."), verdict_reply(summary="ok")]
    )
    assert await run(loop) == {"verdict": "GREEN", "summary": "ok"}
    repair = backend.requests[1]
    assert repair.tools == TOOLS and repair.tool_choice == "none"
    last = repair.items[-1]
    assert isinstance(last, UserText)
    assert last.text.startswith("Your final response did not match the required schema:")


async def test_second_invalid_result_fails_invalid_result() -> None:
    loop, *_ = make_loop([text_reply("prose"), text_reply("still prose")])
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.code is FailureCode.INVALID_RESULT
    assert caught.value.message.startswith("Invalid final Agent result after one format repair: ")


async def test_schema_mismatch_is_repaired_too() -> None:
    loop, backend, _, _ = make_loop([verdict_reply("GREEN"), verdict_reply(summary="ok")])
    assert await run(loop) == {"verdict": "GREEN", "summary": "ok"}
    assert "instancePath" in backend.requests[1].items[-1].text  # type: ignore[union-attr]


async def test_tool_calls_while_repairing_fail() -> None:
    loop, *_ = make_loop([text_reply("prose"), call_reply(("c1", "read_doc", "{}"))])
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.code is FailureCode.INVALID_RESULT


@pytest.mark.parametrize("budget", [1, 2])
async def test_tool_call_budget_at_and_one_past(budget: int) -> None:
    calls = [call_reply((f"c{i}", "read_doc", "{}")) for i in range(budget)]
    loop, _, tools, _ = make_loop([*calls, verdict_reply(summary="x")], max_tool_calls=budget)
    assert (await run(loop))["verdict"] == "GREEN"
    assert len(tools.calls) == budget

    over = [call_reply((f"c{i}", "read_doc", "{}")) for i in range(budget + 1)]
    loop, _, tools, _ = make_loop([*over, verdict_reply(summary="x")], max_tool_calls=budget)
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.code is FailureCode.PROVIDER_BUDGET_EXCEEDED
    assert caught.value.message == BUDGET_TOOL_CALLS
    assert len(tools.calls) == budget  # earlier results are kept, the extra call never ran


async def test_token_budget_at_and_one_past() -> None:
    usage = {"totalTokens": 50}
    loop, *_ = make_loop(
        [
            call_reply(("c1", "read_doc", "{}"), usage=usage),
            text_reply('{"verdict":"RED"}', usage=usage),
        ],
        max_tokens=100,
    )
    assert await run(loop) == {"verdict": "RED"}
    loop, *_ = make_loop(
        [
            call_reply(("c1", "read_doc", "{}"), usage=usage),
            text_reply('{"verdict":"RED"}', usage={"totalTokens": 51}),
        ],
        max_tokens=100,
    )
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.message == BUDGET_TOKENS


async def test_invalid_arguments_count_and_return_an_error_result() -> None:
    loop, backend, tools, _ = make_loop(
        [call_reply(("c1", "read_doc", "[1, 2]")), verdict_reply(summary="x")], max_tool_calls=1
    )
    assert (await run(loop))["verdict"] == "GREEN"
    assert tools.calls == []
    output = backend.requests[1].items[-1]
    assert isinstance(output, ToolOutput) and output.is_error
    assert output.content[0]["text"] == BAD_ARGUMENTS
    assert loop.trace.tool_calls[0].arguments == "[1, 2]"


async def test_repeated_call_id_fails_closed() -> None:
    loop, _, tools, _ = make_loop(
        [call_reply(("c1", "read_doc", "{}")), call_reply(("c1", "read_doc", "{}"))]
    )
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.message == REPEATED_CALL_ID
    assert len(tools.calls) == 1


async def test_model_mismatch_is_a_provider_error() -> None:
    loop, *_ = make_loop([verdict_reply(summary="x", model="m2")])
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.message.startswith("Provider model mismatch: requested m1, received m2.")
    assert 'Declare the exact model ID the provider serves (model = "m2")' in caught.value.message
    assert caught.value.code is FailureCode.PROVIDER_ERROR
    assert loop.trace.reported_model == "m2"


@pytest.mark.parametrize(
    ("requested", "reported"),
    [
        ("gpt-5.1", "gpt-5.1"),
        ("gpt-5.1", "gpt-5.1-2025-11-13"),
        ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
        ("gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
    ],
)
def test_a_dated_snapshot_serves_the_requested_model(requested: str, reported: str) -> None:
    assert serves_requested_model(requested, reported)


@pytest.mark.parametrize(
    ("requested", "reported"),
    [
        ("gpt-5.1", "gpt-5.1-mini"),  # another model
        ("gpt-5.1", "gpt-5.1-2025-11"),  # not a full date
        ("gpt-5.1", "gpt-5.1-2025111"),  # seven digits
        ("gpt-5.1", "gpt-5.1-202511130"),  # nine digits
        ("gpt-5.1", "gpt-5.1-2025-11-13-preview"),
        ("gpt-5.1", "gpt-5.1_2025-11-13"),
        ("gpt-5.1-2025-11-13", "gpt-5.1"),  # a snapshot never matches its alias back
        ("gpt-5", "gpt-5.1-2025-11-13"),
        ("claude-sonnet-4-5", "claude-opus-4-5-20250929"),
    ],
)
def test_other_names_are_not_the_requested_model(requested: str, reported: str) -> None:
    assert not serves_requested_model(requested, reported)


async def test_a_snapshot_answer_runs_and_records_both_names() -> None:
    loop, *_ = make_loop(
        [
            call_reply(("c1", "read_doc", "{}"), model="m1-2025-11-13"),
            verdict_reply(summary="x", model="m1-20251113"),
        ]
    )
    assert (await run(loop))["verdict"] == "GREEN"
    assert loop.trace.reported_model == "m1-20251113"


async def test_incomplete_and_empty_tool_call_finishes() -> None:
    loop, *_ = make_loop(
        [TurnResponse("m1", "length", text_reply("x").turn, {}, "max_output_tokens")]
    )
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.message == "Provider response was incomplete: max_output_tokens."
    loop, *_ = make_loop([TurnResponse("m1", "tool_calls", text_reply("").turn, {})])
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.message == NO_CALLABLE_TOOL


async def test_transient_failures_are_retried_with_backoff() -> None:
    busy = ProviderFailure(FailureKind.TRANSIENT, "OpenAI returned HTTP 503: overloaded")
    loop, _, _, sleeps = make_loop([busy, busy, verdict_reply(summary="x")])
    assert (await run(loop))["verdict"] == "GREEN"
    assert sleeps == [0.25, 0.5]
    assert [a.error for a in loop.trace.attempts] == [busy.message, busy.message, None]
    assert [a.attempt for a in loop.trace.attempts] == [1, 2, 3]


async def test_retries_stop_after_the_last_attempt() -> None:
    busy = ProviderFailure(FailureKind.RATE_LIMIT, "slow down", retry_after=1.5)
    loop, _, _, sleeps = make_loop([busy] * TURN_ATTEMPTS_MAX)
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.code is FailureCode.RATE_LIMIT
    assert sleeps == [1.5] * (TURN_ATTEMPTS_MAX - 1)


@pytest.mark.parametrize(
    "failure",
    [
        ProviderFailure(FailureKind.AUTHENTICATION, "HTTP 401"),
        ProviderFailure(FailureKind.TRANSIENT, "exceeded your quota"),
        ProviderFailure(FailureKind.TRANSIENT, "reset", streamed=True),
        ProviderFailure(FailureKind.TRANSIENT, "reset", usage={"totalTokens": 3}),
    ],
)
async def test_failures_that_are_never_retried(failure: ProviderFailure) -> None:
    loop, backend, _, sleeps = make_loop([failure, verdict_reply(summary="x")])
    with pytest.raises(AgentFailure) as caught:
        await run(loop)
    assert caught.value.code is FailureCode(failure.kind.value)
    assert sleeps == [] and len(backend.requests) == 1


async def test_x_should_retry_decides_when_the_provider_says() -> None:
    never = ProviderFailure(FailureKind.TRANSIENT, "HTTP 503", should_retry=False)
    loop, backend, _, sleeps = make_loop([never, verdict_reply(summary="x")])
    with pytest.raises(AgentFailure):
        await run(loop)
    assert sleeps == [] and len(backend.requests) == 1
    forced = ProviderFailure(FailureKind.PROVIDER_ERROR, "HTTP 400", should_retry=True)
    loop, backend, _, sleeps = make_loop([forced, verdict_reply(summary="x")])
    assert (await run(loop))["verdict"] == "GREEN"
    assert sleeps == [0.25] and len(backend.requests) == 2


async def test_backoff_is_exponential_with_the_adapters_jitter() -> None:
    busy = ProviderFailure(FailureKind.TRANSIENT, "HTTP 500", backoff_jitter=0.8)
    loop, _, _, sleeps = make_loop([busy, busy, verdict_reply(summary="x")])
    await run(loop)
    assert sleeps == [0.25 * 0.8, 0.5 * 0.8]


@pytest.mark.parametrize(
    ("wait", "retried"),
    [(RETRY_WAIT_MAX_SECONDS, True), (RETRY_WAIT_MAX_SECONDS + 0.001, False), (3600.0, False)],
)
async def test_a_wait_over_the_limit_fails_at_once(wait: float, retried: bool) -> None:
    busy = ProviderFailure(FailureKind.RATE_LIMIT, "HTTP 429", retry_after=wait)
    loop, backend, _, sleeps = make_loop([busy, verdict_reply(summary="x")])
    if retried:
        assert (await run(loop))["verdict"] == "GREEN"
        assert sleeps == [wait]
    else:
        with pytest.raises(AgentFailure) as caught:
            await run(loop)
        assert caught.value.code is FailureCode.RATE_LIMIT
        assert sleeps == [] and len(backend.requests) == 1


async def test_a_wait_past_the_review_deadline_fails_at_once() -> None:
    busy = ProviderFailure(FailureKind.RATE_LIMIT, "HTTP 429", retry_after=30.0)
    loop, backend, _, sleeps = make_loop([busy, verdict_reply(summary="x")])
    with anyio.fail_after(10):  # the review's deadline: 10 s left, 30 s asked
        with pytest.raises(AgentFailure) as caught:
            await run(loop)
    assert caught.value.code is FailureCode.RATE_LIMIT
    assert sleeps == [] and len(backend.requests) == 1


async def test_the_caller_deadline_cancels_a_hanging_turn() -> None:
    async def hang(request: TurnRequest) -> TurnResponse:
        await anyio.sleep(60)
        raise AssertionError("not reached")

    loop, *_ = make_loop([hang])
    with anyio.move_on_after(0.05) as scope:
        await run(loop)
    assert scope.cancelled_caught
    assert len(loop.trace.attempts) == 0


async def test_json_tool_results_reach_the_model_as_blocks() -> None:
    loop, backend, _, _ = make_loop(
        [call_reply(("c1", "read_doc", "{}")), verdict_reply(summary="x")]
    )

    async def json_tool(name: str, args: Any) -> ToolResult:
        return ToolResult.json({"lines": 3})

    loop.call_tool = json_tool
    await run(loop)
    output = backend.requests[1].items[-1]
    assert isinstance(output, ToolOutput)
    assert output.content == ({"type": "json", "data": {"lines": 3}},)
    assert json.loads(loop.trace.tool_calls[0].result) == {
        "content": [{"type": "json", "data": {"lines": 3}}]
    }
