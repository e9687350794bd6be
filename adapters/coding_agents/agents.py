"""``CodingAgents`` by backend name: each agent's adapter over the same process port.

An agent's adapter (and with it the MCP SDK, starlette and uvicorn of its tool server) is
imported when a review first asks for that agent, so a Run of runtime evals, or one on the
API backends, never pays for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.ports.coding_agents import (
    CLAUDE_CODE_BACKEND,
    CODEX_BACKEND,
    AgentAnswer,
    AgentHost,
    AgentInstall,
    AgentModels,
    AgentProblem,
    AgentTask,
    CodingAgentError,
)
from artifactize.ports.process import ProcessRunner


class CliCodingAgents:
    def __init__(
        self, processes: ProcessRunner, environment: Mapping[str, str], workdir: str
    ) -> None:
        self._inputs = (processes, dict(environment), workdir)  # each agent's
        self._agents: dict[str, Any] = {}

    def _agent(self, backend: str) -> Any:
        found = self._agents.get(backend)
        if found is not None:
            return found
        if backend == CLAUDE_CODE_BACKEND:
            from artifactize.adapters.coding_agents.claude_code import ClaudeCode

            found = ClaudeCode(*self._inputs)
        elif backend == CODEX_BACKEND:
            from artifactize.adapters.coding_agents.codex import Codex

            found = Codex(*self._inputs)
        else:
            raise CodingAgentError(
                AgentProblem.UNAVAILABLE, f"Unknown coding-agent backend: {backend}."
            )
        self._agents[backend] = found
        return found

    async def run(self, task: AgentTask, host: AgentHost) -> AgentAnswer:
        answer: AgentAnswer = await self._agent(task.backend).run(task, host)
        return answer

    async def install(self, backend: str) -> AgentInstall:
        found: AgentInstall = await self._agent(backend).install()
        return found

    async def models(self, backend: str) -> AgentModels:
        found: AgentModels = await self._agent(backend).models()
        return found
