"""``CodingAgents`` by backend name: each agent's adapter over the same process port."""

from __future__ import annotations

from collections.abc import Mapping

from artifactize.adapters.coding_agents.claude_code import ClaudeCode
from artifactize.adapters.coding_agents.codex import Codex
from artifactize.ports.coding_agents import (
    CLAUDE_CODE_BACKEND,
    CODEX_BACKEND,
    AgentAnswer,
    AgentHost,
    AgentInstall,
    AgentProblem,
    AgentTask,
    CodingAgentError,
)
from artifactize.ports.process import ProcessRunner


class CliCodingAgents:
    def __init__(
        self, processes: ProcessRunner, environment: Mapping[str, str], workdir: str
    ) -> None:
        self._agents: dict[str, ClaudeCode | Codex] = {
            CLAUDE_CODE_BACKEND: ClaudeCode(processes, environment, workdir),
            CODEX_BACKEND: Codex(processes, environment, workdir),
        }

    def _agent(self, backend: str) -> ClaudeCode | Codex:
        agent = self._agents.get(backend)
        if agent is None:
            raise CodingAgentError(
                AgentProblem.UNAVAILABLE, f"Unknown coding-agent backend: {backend}."
            )
        return agent

    async def run(self, task: AgentTask, host: AgentHost) -> AgentAnswer:
        return await self._agent(task.backend).run(task, host)

    async def install(self, backend: str) -> AgentInstall:
        return await self._agent(backend).install()
