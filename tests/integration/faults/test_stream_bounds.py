"""Bounded streams (issue 26, item 3): a model's streamed answer is bounded in total, per
event and in nesting depth, and refused past a bound as a PROVIDER_ERROR naming the bound.

Every stream here is real: the suite's fake provider writes server-sent events over HTTP on
127.0.0.1, made as they are sent (so a runaway stream of 120 MiB never sits in the test's
memory). The backends read them through ``post_turn``; the end-to-end cases run
``artifactize verify`` as a process and sample its resident memory with psutil.

The field reports these reproduce: 30 events of 4 MiB streamed 120 MiB and ended GREEN
(peak RSS 650 MiB); a 200,000-deep nested event ended ERROR ``AGENT_ERROR`` with a
``RecursionError``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.llm.backends import EnvModelBackends
from artifactize.adapters.llm.http import MAX_STREAM_BYTES, MAX_STREAM_EVENT_BYTES, MIB
from artifactize.kernel.bounded_json import JSON_NESTING_MAX
from artifactize.ports.model import (
    FailureKind,
    ModelBackend,
    ProviderFailure,
    TurnRequest,
    UserText,
)
from tests.support.fake_provider import (
    ANTHROPIC_MESSAGES,
    EVENT_BUILDERS,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    FakeProvider,
    Reply,
    anthropic_text,
    chat_text,
    event_stream,
    openai_text,
    sse_frame,
)
from tests.support.peak_rss import Measured, run_measuring_peak_rss

REPO_ROOT = Path(__file__).resolve().parents[3]
GREEN = '{"verdict": "GREEN"}'
ROUTES = {"openai": OPENAI_RESPONSES, "anthropic": ANTHROPIC_MESSAGES, "openai-chat": OPENAI_CHAT}
PROVIDERS = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "openai-chat": "OpenAI-compatible server",
}
TEXT_REPLIES: dict[str, Callable[[str], Reply]] = {
    "openai": openai_text,
    "anthropic": anthropic_text,
    "openai-chat": chat_text,
}
DEEP = 200_000  # the field report's depth
RUNAWAY_EVENTS, RUNAWAY_EVENT_BYTES = 30, 4 * MIB  # the field report's 120 MiB
PEAK_GROWTH_MAX = 4 * MAX_STREAM_BYTES
"""What a runaway stream may add to a ``verify``'s peak RSS over the same ``verify`` with a
small answer: "within a few times the bound". Unbounded, the field run grew by ~550 MiB."""

pytestmark = pytest.mark.anyio


# --- streams ------------------------------------------------------------------------------


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def frame(route: str, event: dict[str, Any]) -> bytes:
    """An event as the route's API frames it (Chat Completions sends no event names)."""
    return sse_frame(None if route == OPENAI_CHAT else str(event.get("type")), compact(event))


def stream_with(
    backend: str, inserted: Callable[[], Iterator[bytes]], *, after: int = 1, text: str = GREEN
) -> Reply:
    """The backend's normal stream of a ``text`` answer with the frames of ``inserted()``
    sent after its first ``after`` events."""
    route = ROUTES[backend]
    body = TEXT_REPLIES[backend](text).body
    events = EVENT_BUILDERS[route]({**body, "model": "m-1"})

    def frames() -> Iterator[bytes]:
        for event in events[:after]:
            yield frame(route, event)
        yield from inserted()
        for event in events[after:]:
            yield frame(route, event)
        if route == OPENAI_CHAT:
            yield b"data: [DONE]\n\n"

    return event_stream(frames, route=route)


def hostile_event(backend: str, data: str) -> Callable[[], Iterator[bytes]]:
    """One event whose data is ``data`` as sent (not necessarily JSON)."""
    name = None if backend == "openai-chat" else "ping"
    return lambda: iter([sse_frame(name, data)])


def deeply_nested(depth: int) -> str:
    return '{"type":"ping","padding":' + "[" * depth + "]" * depth + "}"


def request() -> TurnRequest:
    return TurnRequest(
        model="m-1", instructions="Be strict.", items=(UserText("Review."),), tools=()
    )


@contextlib.asynccontextmanager
async def opened(fake: FakeProvider, backend: str) -> AsyncIterator[ModelBackend]:
    opened_backend = EnvModelBackends(fake.env()).open(backend)
    try:
        yield opened_backend
    finally:
        await opened_backend.aclose()


async def failure_of(fake: FakeProvider, backend: str, answer: Reply) -> ProviderFailure:
    fake.enqueue(answer)
    async with opened(fake, backend) as model:
        with pytest.raises(ProviderFailure) as caught:
            await model.turn(request())
    return caught.value


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


