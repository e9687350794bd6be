"""A runtime eval's program as people read it: why it cannot be used (with the ``:/``
spelling of a relative path that leaves the eval's scope), and what it leads to, with a
warning when it is artifactize's own interpreter. Shared by ``verify`` (the Run records it),
``config check``, ``status`` and ``tools check``; light, so ``config check`` imports no
review machinery."""

from __future__ import annotations

from typing import TYPE_CHECKING

from artifactize.domain.project.program_paths import is_absolute_program, workspace_program
from artifactize.domain.project.workspace import Artifact
from artifactize.domain.tools.results import ToolError
from artifactize.ports.programs import ProgramFinder

if TYPE_CHECKING:  # a TypedDict, for annotations: config check needs no ports.documents
    from artifactize.ports.documents import ProgramDocument

COMMAND_UNAVAILABLE = "Runtime command is unavailable or outside the eval's scope: {command}"
# A runtime program that runs on artifactize's own interpreter sees artifactize's packages,
# not the project's: config check warns, and the Run records it (issue 24's false GREEN).
OWN_INTERPRETER = (
    "{path} runs on artifactize's own interpreter, not the project's: name the project's "
    'own, e.g. command = ":/.venv/bin/python" (docs/runtime-evals.md)'
)
# Said after COMMAND_UNAVAILABLE for a relative path: the form for a program of the project
# outside the eval's scope (domain/project/program_paths.py).
FROM_ROOT_HINT = " (a program elsewhere in the repository is named from its root: `:/{path}`)"
ARGUMENT_UNRESOLVED = "Runtime argument {arg} cannot be resolved: {reason}"


def program_document(programs: ProgramFinder, path: str) -> ProgramDocument:
    """What ``path`` leads to, with OWN_INTERPRETER when it is artifactize's own."""
    identity = programs.identity(path)
    warning = OWN_INTERPRETER.format(path=path) if identity.own_environment else None
    return {"path": path, "realPath": identity.real_path, "warning": warning}


def program_problem(target: Artifact, command: str, error: ToolError, *, windows: bool) -> str:
    """Why a runtime program cannot be used, with the ``:/`` form suggested for a relative
    path that leaves the eval's scope."""
    if workspace_program(command) is not None:
        return error.message
    message = COMMAND_UNAVAILABLE.format(command=command)
    if "/" not in command or is_absolute_program(command, windows=windows):
        return message
    parts: list[str] = target.folder.split("/") if target.folder else []
    for part in command.split("/"):
        if part == "..":
            if not parts:
                return message  # above the workspace root: nothing to suggest
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return message + FROM_ROOT_HINT.format(path="/".join(parts))
