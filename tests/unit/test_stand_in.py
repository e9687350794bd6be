"""The stand-in model's turns: each declared Agent tool once, in the request's order, then
GREEN with the least result the prompt's GREEN schema accepts (both APIs)."""

from __future__ import annotations

import json
from typing import Any

from artifactize.entrypoints.stand_in import (
    ANTHROPIC_MESSAGES,
    OPENAI_RESPONSES,
    answer,
    green_result,
    least_instance,
)

SCHEMA = {"type": "object", "required": ["pattern"], "properties": {"pattern": {"type": "string"}}}
PROMPT = 'GREEN result schema:\n{"type": "object", "required": ["approved", "note"], ' + (
    '"properties": {"approved": {"const": true}, "note": {"type": "string", "minLength": 12}}}'
)


def openai_body(called: list[str]) -> dict[str, Any]:
    return {
        "model": "gpt-5.1",
        "input": [
            {"role": "user", "content": PROMPT},
            *({"type": "function_call", "name": name, "call_id": name} for name in called),
        ],
        "tools": [
            {"type": "function", "name": "read_docs", "parameters": {"type": "object"}},
            {"type": "function", "name": "search_docs", "parameters": SCHEMA},
        ],
    }


def final(events: list[dict[str, Any]]) -> dict[str, Any]:
    response: dict[str, Any] = events[-1]["response"]
    return response


def test_openai_each_tool_once_then_green() -> None:
    first, said = answer(OPENAI_RESPONSES, openai_body([]), 1)
    (call,) = final(first)["output"]
    assert (call["name"], json.loads(call["arguments"])) == ("read_docs", {})
    assert said == "stand-in: calls read_docs {} (no model reviewed anything)"
    second, _ = answer(OPENAI_RESPONSES, openai_body(["read_docs"]), 2)
    (call,) = final(second)["output"]
    assert (call["name"], json.loads(call["arguments"])) == ("search_docs", {"pattern": "stand-in"})
    last, said = answer(OPENAI_RESPONSES, openai_body(["read_docs", "search_docs"]), 3)
    (message,) = final(last)["output"]
    result = json.loads(message["content"][0]["text"])
    assert result == {"approved": True, "note": "stand-in!!!!"}  # says what it is
    assert said.startswith("stand-in: answers GREEN")
    assert final(last)["model"] == "gpt-5.1"  # the model asked for, as a provider answers


def test_anthropic_each_tool_once_then_green() -> None:
    body: dict[str, Any] = {
        "model": "claude-x",
        "system": PROMPT,
        "messages": [{"role": "user", "content": "review"}],
        "tools": [{"name": "read_docs", "input_schema": {"type": "object"}}],
    }
    events, _ = answer(ANTHROPIC_MESSAGES, body, 1)
    start = next(e for e in events if e["type"] == "content_block_start")
    assert start["content_block"]["name"] == "read_docs"
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    body["messages"].append(
        {"role": "assistant", "content": [{"type": "tool_use", "name": "read_docs", "id": "c"}]}
    )
    events, _ = answer(ANTHROPIC_MESSAGES, body, 2)
    text = "".join(
        e["delta"]["text"] for e in events if e.get("delta", {}).get("type") == "text_delta"
    )
    assert json.loads(text) == {"approved": True, "note": "stand-in!!!!"}
    assert events[-2]["delta"]["stop_reason"] == "end_turn"


def test_without_a_schema_in_the_prompt_the_answer_is_a_plain_green() -> None:
    assert green_result({"input": "no schema here"}) == {"verdict": "GREEN"}
    assert least_instance({"type": "array", "minItems": 2, "items": {"enum": ["a"]}}) == ["a", "a"]
    assert least_instance({"type": "integer", "exclusiveMinimum": 3}) == 4
