"""Resolving what a command will run, before anything runs: the program, reference operands
and execution paths, each through the pinned no-follow walk and within the admitted scope."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from artifactize.domain.declarations.templates import TemplateError, parse_operand
from artifactize.domain.logical_paths import logical_path_problem
from artifactize.domain.project.program_paths import is_absolute_program, workspace_program
from artifactize.domain.project.scope import working_directory
from artifactize.domain.project.workspace import Artifact, Workspace
from artifactize.domain.tools.locations import open_directory_at, resolve_location
from artifactize.domain.tools.results import ToolError
from artifactize.ports.filesystem import EntryKind, Filesystem, FilesystemError
from artifactize.ports.programs import ProgramFinder

EXECUTABLE_UNAVAILABLE = "Tool executable is unavailable: {command}"
EXECUTABLE_OUTSIDE = "Tool executable path is unavailable or outside scope."
# The one rule for ``:/path`` programs (domain/project/program_paths.py), named in every refusal.
WORKSPACE_PROGRAM_RULE = (
    "a program from the workspace root (:/path) is reached through plain folders, never a "
    "symbolic link, and is an executable file or a symbolic link to one as its last part"
)
WORKSPACE_PROGRAM_REFUSED = "Program {command}: {problem}; {rule}."


@dataclass(frozen=True)
class CommandResolver:
    workspace: Workspace
    filesystem: Filesystem
    programs: ProgramFinder
    environment: Mapping[str, str]
    scope: tuple[str, ...]

    def absolute(self, components: tuple[str, ...]) -> str:
        root = self.workspace.root_path.rstrip("/")
        return "/".join((root, *components)) if components else self.workspace.root_path

    def kind_at(self, components: tuple[str, ...]) -> EntryKind | None:
        """Kind of the entry at physical ``components`` (no-follow), or None when missing."""
        if not components:
            return EntryKind.DIRECTORY
        try:
            with open_directory_at(
                self.filesystem, self.workspace.root_path, components[:-1]
            ) as parent:
                return parent.entry(components[-1]).kind
        except FilesystemError:
            return None

    def owner_problem(self, owner: Artifact) -> str | None:
        """The working folder must be a plain directory, a file target a regular file."""
        folder = tuple(owner.folder.split("/")) if owner.folder else ()
        if self.kind_at(folder) is not EntryKind.DIRECTORY:
            return f"The working folder of {owner.name} is missing or not a plain directory."
        if owner.target is not None and self.kind_at((*folder, owner.target)) is not EntryKind.FILE:
            return "File Artifact target must remain a regular file."
        return None

    def program(self, owner: Artifact, command: str) -> str:
        """The absolute program path: as given, from the workspace root (``:/path``),
        owner-relative within scope, or from PATH."""
        from_root = workspace_program(command)
        if from_root is not None:
            return self.workspace_program(command, from_root)
        if is_absolute_program(command, windows=self.programs.windows_paths):
            if not self.programs.is_executable_file(command):
                raise ToolError(EXECUTABLE_UNAVAILABLE.format(command=command))
            return command
        if "/" in command:
            try:
                location = resolve_location(
                    self.workspace, owner.name, command.removeprefix("./"), self.scope
                )
            except ToolError:
                raise ToolError(EXECUTABLE_OUTSIDE) from None
            if self.kind_at(location.components) is not EntryKind.FILE:
                raise ToolError(EXECUTABLE_OUTSIDE)
            return self.absolute(location.components)
        cwd = working_directory(self.workspace, owner)
        found = self.programs.find_on_path(command, self.environment.get("PATH", ""), cwd)
        if found is None:
            raise ToolError(EXECUTABLE_UNAVAILABLE.format(command=command))
        return found

    def workspace_program(self, command: str, path: str) -> str:
        """``:/path``: a program of the project outside the eval's scope (``.venv/bin/python``).

        Every folder on the way is opened without following links, so the path cannot leave
        the workspace through a linked folder. Only the last part may be a symbolic link (a
        venv's ``bin/python`` points at the interpreter it was made from): the returned path
        is the link inside the workspace, which the system follows when it starts the
        program, exactly as it would for an absolute path written in the declaration."""

        def refused(problem: str) -> ToolError:
            return ToolError(
                WORKSPACE_PROGRAM_REFUSED.format(
                    command=command, problem=problem, rule=WORKSPACE_PROGRAM_RULE
                )
            )

        if not path or logical_path_problem(path) is not None:
            raise refused("not a safe path from the workspace root (no `.`, `..` or `//`)")
        components = tuple(path.split("/"))
        for depth in range(1, len(components)):
            kind = self.kind_at(components[:depth])
            folder = "/".join(components[:depth])
            if kind is None:
                raise refused(f"{folder} does not exist")
            if kind is EntryKind.SYMLINK:
                raise refused(f"{folder} is a symbolic link")
            if kind is not EntryKind.DIRECTORY:
                raise refused(f"{folder} is not a folder")
        kind = self.kind_at(components)
        absolute = self.absolute(components)
        if kind is None:
            raise refused(f"{path} does not exist")
        if kind not in (EntryKind.FILE, EntryKind.SYMLINK):
            raise refused(f"{path} is not a file")
        if not self.programs.is_executable_file(absolute):
            raise refused(f"{path} is not an executable file")
        return absolute

    def operand(self, owner: Artifact, arg: str) -> str:
        """A literal argument unchanged, or a reference replaced by its absolute path."""
        try:
            operand = parse_operand(arg)
        except TemplateError as exc:
            raise ToolError(str(exc)) from None
        if operand is None:
            return arg
        target = self.workspace.resolve_name(owner, operand.name)
        if target is None:
            raise ToolError(f"Unknown Artifact or mount alias: {operand.name}")
        if target.name not in self.scope:
            raise ToolError(f"Artifact is outside this review: {target.name}")
        location = resolve_location(self.workspace, target.name, operand.suffix, self.scope)
        physical = location.components
        if location.is_file_artifact_root:
            # A file Artifact, named directly or reached through a mount alias, is its
            # target file, never the folder that happens to contain it.
            assert location.artifact.target is not None
            physical = (*physical, location.artifact.target)
        if operand.suffix:
            kind = self.kind_at(physical)
            if kind is None:
                raise ToolError(f"Artifact input does not exist: {operand.suffix}")
            if kind is EntryKind.SYMLINK:
                raise ToolError("Artifact symlinks are not supported.")
        return operand.flag + self.absolute(physical)

    def execution_path(self, path: str) -> str:
        if logical_path_problem(path) is not None or not path:
            raise ToolError(f"Execution path {path!r} is not a safe workspace-relative path.")
        components = tuple(path.split("/"))
        kind = self.kind_at(components)
        if kind is None:
            raise ToolError(f"Execution path {path!r} does not exist.")
        if kind is EntryKind.SYMLINK:
            raise ToolError(f"Execution path {path!r} is a symbolic link.")
        if kind is EntryKind.OTHER:
            raise ToolError(f"Execution path {path!r} is a special file.")
        return self.absolute(components)
