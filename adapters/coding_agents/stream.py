"""JSON lines from a coding agent's stdout, parsed as they arrive.

The process port shows every chunk it reads to an observer (``ProcessSpec.observe_output``);
this splits stdout into lines, parses each as one JSON object and hands it on. A line that
is not a JSON object (an agent printing its own text to stdout, a banner) goes to
``malformed`` once, and everything after it is ignored. A line over EVENT_LINE_MAX_BYTES is
malformed too: no protocol event of ours is that large, and holding it would let an agent
fill the memory.

``StreamReader`` is what both agents' readers share: the events, the first problem (which
stops the run) and the malformed line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import anyio

from artifactize.ports.coding_agents import AgentHost, AgentProblem, CodingAgentError
from artifactize.ports.process import STDOUT, ProcessOutcome, ProcessRunner, ProcessSpec

EVENT_LINE_MAX_BYTES = 16 * 1024 * 1024


class EventLines:
    def __init__(
        self,
        event: Callable[[Mapping[str, Any]], None],
        malformed: Callable[[str], None],
    ) -> None:
        self._event = event
        self._malformed = malformed
        self._buffer = bytearray()
        self._broken = False

    def observe(self, stream: str, chunk: bytes) -> None:
        if stream != STDOUT or self._broken:
            return
        self._buffer += chunk
        while not self._broken:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > EVENT_LINE_MAX_BYTES:
                    self._fail(f"a line over {EVENT_LINE_MAX_BYTES} bytes")
                return
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._line(line)

    def close(self) -> None:
        """The stream ended: a last line without a newline still counts."""
        if self._buffer and not self._broken:
            line = bytes(self._buffer)
            self._buffer.clear()
            self._line(line)

    def _line(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").strip()
        if not text:
            return
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            self._fail(text)
            return
        self._event(value)

    def _fail(self, text: str) -> None:
        self._broken = True
        self._malformed(text)


async def run_streamed(
    processes: ProcessRunner,
    spec: ProcessSpec,
    event: Callable[[Mapping[str, Any]], None],
    malformed: Callable[[str], None],
) -> ProcessOutcome:
    """``spec`` run through the process port with its stdout read as JSON lines as they
    come (``spec.observe_output`` is replaced)."""
    import dataclasses

    lines = EventLines(event, malformed)
    outcome = await processes.run(dataclasses.replace(spec, observe_output=lines.observe))
    lines.close()
    return outcome


def counters(
    raw: Mapping[str, Any], names: tuple[tuple[str, str], ...], total: tuple[str, ...]
) -> dict[str, int]:
    """An agent's usage object under the port's keys (``names``: theirs to ours), only the
    counters it reported; ``totalTokens`` is the sum of ``total`` when any was reported."""
    usage: dict[str, int] = {}
    for source, key in names:
        value = raw.get(source)
        if isinstance(value, int) and not isinstance(value, bool):
            usage[key] = value
    if "inputTokens" in usage or "outputTokens" in usage:
        usage["totalTokens"] = sum(usage.get(key, 0) for key in total)
    return usage


class StreamReader:
    """One run's events as they arrive (``event``, each agent's own); the first problem stops
    the run, and a line that is not the agent's JSON is one (``MALFORMED``, with ``{line}``)."""

    MALFORMED: ClassVar[str] = ""

    def __init__(self, host: AgentHost) -> None:
        self.host = host
        self.events: list[Mapping[str, Any]] = []
        self.problem: CodingAgentError | None = None
        self.cancel: anyio.CancelScope | None = None  # set while the agent runs

    def stop(self, problem: CodingAgentError) -> None:
        if self.problem is None:
            self.problem = problem
        if self.cancel is not None:
            self.cancel.cancel()

    def event(self, event: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def settled(self, outcome: ProcessOutcome | None) -> ProcessOutcome:
        """The run's outcome, or the problem that stopped it, raised (call it once the run's
        resources are let go)."""
        if self.problem is not None:
            raise self.problem
        assert outcome is not None  # only a problem cancels the run
        return outcome

    def malformed(self, line: str) -> None:
        self.stop(CodingAgentError(AgentProblem.FAILED, self.MALFORMED.format(line=line[:120])))
