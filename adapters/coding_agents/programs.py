"""Finding a coding agent's program, asking it what it is (version, sign-in), and the
folders and files one run of it needs.

The program is the one the variable names (``ARTIFACTIZE_CLAUDE_CODE_PATH``,
``ARTIFACTIZE_CODEX_PATH``), else the first on the caller's ``PATH``. Version and sign-in
come from the agent's own commands, each bounded by PROBE_SECONDS and run through the
process port (own group, killed on timeout).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from artifactize.ports.coding_agents import AgentInstall, AgentProblem, CodingAgentError
from artifactize.ports.process import ProcessOutcome, ProcessRunner, ProcessSpec

PROBE_SECONDS = 20
STDERR_TAIL_CHARS = 400
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


def tail(text: bytes) -> str:
    """The last of stderr on one line, for a crash's message."""
    line = " ".join(text.decode("utf-8", "replace").split())
    return line[-STDERR_TAIL_CHARS:]


@contextlib.contextmanager
def private_folder(prefix: str) -> Iterator[str]:
    """An empty 0700 folder for one run, removed with what the agent left in it."""
    folder = tempfile.mkdtemp(prefix=prefix)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def agent_workdir(path: str) -> str:
    """The folder the agent runs in: empty of anything of ours, and the same for every run,
    because Claude Code keeps its sessions per working folder and a repair or follow-up
    resumes one."""
    Path(path).mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def private_file(folder: str, name: str, text: str) -> str:
    path = str(Path(folder) / name)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


async def installed(
    program: AgentProgram,
    processes: ProcessRunner,
    environment: Mapping[str, str],
    folder: str,
) -> tuple[str, str, str] | AgentInstall:
    """(path, source, version) of a usable program, or the ``AgentInstall`` that says why
    it is not usable (missing, too old)."""
    try:
        path, source = find_program(program, environment)
    except CodingAgentError as exc:
        return AgentInstall(program.backend, None, None, None, exc.message)
    shown = await probe(processes, (path, "--version"), environment, folder)
    version = parse_version(shown.stdout.decode("utf-8", "replace"))
    try:
        check_version(program, version)
    except CodingAgentError as exc:
        return AgentInstall(program.backend, path, None, None, exc.message, source)
    return path, source, ".".join(str(part) for part in version or ())


def how_it_ended(outcome: ProcessOutcome) -> str:
    if outcome.exit_code is not None:
        return f"exit code {outcome.exit_code}"
    return f"signal {outcome.signal}"
