"""``HumanToolResult``: what a Human tool call returns, and how an ``output`` run becomes one.

Human results are their own type, not ``ToolResult``: their blocks are ``text`` and
``launch`` only, ``isError`` is always written, and a failed ``output`` run keeps its bounded
stdout and stderr next to the exit status. A ``launch`` block exists only here, so an Agent
result can never carry one (``ToolResult`` refuses it too).

An ``output`` run's stdout and stderr are each captured up to ``HUMAN_CAPTURE_MAX_BYTES``,
decoded lossily and cleaned like runtime output, and each becomes one text block of at most
``HUMAN_TEXT_BLOCK_MAX_BYTES`` UTF-8 bytes; a block that was cut ends with the explicit
truncation marker. stderr gets a block only when it is not empty, labelled ``stderr:``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from artifactize.domain.tools.commands.text_output import (
    TEXT_BLOCK_MAX_BYTES,
    clean_output,
    decode_lossy,
    truncate_utf8,
)
from artifactize.ports.process import ProcessOutcome

HUMAN_CAPTURE_MAX_BYTES = 128 * 1024
HUMAN_TEXT_BLOCK_MAX_BYTES = TEXT_BLOCK_MAX_BYTES
HUMAN_CONTENT_BLOCKS_MAX = 32
STDERR_LABEL = "stderr:\n"
HUMAN_BLOCK_TYPES = ("text", "launch")

LAUNCHED_BLOCK: Mapping[str, Any] = {"type": "launch", "launched": True}

EXITED_UNSUCCESSFULLY = "Human tool exited unsuccessfully ({status})."
TIMED_OUT = "Human tool timed out."
CANCELLED = "Human tool call was cancelled."
NOT_LAUNCHED = "Human tool could not be launched."
EXECUTION_FAILED = "Human tool execution failed: {reason}"
BLANK_ERROR_TEXT = "Human tool failed."


@dataclass(frozen=True)
class HumanToolResult:
    """1-32 blocks, each ``text`` or ``launch``; a launch result is that one block alone."""

    content: tuple[Mapping[str, Any], ...]
    is_error: bool = False

    def __post_init__(self) -> None:
        if not 1 <= len(self.content) <= HUMAN_CONTENT_BLOCKS_MAX:
            raise ValueError(f"a Human tool result holds 1-{HUMAN_CONTENT_BLOCKS_MAX} blocks")
        kinds = [block.get("type") for block in self.content]
        if any(kind not in HUMAN_BLOCK_TYPES for kind in kinds):
            raise ValueError(f"Human tool results hold only {' and '.join(HUMAN_BLOCK_TYPES)}")
        if "launch" in kinds and (len(kinds) != 1 or self.is_error):
            raise ValueError("a launch block is the whole of a successful launch result")

    @classmethod
    def launched(cls) -> HumanToolResult:
        return cls((dict(LAUNCHED_BLOCK),))

    @classmethod
    def text(cls, text: str) -> HumanToolResult:
        return cls(({"type": "text", "text": text},))

    @classmethod
    def error(cls, message: str) -> HumanToolResult:
        text = message if message.strip() else BLANK_ERROR_TEXT
        return cls(({"type": "text", "text": text},), is_error=True)

    @property
    def is_launch(self) -> bool:
        return self.content[0].get("type") == "launch"

    @property
    def error_text(self) -> str | None:
        """The first block's text of an error result (the message, or the exit status)."""
        return str(self.content[0]["text"]) if self.is_error else None

    @property
    def text_content(self) -> str:
        """Every text block joined by newlines: what ``request tool`` prints as text."""
        return "\n".join(str(b["text"]) for b in self.content if b.get("type") == "text")

    def to_json(self) -> dict[str, Any]:
        """``{"content": [...], "isError": bool}``; unlike Agent results, always with isError."""
        return {"content": [dict(block) for block in self.content], "isError": self.is_error}


def exit_status(outcome: ProcessOutcome) -> str:
    """How the program ended, in the OS's words: ``exit status: 3`` or ``signal: 9``."""
    if outcome.signal is not None:
        return f"signal: {outcome.signal}"
    if outcome.exit_code is not None:
        return f"exit status: {outcome.exit_code}"
    return "exit status unknown"


def _block(prefix: str, data: bytes, captured_all: bool) -> dict[str, Any]:
    text = truncate_utf8(
        prefix + clean_output(decode_lossy(data)),
        HUMAN_TEXT_BLOCK_MAX_BYTES,
        force=not captured_all,
    )
    return {"type": "text", "text": text}


def output_result(outcome: ProcessOutcome) -> HumanToolResult:
    """The result of a finished ``output`` run (or one that never started or timed out)."""
    if outcome.spawn_error is not None:
        return HumanToolResult.error(EXECUTION_FAILED.format(reason=outcome.spawn_error))
    if outcome.timed_out:
        return HumanToolResult.error(TIMED_OUT)
    failed = outcome.exit_code != 0
    prefix = ""
    if failed:
        prefix = EXITED_UNSUCCESSFULLY.format(status=exit_status(outcome))
        prefix += "\n" if outcome.stdout else ""
    blocks = [_block(prefix, outcome.stdout, not outcome.stdout_truncated)]
    if outcome.stderr:
        blocks.append(_block(STDERR_LABEL, outcome.stderr, not outcome.stderr_truncated))
    return HumanToolResult(tuple(blocks), is_error=failed)
