"""Could the three model backends be thin adapters over the official ``openai`` and
``anthropic`` SDKs? The two measurements the decision rests on, in one script:

- **import cost**: a fresh interpreter importing our backends (``adapters.llm.backends``,
  httpx2 included), against one importing ``openai`` and one importing ``anthropic`` (both
  SDKs run on httpx2 too), each the best of ``--runs``; the ratio is SDK / ours. An Agent
  review pays it once per process.
- **the stream bounds**: each SDK, given our own httpx2 client and ``max_retries=0``, reads
  the hostile streams our backends refuse (``docs/json-limits.md``): an event holding
  ``NaN``, an event nested 200,000 deep, one event of 9 MiB, and 30 events of 4 MiB
  (120 MiB), served as real server-sent events by the suite's fake provider on 127.0.0.1.
  For each: what the SDK did (read it all, or the exception), and the bytes of text it
  handed over.

    .venv/bin/python bench/sdk_backends.py
    .venv/bin/python bench/sdk_backends.py --runs 5 --json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fake_provider import (
    ANTHROPIC_MESSAGES,
    OPENAI_RESPONSES,
    FakeProvider,
    event_stream,
    sse_frame,
)

MIB = 1024 * 1024
OURS = "import artifactize.adapters.llm.backends"
IMPORTS = {"ours": OURS, "openai": "import openai", "anthropic": "import anthropic"}
Frames = Callable[[], Iterator[bytes]]


def import_seconds(statement: str, runs: int) -> float:
    """The best wall time of a fresh interpreter running ``statement``."""
    best = float("inf")
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True)
        best = min(best, time.perf_counter() - began)
    return best


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def openai_stream(inserted: Frames) -> Frames:
    """A Responses stream: created, the inserted events (as text deltas), completed."""
    response: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": "m-1",
        "output": [],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
    }

    def frames() -> Iterator[bytes]:
        created = {"type": "response.created", "sequence_number": 0, "response": response}
        yield sse_frame("response.created", compact(created))
        yield from inserted()
        done = {"type": "response.completed", "sequence_number": 1, "response": response}
        yield sse_frame("response.completed", compact(done))

    return frames


def anthropic_stream(inserted: Frames) -> Frames:
    """A Messages stream: start, a text block, the inserted deltas, stop."""
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m-1",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }

    def frames() -> Iterator[bytes]:
        yield sse_frame("message_start", compact({"type": "message_start", "message": message}))
        block = {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        }
        yield sse_frame("content_block_start", compact(block))
        yield from inserted()
        yield sse_frame("content_block_stop", compact({"type": "content_block_stop", "index": 0}))
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        }
        yield sse_frame("message_delta", compact(delta))
        yield sse_frame("message_stop", compact({"type": "message_stop"}))

    return frames


def deltas(provider: str, texts: list[str], padding: str = "") -> Frames:
    """Text delta events of ``texts``, each with ``padding`` (raw JSON) as an extra field."""
    extra = f',"padding":{padding}' if padding else ""

    def frames() -> Iterator[bytes]:
        for text in texts:
            if provider == "openai":
                head = {
                    "type": "response.output_text.delta",
                    "sequence_number": 1,
                    "item_id": "m",
                    "output_index": 0,
                    "content_index": 0,
                    "logprobs": [],
                    "delta": text,
                }
                name = "response.output_text.delta"
            else:
                head = {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                }
                name = "content_block_delta"
            yield sse_frame(name, compact(head)[:-1] + extra + "}")

    return frames


CASES: dict[str, Callable[[str], Frames]] = {
    "NaN in an event": lambda provider: deltas(provider, ["x"], "NaN"),
    "an event nested 200,000 deep": lambda provider: deltas(
        provider, ["x"], "[" * 200_000 + "]" * 200_000
    ),
    "one event of 9 MiB": lambda provider: deltas(provider, [" " * 9 * MIB]),
    "30 events of 4 MiB": lambda provider: deltas(provider, [" " * 4 * MIB] * 30),
}


async def read_with_sdk(provider: str, base_url: str) -> int:
    """Stream one answer through the SDK; the characters of text it handed over."""
    text = 0
    async with httpx2.AsyncClient() as client:
        if provider == "openai":
            import openai

            sdk = openai.AsyncOpenAI(
                api_key="k", base_url=base_url, max_retries=0, http_client=client
            )
            stream = await sdk.responses.create(model="m-1", input="hi", stream=True)
            async for event in stream:
                text += (
                    len(getattr(event, "delta", "") or "")
                    if event.type.endswith("text.delta")
                    else 0
                )
        else:
            import anthropic

            sdk2 = anthropic.AsyncAnthropic(
                api_key="k", base_url=base_url, max_retries=0, http_client=client
            )
            stream2 = await sdk2.messages.create(
                model="m-1",
                max_tokens=10,
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
            )
            async for event2 in stream2:
                if event2.type == "content_block_delta":
                    text += len(getattr(event2.delta, "text", "") or "")
    return text


def probe(provider: str, case: str) -> str:
    route = OPENAI_RESPONSES if provider == "openai" else ANTHROPIC_MESSAGES
    wrap = openai_stream if provider == "openai" else anthropic_stream
    with FakeProvider(check_sdk=False) as fake:
        fake.enqueue(event_stream(wrap(CASES[case](provider)), route=route))
        try:
            text = anyio.run(read_with_sdk, provider, fake.base_url)
        except Exception as exc:  # what the SDK raised is the finding
            return f"{type(exc).__name__}: {str(exc)[:60]}"
    return f"read all of it, {text / MIB:.1f} MiB of text"


def main() -> None:
    options = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    options.add_argument("--runs", type=int, default=3)
    options.add_argument("--json", action="store_true")
    args = options.parse_args()
    seconds = {name: import_seconds(statement, args.runs) for name, statement in IMPORTS.items()}
    bounds = {f"{p}: {case}": probe(p, case) for p in ("openai", "anthropic") for case in CASES}
    figures = {
        "importSeconds": {name: round(value, 3) for name, value in seconds.items()},
        "importRatio": {
            name: round(seconds[name] / seconds["ours"], 2) for name in ("openai", "anthropic")
        },
        "bounds": bounds,
    }
    if args.json:
        print(json.dumps(figures))
        return
    for name, value in seconds.items():
        ratio = f", {value / seconds['ours']:.2f}x ours" if name != "ours" else ""
        print(f"import {name}: {value:.3f} s{ratio}")
    for name, outcome in bounds.items():
        print(f"{name}: {outcome}")


if __name__ == "__main__":
    main()