# --- the total bound ----------------------------------------------------------------------


def filled_to(total: int) -> Reply:
    """An OpenAI Responses stream of a GREEN answer whose events' data add up to exactly
    ``total`` bytes: text deltas of filler (which the final event makes redundant) fill the
    gap, each well under the per-event bound."""
    route = OPENAI_RESPONSES
    events = EVENT_BUILDERS[route]({**openai_text(GREEN).body, "model": "m-1"})
    used = sum(len(compact(event).encode()) for event in events)
    template = {
        "type": "response.output_text.delta",
        "item_id": "msg_fake",
        "output_index": 0,
        "content_index": 0,
        "delta": "",
        "logprobs": [],
    }
    empty = len(compact(template))
    piece = 4 * MIB
    fillers: list[int] = []
    gap = total - used
    while gap > 0:
        size = min(piece, gap - empty)
        assert size >= 0, "the gap is too small for a filler event"
        fillers.append(size)
        gap -= empty + size
    assert gap == 0

    def inserted() -> Iterator[bytes]:
        for size in fillers:
            yield frame(route, {**template, "delta": " " * size})

    return stream_with("openai", inserted, after=2)


async def test_a_stream_of_exactly_the_total_bound_is_read(fake: FakeProvider) -> None:
    fake.enqueue(filled_to(MAX_STREAM_BYTES))
    async with opened(fake, "openai") as model:
        answer = await model.turn(request())
    assert answer.turn.text == GREEN


async def test_one_byte_past_the_total_bound_is_a_provider_error(fake: FakeProvider) -> None:
    failed = await failure_of(fake, "openai", filled_to(MAX_STREAM_BYTES + 1))
    assert failed.kind is FailureKind.PROVIDER_ERROR
    assert failed.message == "OpenAI response is malformed: the streamed answer exceeds 32 MiB."
    assert MAX_STREAM_BYTES == 32 * MIB  # the bound of an answer sent as one JSON object


@pytest.mark.parametrize("backend", list(ROUTES))
async def test_a_runaway_stream_stops_at_the_total_bound(fake: FakeProvider, backend: str) -> None:
    """Thirty 4 MiB events, each under the per-event bound: refused at the ninth, and the
    server sees the client go away instead of writing all 120 MiB."""
    sent: list[int] = []
    name = None if backend == "openai-chat" else "ping"

    def runaway() -> Iterator[bytes]:
        for number in range(RUNAWAY_EVENTS):
            sent.append(number)
            yield sse_frame(name, compact({"type": "ping", "pad": " " * RUNAWAY_EVENT_BYTES}))

    failed = await failure_of(fake, backend, stream_with(backend, runaway))
    assert failed.kind is FailureKind.PROVIDER_ERROR
    assert failed.message == (
        f"{PROVIDERS[backend]} response is malformed: the streamed answer exceeds 32 MiB."
    )
    assert len(sent) < RUNAWAY_EVENTS


# --- the per-event bound ------------------------------------------------------------------


@pytest.mark.parametrize("backend", list(ROUTES))
async def test_an_event_past_the_event_bound_is_a_provider_error(
    fake: FakeProvider, backend: str
) -> None:
    data = compact({"type": "ping", "pad": " " * MAX_STREAM_EVENT_BYTES})
    failed = await failure_of(fake, backend, stream_with(backend, hostile_event(backend, data)))
    assert failed.kind is FailureKind.PROVIDER_ERROR
    assert failed.message == (
        f"{PROVIDERS[backend]} response is malformed: a stream event exceeds 8 MiB."
    )


# --- what the bounded reader refuses ------------------------------------------------------


@pytest.mark.parametrize("backend", list(ROUTES))
async def test_nesting_at_the_reader_limit_is_read_and_past_it_refused(
    fake: FakeProvider, backend: str
) -> None:
    # The event object itself is one level, so its padding may nest one level less.
    fake.enqueue(stream_with(backend, hostile_event(backend, deeply_nested(JSON_NESTING_MAX - 1))))
    async with opened(fake, backend) as model:
        assert (await model.turn(request())).turn.text == GREEN
    for depth in (JSON_NESTING_MAX, DEEP):
        answer = stream_with(backend, hostile_event(backend, deeply_nested(depth)))
        failed = await failure_of(fake, backend, answer)
        assert failed.kind is FailureKind.PROVIDER_ERROR
        name = "message" if backend == "openai-chat" else "ping"
        assert failed.message == (
            f"{PROVIDERS[backend]} response is malformed: stream event {name!r} is not JSON "
            f"we accept: nesting deeper than {JSON_NESTING_MAX} levels."
        )


