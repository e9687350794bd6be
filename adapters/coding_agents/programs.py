"""Finding a coding agent's program and asking it what it is (version, sign-in).

The program is the one the variable names (``ARTIFACTIZE_CLAUDE_CODE_PATH``,
``ARTIFACTIZE_CODEX_PATH``), else the first on the caller's ``PATH``. Version and sign-in
come from the agent's own commands, each bounded by PROBE_SECONDS and run through the
process port (own group, killed on timeout).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from artifactize.ports.coding_agents import AgentProblem, CodingAgentError
from artifactize.ports.process import ProcessOutcome, ProcessRunner, ProcessSpec

PROBE_SECONDS = 20
VERSION_PATTERN = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class AgentProgram:
    """Which agent, how to install it, and the oldest version whose switches we rely on."""

    backend: str
    title: str
    command: str
    variable: str
    package: str
    minimum: tuple[int, int, int]

    @property
    def install_hint(self) -> str:
        return f"install it (npm install -g {self.package}) or name its program in {self.variable}"


def find_program(program: AgentProgram, environment: Mapping[str, str]) -> tuple[str, str]:
    """(path, source): the program the variable names, else the one on ``PATH``. Raises
    CodingAgentError(UNAVAILABLE) saying how to install it."""
    named = environment.get(program.variable, "").strip()
    if named:
        if Path(named).is_file() and os.access(named, os.X_OK):
            return named, program.variable
        raise CodingAgentError(
            AgentProblem.UNAVAILABLE,
            f"{program.variable} names {named}, which is not an executable file: "
            f"{program.install_hint}.",
        )
    found = shutil.which(program.command, path=environment.get("PATH"))
    if found is None:
        raise CodingAgentError(
            AgentProblem.UNAVAILABLE,
            f"{program.title} is not installed ({program.command} is not on PATH): "
            f"{program.install_hint}.",
        )
    return found, "PATH"


def parse_version(text: str) -> tuple[int, int, int] | None:
    match = VERSION_PATTERN.search(text)
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def check_version(program: AgentProgram, version: tuple[int, int, int] | None) -> None:
    """Raises UNAVAILABLE when the version is unknown or older than ``program.minimum``."""
    wanted = ".".join(str(part) for part in program.minimum)
    if version is None:
        raise CodingAgentError(
            AgentProblem.UNAVAILABLE,
            f"{program.title} did not report its version; artifactize needs {wanted} or "
            f"newer: {program.install_hint}.",
        )
    if version < program.minimum:
        shown = ".".join(str(part) for part in version)
        raise CodingAgentError(
            AgentProblem.UNAVAILABLE,
            f"{program.title} {shown} is too old: artifactize needs {wanted} or newer to "
            f"switch its built-in tools off; upgrade it (npm install -g {program.package}).",
        )


async def probe(
    processes: ProcessRunner,
    argv: tuple[str, ...],
    environment: Mapping[str, str],
    cwd: str,
) -> ProcessOutcome:
    return await processes.run(
        ProcessSpec(argv=argv, cwd=cwd, env=dict(environment), timeout_ms=PROBE_SECONDS * 1000)
    )
