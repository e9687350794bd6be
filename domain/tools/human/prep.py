"""Resolving what a Human tool touches, on every call and before anything runs.

Human argv and built-in targets are fixed, with scope placeholders only: ``{artifactPath}``
(the declaring Artifact's canonical target, folder or file) and ``{name}`` (an Artifact or a
mount alias of the owner), each optionally with ``/path`` (folders only) and, in command
argv, a ``--flag=`` prefix. Each call resolves them again: the Artifact named must still be
in the admitted scope, a ``/path`` must exist and be no symlink (walked without following
links), and every file Artifact of the scope must still be a regular file. Any failure
raises ``ToolError`` and nothing runs. Program lookup is the Agent tools' (``CommandResolver``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from artifactize.domain.declarations.model import ArtifactKind, CommandHumanTool
from artifactize.domain.declarations.templates import (
    ARTIFACT_PATH_PLACEHOLDER,
    Operand,
    TemplateError,
    parse_human_operand,
)
from artifactize.domain.project.scope import physical_path, working_directory
from artifactize.domain.project.workspace import Artifact
from artifactize.domain.tools.commands.prep import CommandResolver
from artifactize.domain.tools.locations import SPECIAL_REFUSED, resolve_location
from artifactize.domain.tools.results import ToolError
from artifactize.ports.filesystem import EntryKind

FILE_SUFFIX_REFUSED = "A file Artifact reference names the file itself; it takes no /path suffix."
INPUT_MISSING = "Artifact input does not exist: {path}"
SYMLINK_REFUSED = "Artifact symlinks are not supported."


class ProgramUnavailable(ToolError):
    """The command's program cannot be found or is not an executable file."""


@dataclass(frozen=True)
class HumanCommand:
    """A command tool's resolved command line, exactly as a call would run it (nothing runs).

    ``argv`` holds the arguments after the program; ``command_line`` is the whole argv.
    """

    program: str
    argv: tuple[str, ...]
    cwd: str
    repository: str

    @property
    def command_line(self) -> tuple[str, ...]:
        return (self.program, *self.argv)

    def to_json(self) -> dict[str, Any]:
        return {
            "repository": self.repository,
            "program": self.program,
            "argv": list(self.argv),
            "cwd": self.cwd,
        }


@dataclass(frozen=True)
class BuiltinTarget:
    """A built-in's target as a logical path relative to ``artifact`` (read, list, section)."""

    artifact: str
    path: str


@dataclass(frozen=True)
class HumanResolver:
    """Resolution for one registry scope; ``commands.environment`` is the real environment."""

    commands: CommandResolver

    def check_inputs(self, owner: Artifact) -> None:
        """The owner's folder, and every file Artifact target in scope, are still plain."""
        problem = self.commands.owner_problem(owner)
        if problem:
            raise ToolError(problem)
        for name in self.commands.scope:
            artifact = self.commands.workspace.artifact(name)
            if artifact.kind is ArtifactKind.FILE:
                problem = self.commands.owner_problem(artifact)
                if problem:
                    raise ToolError(problem)

    def command(self, owner: Artifact, tool: CommandHumanTool) -> HumanCommand:
        try:
            program = self.commands.program(owner, tool.command)
        except ToolError as exc:
            raise ProgramUnavailable(exc.message) from None
        argv = tuple(self.argument(owner, arg) for arg in tool.args)
        workspace = self.commands.workspace
        return HumanCommand(program, argv, working_directory(workspace, owner), workspace.root_path)

    def argument(self, owner: Artifact, arg: str) -> str:
        """A literal argument unchanged; a placeholder replaced by its checked absolute path."""
        operand = _operand(arg)
        if operand is None:
            return arg
        target = self._artifact(owner, operand.name)
        if target.kind is ArtifactKind.FILE and operand.suffix:
            raise ToolError(FILE_SUFFIX_REFUSED)
        return operand.flag + self.absolute(target, operand.suffix)

    def builtin_target(self, owner: Artifact, arg: str) -> BuiltinTarget:
        """``read``/``list``/``section``/``open`` target as a logical path (scope checked)."""
        operand = _operand(arg)
        if operand is None:
            return BuiltinTarget(owner.name, arg)
        if operand.flag:
            raise ToolError("Built-in targets take no --flag= prefix.")
        target = self._artifact(owner, operand.name)
        if target.kind is ArtifactKind.FILE:
            if operand.suffix:
                raise ToolError(FILE_SUFFIX_REFUSED)
            assert target.target is not None
            return BuiltinTarget(target.name, target.target)
        return BuiltinTarget(target.name, operand.suffix)

    def absolute(self, artifact: Artifact, path: str) -> str:
        """The absolute path of logical ``path`` from ``artifact`` (``""``: the Artifact's own
        target): it must stay in scope, exist, and be a regular file or folder, no link."""
        if not path:
            problem = self.commands.owner_problem(artifact)
            if problem:
                raise ToolError(problem)
            return physical_path(self.commands.workspace, artifact)
        location = resolve_location(
            self.commands.workspace, artifact.name, path, self.commands.scope
        )
        components = location.components
        if location.is_file_artifact_root:  # a mount of a file Artifact: its file, not folder
            assert location.artifact.target is not None
            components = (*components, location.artifact.target)
        kind = self.commands.kind_at(components)
        if kind is None:
            raise ToolError(INPUT_MISSING.format(path=path))
        if kind is EntryKind.SYMLINK:
            raise ToolError(SYMLINK_REFUSED)
        if kind is EntryKind.OTHER:
            raise ToolError(SPECIAL_REFUSED)
        return self.commands.absolute(components)

    def _artifact(self, owner: Artifact, name: str) -> Artifact:
        """``{artifactPath}`` is the owner; ``{name}`` an admitted Artifact or mount alias."""
        if name == ARTIFACT_PATH_PLACEHOLDER:
            return owner
        workspace = self.commands.workspace
        target = workspace.resolve_name(owner, name)
        if target is None:
            raise ToolError(f"Unknown Artifact or mount alias: {name}")
        if target.name not in self.commands.scope:
            raise ToolError(f"Artifact is outside this review: {target.name}")
        return target


def _operand(arg: str) -> Operand | None:
    try:
        return parse_human_operand(arg)
    except TemplateError as exc:
        raise ToolError(str(exc)) from None
