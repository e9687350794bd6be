"""Saved Agent conversations: events to and from the items of the Agent loop.

A review saves ``review`` (who, what, the system preamble and tools), one ``message`` per
conversation item, one ``attempt`` per provider request and ``end`` (how it ended). A
follow-up (``session send``) appends ``send``, its messages and attempts, and ``answer``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from artifactize.domain.reviews.agent.loop import LoopTrace
from artifactize.ports.model import (
    AssistantTurn,
    ConversationItem,
    ToolCall,
    ToolOutput,
    ToolSpec,
    UserText,
)

KINDS = ("review", "message", "attempt", "end", "send", "answer")


class ConversationError(ValueError):
    """A saved conversation that cannot be continued (unfinished, corrupt, or foreign)."""


def item_event(item: ConversationItem, at: str) -> dict[str, Any]:
    if isinstance(item, UserText):
        return {"kind": "message", "at": at, "role": "user", "text": item.text}
    if isinstance(item, AssistantTurn):
        return {
            "kind": "message",
            "at": at,
            "role": "assistant",
            "text": item.text,
            "toolCalls": [
                {"callId": c.call_id, "name": c.name, "arguments": c.arguments}
                for c in item.tool_calls
            ],
            "providerItems": [dict(raw) for raw in item.provider_items],
        }
    return {
        "kind": "message",
        "at": at,
        "role": "tool",
        "callId": item.call_id,
        "content": [dict(block) for block in item.content],
        "isError": item.is_error,
    }


def item_from_event(event: Mapping[str, Any]) -> ConversationItem:
    role = event.get("role")
    if role == "user":
        return UserText(str(event["text"]))
    if role == "assistant":
        calls = tuple(
            ToolCall(str(c["callId"]), str(c["name"]), str(c["arguments"]))
            for c in event.get("toolCalls", [])
        )
        raw = tuple(dict(r) for r in event.get("providerItems", []))
        return AssistantTurn(str(event.get("text", "")), calls, raw)
    if role == "tool":
        content = tuple(dict(b) for b in event["content"])
        return ToolOutput(str(event["callId"]), content, bool(event.get("isError")))
    raise ConversationError(f"Unknown message role in a saved conversation: {role!r}")


def review_event(
    header: Mapping[str, Any], instructions: str, tools: Sequence[ToolSpec], at: str
) -> dict[str, Any]:
    return {
        "kind": "review",
        "at": at,
        **header,
        "instructions": instructions,
        "tools": [
            {"name": t.name, "description": t.description, "inputSchema": dict(t.input_schema)}
            for t in tools
        ],
    }


def trace_events(trace: LoopTrace, first_item: int, at: str) -> list[dict[str, Any]]:
    """The messages from ``first_item`` on, then every attempt of the trace."""
    events = [item_event(item, at) for item in trace.items[first_item:]]
    events.extend({"kind": "attempt", "at": at, **a.to_json()} for a in trace.attempts)
    return events


@dataclass(frozen=True)
class SavedConversation:
    header: Mapping[str, Any]  # the ``review`` event
    items: tuple[ConversationItem, ...]
    finished: bool


def load_conversation(events: Sequence[Mapping[str, Any]]) -> SavedConversation:
    if not events or events[0].get("kind") != "review":
        raise ConversationError("The saved conversation has no review header.")
    items = tuple(item_from_event(e) for e in events if e.get("kind") == "message")
    finished = any(e.get("kind") == "end" for e in events)
    return SavedConversation(events[0], items, finished)


def conversation_text(events: Sequence[Mapping[str, Any]], summary: bool) -> str:
    """What ``session show`` prints: who said what, tool calls and results, the ending."""
    lines: list[str] = []
    for event in events:
        kind = event.get("kind")
        if kind == "review":
            lines.append(
                f"Agent review of {event.get('evalId')} [{event.get('requestId')}] with "
                f"{event.get('backend')}/{event.get('model')}, session {event.get('sessionId')}"
            )
        elif kind == "message" and not summary:
            lines.extend(_message_lines(event))
        elif kind == "send":
            lines.append(f"> follow-up: {event.get('text')}")
        elif kind == "answer":
            lines.append(
                f"< answer: {event['text']}"
                if event.get("text") is not None
                else f"< no answer: {event.get('error')}"
            )
        elif kind == "end":
            ending = event.get("status")
            detail = event.get("error")
            lines.append(f"End: {ending}" + (f" — {detail}" if detail else ""))
    return "\n".join(lines)


def _message_lines(event: Mapping[str, Any]) -> list[str]:
    role = event.get("role")
    if role == "user":
        return ["[user] " + str(event.get("text", ""))]
    if role == "assistant":
        out = ["[assistant] " + str(event.get("text", ""))] if event.get("text") else []
        out.extend(
            f"[tool call {c['callId']}] {c['name']} {c['arguments']}"
            for c in event.get("toolCalls", [])
        )
        return out
    blocks = event.get("content", [])
    shown = "; ".join(
        str(b.get("text", ""))[:200] if b.get("type") == "text" else f"<{b.get('type')} block>"
        for b in blocks
    )
    marker = " (error)" if event.get("isError") else ""
    return [f"[tool result {event.get('callId')}{marker}] {shown}"]
