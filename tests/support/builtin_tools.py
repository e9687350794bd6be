"""Calling built-in tools through a registry, checking the shape of every result."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from artifactize.domain.tools.registry import AgentToolRegistry
from artifactize.domain.tools.results import ToolResult


@dataclass
class Tools:
    """A registry plus an output root that no built-in call may create."""

    registry: AgentToolRegistry
    out: Path

    async def __call__(self, name: str, args: Any) -> ToolResult:
        result = await self.registry.call(name, args, str(self.out))
        assert not self.out.exists(), "a built-in call created its output root"
        return result

    async def ok(self, name: str, args: Any) -> dict[str, Any]:
        result = await self(name, args)
        content = result.to_json()["content"]
        assert not result.is_error, content
        assert "isError" not in result.to_json()
        assert len(content) == 1 and content[0]["type"] == "json", content
        data: dict[str, Any] = content[0]["data"]
        return data

    async def err(self, name: str, args: Any) -> str:
        result = await self(name, args)
        payload = result.to_json()
        assert result.is_error and payload["isError"] is True, payload
        assert len(payload["content"]) == 1 and payload["content"][0]["type"] == "text"
        text: str = payload["content"][0]["text"]
        return text

    async def image(self, name: str, args: Any) -> dict[str, Any]:
        result = await self(name, args)
        content = result.to_json()["content"]
        assert not result.is_error, content
        assert len(content) == 1 and content[0]["type"] == "image", content
        block: dict[str, Any] = content[0]
        return block