@pytest.mark.parametrize("backend", list(ROUTES))
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_non_finite_numbers_in_an_event_are_refused(
    fake: FakeProvider, backend: str, constant: str
) -> None:
    data = '{"type":"ping","usage":{"output_tokens":' + constant + "}}"
    failed = await failure_of(fake, backend, stream_with(backend, hostile_event(backend, data)))
    assert failed.kind is FailureKind.PROVIDER_ERROR
    assert failed.message.endswith(f"is not JSON we accept: {constant} is not a JSON number.")


# --- end to end: verify ---------------------------------------------------------------------


def agent_repository(root: Path) -> Path:
    """One Artifact ``doc`` with an Anthropic Agent eval ``doc/review`` and no tools."""
    repo = root / "repo"
    repo.mkdir()
    (repo / "notes.txt").write_text("The answer is 42.\n", encoding="utf-8")
    profile = '{ kind = "agent", backend = "anthropic", model = "m-1", timeout_ms = 120000 }'
    (repo / "index.artf").write_text(
        'name = "doc"\n[evals.review]\ntitle = "The notes state the answer"\n'
        f'profile = {profile}\npayload.instruction = "Check that {{doc}} states the answer."\n',
        encoding="utf-8",
    )
    return repo


def verify(root: Path, fake: FakeProvider, state: str = "state") -> Measured:
    """``verify`` of the eval with its own state (so nothing is reused), measured."""
    repo = root / "repo"
    line = [sys.executable, "-m", "artifactize.entrypoints.cli.app", "--repo", str(repo)]
    line += ["--state-dir", str(root / state), "--json", "verify", "doc/review"]
    env = {**os.environ, **fake.env(), "ARTIFACTIZE_REMOTE": "off"}
    return run_measuring_peak_rss(line, env=env, cwd=REPO_ROOT, timeout=300)


def the_request(done: Measured) -> dict[str, Any]:
    run = json.loads(done.stdout)
    (request,) = run["requests"]
    return dict(request)


def text_deltas(count: int, size: int) -> Callable[[], Iterator[bytes]]:
    """``count`` Anthropic text deltas of ``size`` spaces into the first block: an answer
    that grows by all of them, as the field's did."""
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}

    def frames() -> Iterator[bytes]:
        for _ in range(count):
            event = {**delta, "delta": {"type": "text_delta", "text": " " * size}}
            yield frame(ANTHROPIC_MESSAGES, event)

    return frames


def test_verify_of_a_runaway_stream_ends_provider_error_in_bounded_memory(
    tmp_path: Path, fake: FakeProvider
) -> None:
    agent_repository(tmp_path)
    fake.enqueue(anthropic_text(GREEN))
    baseline = verify(tmp_path, fake)
    assert baseline.returncode == 0, baseline.stderr
    assert the_request(baseline)["status"] == "GREEN"

    runaway = text_deltas(RUNAWAY_EVENTS, RUNAWAY_EVENT_BYTES)
    fake.enqueue(stream_with("anthropic", runaway, after=2))
    done = verify(tmp_path, fake, "runaway")
    request = the_request(done)
    assert (request["status"], request["errorCode"]) == ("ERROR", "PROVIDER_ERROR"), request
    assert request["error"] == (
        "Anthropic response is malformed: the streamed answer exceeds 32 MiB."
    )
    assert len(fake.posts()) == 2, "a refused stream is not asked again"
    growth = done.peak_rss - baseline.peak_rss
    print(f"peak RSS: {baseline.peak_mib:.0f} MiB small answer, {done.peak_mib:.0f} MiB runaway")
    assert growth < PEAK_GROWTH_MAX, (baseline.peak_mib, done.peak_mib)


def test_verify_of_a_deeply_nested_event_ends_provider_error(
    tmp_path: Path, fake: FakeProvider
) -> None:
    agent_repository(tmp_path)
    fake.enqueue(stream_with("anthropic", hostile_event("anthropic", deeply_nested(DEEP))))
    done = verify(tmp_path, fake)
    request = the_request(done)
    assert (request["status"], request["errorCode"]) == ("ERROR", "PROVIDER_ERROR"), request
    assert request["error"] == (
        "Anthropic response is malformed: stream event 'ping' is not JSON we accept: "
        f"nesting deeper than {JSON_NESTING_MAX} levels."
    )
    assert "RecursionError" not in done.stdout + done.stderr
