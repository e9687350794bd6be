"""Model turns benchmark: what streaming and our stream assembly cost per turn.

Against the fake provider on 127.0.0.1 (no network), for each backend, in this one process
(median of ``--turns`` after warm-up, contenders taking turns):

- **ours**: ``backend.turn`` as a review runs it: the request body built, POSTed with
  ``stream: true``, the server-sent events parsed and assembled into the answer, the
  answer read into a ``TurnResponse``;
- **bare**: the least any client does for the same answer: one httpx2 POST of a
  pre-encoded body that does not ask for a stream, and ``json.loads`` of the reply.

The ratio is ours / bare. The fake (SDK checks off) runs in this process too, and building
and writing the events is its work, counted on our side: a real server streams for free
from our point of view, so the ratio is an upper bound on what our client adds.

One more row, **anthropic 8 MiB**: an Anthropic answer of 8 MiB of text in 4 KiB deltas
(2,048 events, frames made before the clock starts) against the bare POST and
``json.loads`` of the same message as one body: the assembly must stay linear in the
number of deltas (adding each delta to the text so far once took 113 s for 32 MiB).

    .venv/bin/python bench/model_turns.py
    .venv/bin/python bench/model_turns.py --turns 100 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from artifactize.adapters.llm.backends import EnvModelBackends
from artifactize.ports.model import ToolSpec, TurnRequest, UserText
from tests.support.fake_provider import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    FakeProvider,
    Reply,
    anthropic_text,
    anthropic_tool_use,
    chat_tool_call,
    event_stream,
    openai_tool_call,
    raw,
    sse_frame,
)

TEXT = "Looking at the outline first. " * 40  # ~1.2 KB of text before the call
REPLIES: dict[str, tuple[str, Callable[[], Reply]]] = {
    "openai": (OPENAI_RESPONSES, lambda: openai_tool_call("c1", "read_docs", {"path": "a.md"})),
    "anthropic": (
        ANTHROPIC_MESSAGES,
        lambda: anthropic_tool_use("c1", "read_docs", {"path": "a.md"}, thinking=TEXT),
    ),
    "openai-chat": (
        OPENAI_CHAT,
        lambda: chat_tool_call("c1", "read_docs", {"path": "a.md"}, text=TEXT),
    ),
}
TOOLS = (ToolSpec("read_docs", "Read a file.", {"type": "object"}),)


async def measure(name: str, turns: int) -> dict[str, Any]:
    route, build = REPLIES[name]
    with FakeProvider(check_sdk=False) as fake:
        backends = EnvModelBackends(fake.env())
        backend = backends.open(name)
        request = TurnRequest("m1", "Be strict.", (UserText("Review the docs."),), TOOLS)
        bare_body = json.dumps({"model": "m1", "input": "Review the docs."}).encode()
        ours: list[float] = []
        bare: list[float] = []
        async with httpx2.AsyncClient(trust_env=False) as client:
            for round_number in range(turns + 2):
                fake.enqueue(build(), build())
                started = time.perf_counter()
                await backend.turn(request)
                middle = time.perf_counter()
                answer = await client.post(fake.base_url + route, content=bare_body)
                json.loads(answer.content)
                ended = time.perf_counter()
                if round_number >= 2:  # warm-up
                    ours.append(middle - started)
                    bare.append(ended - middle)
        await backend.aclose()
    ours_ms, bare_ms = statistics.median(ours) * 1000, statistics.median(bare) * 1000
    return {
        "backend": name,
        "oursMs": round(ours_ms, 3),
        "bareMs": round(bare_ms, 3),
        "ratio": round(ours_ms / bare_ms, 2),
    }


LARGE_TEXT_BYTES = 8 * 1024 * 1024
LARGE_DELTA_BYTES = 4096


def large_answer() -> tuple[list[bytes], bytes]:
    """The frames of an Anthropic stream of ``LARGE_TEXT_BYTES`` of text in deltas of
    ``LARGE_DELTA_BYTES``, and the same message as one JSON body."""
    message = dict(anthropic_text("x" * LARGE_TEXT_BYTES, model="m1").body)
    start = {**message, "content": [], "stop_reason": None}
    piece = "x" * LARGE_DELTA_BYTES
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}
    frames = [
        sse_frame("message_start", json.dumps({"type": "message_start", "message": start})),
        sse_frame(
            "content_block_start",
            json.dumps(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                }
            ),
        ),
    ]
    text = json.dumps({**delta, "delta": {"type": "text_delta", "text": piece}})
    frames += [sse_frame("content_block_delta", text)] * (LARGE_TEXT_BYTES // LARGE_DELTA_BYTES)
    frames.append(sse_frame("content_block_stop", '{"type":"content_block_stop","index":0}'))
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 1},
    }
    frames.append(sse_frame("message_delta", json.dumps(end)))
    frames.append(sse_frame("message_stop", '{"type":"message_stop"}'))
    return frames, json.dumps(message).encode()


async def measure_large(turns: int) -> dict[str, Any]:
    frames, body = large_answer()
    with FakeProvider(check_sdk=False) as fake:
        backend = EnvModelBackends(fake.env()).open("anthropic")
        request = TurnRequest("m1", "Be strict.", (UserText("Review the docs."),), TOOLS)
        ours: list[float] = []
        bare: list[float] = []
        async with httpx2.AsyncClient(trust_env=False) as client:
            for round_number in range(turns + 1):
                fake.enqueue(
                    event_stream(lambda: iter(frames), route=ANTHROPIC_MESSAGES),
                    raw(body, content_type="application/json", route=ANTHROPIC_MESSAGES),
                )
                started = time.perf_counter()
                answer = await backend.turn(request)
                middle = time.perf_counter()
                reply = await client.post(fake.base_url + ANTHROPIC_MESSAGES, content=b"{}")
                json.loads(reply.content)
                ended = time.perf_counter()
                assert len(answer.turn.text) == LARGE_TEXT_BYTES
                if round_number >= 1:  # warm-up
                    ours.append(middle - started)
                    bare.append(ended - middle)
        await backend.aclose()
    ours_ms, bare_ms = statistics.median(ours) * 1000, statistics.median(bare) * 1000
    return {
        "backend": "anthropic 8 MiB",
        "oursMs": round(ours_ms, 3),
        "bareMs": round(bare_ms, 3),
        "ratio": round(ours_ms / bare_ms, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    results = [anyio.run(measure, name, options.turns) for name in REPLIES]
    results.append(anyio.run(measure_large, max(1, options.turns // 10)))
    if options.json:
        print(json.dumps(results, indent=2))
        return
    for item in results:
        print(
            f"{item['backend']:15} ours {item['oursMs']:7.2f} ms  bare {item['bareMs']:7.2f} ms  "
            f"ratio {item['ratio']:.2f}x"
        )


if __name__ == "__main__":
    main()
