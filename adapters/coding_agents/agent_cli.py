"""What both coding-agent backends (Claude Code, Codex) share: their inputs, one run of the
agent with its stdout read as it comes, and the shape of ``install`` and ``models``
(program found and recent enough, then the agent's own sign-in check or model list)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import anyio

from artifactize.adapters.coding_agents.programs import (
    AgentProgram,
    how_it_ended,
    installed,
    private_folder,
)
from artifactize.adapters.coding_agents.stream import StreamReader, run_streamed
from artifactize.ports.coding_agents import AgentInstall, AgentModel, AgentModels, AgentTask
from artifactize.ports.process import ProcessOutcome, ProcessRunner, ProcessSpec


class AgentCli:
    """A coding agent's CLI over the process port, run with ``environment``; ``workdir`` is
    where its runs' folder lies. A backend names its ``PROGRAM``, the prefix of its private
    folders (``FOLDER``) and the note for a model list it could not read
    (``NO_MODEL_LIST``, with ``{version}`` and ``{how}``)."""

    PROGRAM: ClassVar[AgentProgram]
    FOLDER: ClassVar[str]
    NO_MODEL_LIST: ClassVar[str]

    def __init__(
        self, processes: ProcessRunner, environment: Mapping[str, str], workdir: str
    ) -> None:
        self.processes = processes
        self.environment = dict(environment)
        self.workdir = workdir

    async def _stream(
        self,
        argv: Sequence[str],
        cwd: str,
        env: dict[str, str],
        task: AgentTask,
        reader: StreamReader,
    ) -> ProcessOutcome | None:
        """The agent run on ``task``'s prompt and deadline, its stdout read by ``reader``; the
        run stops at the reader's first problem (then None: ``reader.settled`` raises it)."""
        with anyio.CancelScope() as scope:
            reader.cancel = scope
            spec = ProcessSpec(
                argv=tuple(argv),
                cwd=cwd,
                env=env,
                timeout_ms=task.timeout_ms,
                stdin=task.prompt.encode("utf-8"),
            )
            return await run_streamed(self.processes, spec, reader.event, reader.malformed)
        return None

    async def install(self) -> AgentInstall:
        with private_folder(self.FOLDER) as folder:
            return await self._install(folder)

    async def _install(self, folder: str) -> AgentInstall:
        found = await installed(self.PROGRAM, self.processes, self.environment, folder)
        return found if isinstance(found, AgentInstall) else await self._signed_in(folder, *found)

    async def _signed_in(self, folder: str, program: str, source: str, text: str) -> AgentInstall:
        """The install of a usable ``program`` (found through ``source``, version ``text``),
        with whether the agent is signed in."""
        raise NotImplementedError

    async def models(self) -> AgentModels:
        with private_folder(self.FOLDER) as folder:
            install = await self._install(folder)
            if install.program is None or install.version is None:
                return AgentModels(install)
            outcome = await self._ask_models(install.program, folder)
        listed = self._listed_models(outcome.stdout.decode("utf-8", "replace"))
        if listed is None:
            note = self.NO_MODEL_LIST.format(version=install.version, how=how_it_ended(outcome))
            return AgentModels(install, (), note)
        return AgentModels(install, listed)

    async def _ask_models(self, program: str, folder: str) -> ProcessOutcome:
        """The agent asked for its models (nothing sent to a model), in ``folder``."""
        raise NotImplementedError

    def _listed_models(self, stdout: str) -> tuple[AgentModel, ...] | None:
        """The models in the answer, or None when it lists none readably."""
        raise NotImplementedError
