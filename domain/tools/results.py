"""``ToolResult``: what every tool call returns, success, authored error and system error alike.

A result is 1-32 content blocks. An error result is exactly one nonblank text block, so a
reviewer always sees a message it can act on, never a stack trace or stderr.

A built-in's json block is serialized once, where its size is checked
(``bounded_json_result``), and the result keeps that compact text (``data_texts``): the MCP
content mapping and the audit summary reuse it instead of encoding the same data again
(each encoding of an 80-line ``read`` page took about 0.04 ms, bench/mcp.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from artifactize.domain.text import compact_json

CONTENT_BLOCKS_MAX = 32
# The result summary an audit keeps of each tool call (a review's Tool log, `mcp log`).
AUDIT_SUMMARY_MAX_CHARS = 4096
BUILTIN_RESULT_MAX_BYTES = 512 * 1024
BLANK_ERROR_TEXT = "Tool failed."
LAUNCH_BLOCK_TYPE = "launch"  # Human launch results only (``HumanToolResult``)


class ToolError(Exception):
    """A call that ends in an error result; the message is what the reviewer reads."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ToolResult:
    content: tuple[Mapping[str, Any], ...]
    is_error: bool = False
    # ``compact_json`` of each block's ``data``, where its maker has it (None elsewhere)
    data_texts: tuple[str | None, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= len(self.content) <= CONTENT_BLOCKS_MAX:
            raise ValueError(f"a tool result holds 1-{CONTENT_BLOCKS_MAX} content blocks")
        if self.is_error and not _is_single_nonblank_text(self.content):
            raise ValueError("an error result holds exactly one nonblank text block")
        if any(block.get("type") == LAUNCH_BLOCK_TYPE for block in self.content):
            raise ValueError("Agent tool results never hold launch blocks; those are Human")

    @classmethod
    def error(cls, message: str) -> ToolResult:
        text = message if message.strip() else BLANK_ERROR_TEXT
        return cls(({"type": "text", "text": text},), is_error=True)

    @classmethod
    def json(cls, data: Any) -> ToolResult:
        return cls(({"type": "json", "data": data},))

    @classmethod
    def text(cls, text: str) -> ToolResult:
        return cls(({"type": "text", "text": text},))

    @property
    def error_text(self) -> str | None:
        return str(self.content[0]["text"]) if self.is_error else None

    def to_json(self) -> dict[str, Any]:
        """The normalized form: ``isError`` only when true."""
        data: dict[str, Any] = {"content": [dict(block) for block in self.content]}
        if self.is_error:
            data["isError"] = True
        return data

    def _kept(self, index: int) -> str | None:
        return self.data_texts[index] if index < len(self.data_texts) else None

    def data_json(self, index: int) -> str:
        """``compact_json`` of block ``index``'s ``data``, the kept text when there is one."""
        kept = self._kept(index)
        return kept if kept is not None else compact_json(self.content[index].get("data"))

    def compact_json(self) -> str:
        """``compact_json(self.to_json())``, with every kept data text reused as it is."""
        blocks = []
        for index, block in enumerate(self.content):
            kept = self._kept(index)
            if kept is not None and list(block) == ["type", "data"]:
                blocks.append(f'{{"type":{compact_json(block["type"])},"data":{kept}}}')
            else:
                blocks.append(compact_json(dict(block)))
        error = ',"isError":true' if self.is_error else ""
        return f'{{"content":[{",".join(blocks)}]{error}}}'

    def audit_summary(self) -> str:
        """The compact JSON of the result, cut to AUDIT_SUMMARY_MAX_CHARS: what an audit
        keeps of a call, in a review and in ``artifactize mcp`` alike."""
        text = self.compact_json()
        if len(text) <= AUDIT_SUMMARY_MAX_CHARS:
            return text
        return text[: AUDIT_SUMMARY_MAX_CHARS - 1] + "…"


def _is_single_nonblank_text(content: Sequence[Mapping[str, Any]]) -> bool:
    return (
        len(content) == 1
        and content[0].get("type") == "text"
        and bool(str(content[0].get("text", "")).strip())
    )


def bounded_json_result(data: Mapping[str, Any], text: str | None = None) -> ToolResult:
    """A built-in's one json block, refused when its compact form exceeds 512 KiB.

    ``text``: that compact form when the built-in already has it (``compact_json(data)``
    exactly; ``list`` assembles it from its page's, ``merged_json_objects``)."""
    if text is None:
        text = compact_json(data)
    if (len(text) if text.isascii() else len(text.encode("utf-8"))) > BUILTIN_RESULT_MAX_BYTES:
        raise ToolError("Built-in result exceeds 512 KiB; narrow the path or range.")
    return ToolResult(({"type": "json", "data": dict(data)},), data_texts=(text,))
