"""Saved conversations: events round-trip to the Agent loop's items; ``session show`` text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from artifactize.domain.reviews.agent.conversations import (
    ConversationError,
    conversation_text,
    item_event,
    item_from_event,
    load_conversation,
    review_event,
    trace_events,
)
from artifactize.domain.reviews.agent.loop import Attempt, LoopTrace
from artifactize.ports.model import (
    AssistantTurn,
    ConversationItem,
    ToolCall,
    ToolOutput,
    ToolSpec,
    UserText,
)

AT = "2026-11-30T01:02:03.000000000Z"
ITEMS: list[ConversationItem] = [
    UserText("Review doc."),
    AssistantTurn(
        "",
        (ToolCall("c1", "read_doc", '{"path":"a.md"}'),),
        ({"type": "reasoning", "encrypted_content": "xyz"},),
    ),
    ToolOutput("c1", ({"type": "text", "text": "# A"}, {"type": "json", "data": {"n": 1}}), False),
    ToolOutput("c2", ({"type": "text", "text": "No such file."},), True),
    AssistantTurn('{"verdict": "GREEN"}'),
]


@pytest.mark.parametrize("item", ITEMS)
def test_items_round_trip_through_json(item: ConversationItem) -> None:
    event = json.loads(json.dumps(item_event(item, AT)))
    assert item_from_event(event) == item


def test_unknown_roles_are_refused() -> None:
    with pytest.raises(ConversationError):
        item_from_event({"kind": "message", "role": "system", "text": "x"})


def header_events() -> list[dict[str, Any]]:
    header = {
        "sessionId": "s1",
        "requestId": "run-a-1",
        "evalId": "doc/review",
        "backend": "openai",
        "model": "m1",
    }
    trace = LoopTrace(attempts=[Attempt(1, 1, {"totalTokens": 5})], items=list(ITEMS))
    events = [review_event(header, "system text", [ToolSpec("read_doc", "Read.", {})], AT)]
    events += trace_events(trace, 0, AT)
    events.append({"kind": "end", "at": AT, "status": "GREEN", "errorCode": None, "error": None})
    return events


def test_load_replays_messages_and_knows_a_finished_review() -> None:
    events = header_events()
    saved = load_conversation(events)
    assert saved.items == tuple(ITEMS) and saved.finished
    assert saved.header["instructions"] == "system text"
    assert not load_conversation(events[:-1]).finished
    with pytest.raises(ConversationError):
        load_conversation(events[1:])


def test_show_text_and_summary() -> None:
    events = [
        *header_events(),
        {"kind": "send", "at": AT, "text": "Why?"},
        {"kind": "answer", "at": AT, "text": "Because."},
    ]
    text = conversation_text(events, summary=False)
    assert '[tool call c1] read_doc {"path":"a.md"}' in text
    assert "[tool result c2 (error)] No such file." in text
    assert "[tool result c1] # A; <json block>" in text
    summary = conversation_text(events, summary=True)
    assert "[user]" not in summary
    assert summary.splitlines() == [
        "Agent review of doc/review [run-a-1] with openai/m1, session s1",
        "End: GREEN",
        "> follow-up: Why?",
        "< answer: Because.",
    ]
