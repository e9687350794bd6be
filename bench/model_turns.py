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
    anthropic_tool_use,
    chat_tool_call,
    openai_tool_call,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    results = [anyio.run(measure, name, options.turns) for name in REPLIES]
    if options.json:
        print(json.dumps(results, indent=2))
        return
    for item in results:
        print(
            f"{item['backend']:12} ours {item['oursMs']:7.2f} ms  bare {item['bareMs']:7.2f} ms  "
            f"ratio {item['ratio']:.2f}x"
        )


if __name__ == "__main__":
    main()
