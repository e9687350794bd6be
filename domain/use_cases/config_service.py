"""Use cases over the declarations: load the workspace, check it, describe it."""

from __future__ import annotations

from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from artifactize.domain.declarations.diagnostics import ConfigError, NotReady, Problem
from artifactize.domain.declarations.model import ArtifactKind
from artifactize.domain.project.discovery import discover
from artifactize.domain.project.graph import graph_report
from artifactize.domain.project.workspace import Workspace, build_workspace
from artifactize.kernel.utf8 import is_utf8
from artifactize.ports.collector import CollectorPause
from artifactize.ports.file_index import FileIndex
from artifactize.ports.filesystem import FileIdentity, Filesystem, FilesystemError
from artifactize.ports.statuses import PROFILE_KINDS

if TYPE_CHECKING:
    from artifactize.domain.project.program_checks import ProgramChecks


@dataclass(frozen=True)
class ConfigService:
    """Reads declarations through the filesystem port; writes nothing but the file index
    (an optimisation only, in the state home, when one is given).

    A load allocates a great many objects that all stay alive and makes next to no
    reference cycles, so the composition root pauses the cyclic garbage collector for its
    length (``pause_collector``; None: the collector runs as usual)."""

    filesystem: Filesystem
    pause_collector: CollectorPause | None = None
    # Resolves every program and file operand (domain/project/program_checks.py); None: not checked.
    programs: ProgramChecks | None = None
    # Walk into other repositories below the root (``--nested-repos``); else stop at them.
    enter_nested: bool = False
    # Refuse the filesystem's root as a repository (the CLI's ``--repo /``); a test
    # workspace in memory may live there.
    refuse_filesystem_root: bool = False
    # Declarations of unchanged files (ports.file_index): not read again; saved after a load.
    index: FileIndex | None = None

    def load(self, repo: str) -> Workspace:
        root_path = self.filesystem.canonical_directory(repo)
        if self.refuse_filesystem_root and is_filesystem_root(root_path):
            raise RepositoryRefused(repo, FILESYSTEM_ROOT)
        if not is_utf8(root_path):
            raise RepositoryRefused(repo, NOT_UTF8)
        with self._paused():
            try:
                identity = self._root_identity(root_path) if self.index is not None else None
                with self.filesystem.open_root(root_path) as root:
                    discovery = discover(
                        root,
                        root_path,
                        enter_nested=self.enter_nested,
                        index=self.index,
                        root_identity=identity,
                    )
            finally:  # what validated is kept, even when another declaration did not
                if self.index is not None:
                    self.index.save()
            return build_workspace(discovery)

    def _root_identity(self, root_path: str) -> FileIdentity | None:
        """The root folder's identity (a no-follow stat from its parent, taken before the
        walk lists it), which keys a kept discovery; None when it cannot be told."""
        parent, _, name = root_path.rpartition("/")
        if not parent or not name:
            return None  # the filesystem's root, or a path without a parent to ask
        try:
            with self.filesystem.open_root(parent) as folder:
                return folder.folder_identity(name)
        except FilesystemError:
            return None

    def _paused(self) -> AbstractContextManager[None]:
        return nullcontext() if self.pause_collector is None else self.pause_collector()

    def check(self, repo: str) -> dict[str, Any]:
        """``summary`` of a workspace that loads and whose tool operands stay within the
        scopes their tools run in; raises ConfigError (file, line, key, fix) otherwise. Then
        every program and file operand is resolved (``programs``): what is missing raises
        NotReady, a runtime program on artifactize's own interpreter is a ``warnings`` entry."""
        from artifactize.domain.project.tool_scopes import scope_problems

        workspace = self.load(repo)
        problems = scope_problems(workspace)
        if problems:
            raise ConfigError(problems)
        warnings: list[Problem] = []
        if self.programs is not None:
            found = self.programs.check(workspace)
            if found.problems:
                raise NotReady(found.problems)
            warnings = found.warnings
        data = summary(workspace)
        if warnings:
            data["warnings"] = [warning.to_json() for warning in warnings]
        return data

    def graph(self, repo: str, artifact: str | None) -> dict[str, Any]:
        return graph_report(self.load(repo), artifact)


FILESYSTEM_ROOT = "it is the root of the filesystem, not a repository; name the repository's folder"
NOT_UTF8 = (
    "its path is not valid UTF-8, and the state keeps paths as UTF-8 text; "
    "move it to a path whose names are UTF-8"
)
NESTED_SKIPPED = (
    "Skipped {count} other {noun} below the root (a .git inside): {names}; "
    "--nested-repos walks into them."
)
NESTED_SHOWN = 5  # the names a text summary lists; the JSON lists every one


class RepositoryRefused(FilesystemError):
    """A ``--repo`` that names no repository (the filesystem's root), or one at a path the
    state cannot keep (not UTF-8: a name's bytes decoded with lone surrogates)."""


def is_filesystem_root(path: str) -> bool:
    """``/``, or on Windows a drive's root (``C:\\``) or a share's (``\\\\server\\share``)."""
    stripped = path.rstrip("/\\")
    if not stripped:
        return True
    if len(stripped) == 2 and stripped[1] == ":":
        return True
    parts = [p for p in stripped.replace("\\", "/").split("/") if p]
    return path.startswith(("\\\\", "//")) and len(parts) <= 2


def summary(workspace: Workspace) -> dict[str, Any]:
    """Counts for ``config check`` (camelCase JSON)."""
    kinds = Counter(a.kind for a in workspace.artifacts.values())
    profiles = Counter(ref.eval.profile.kind for ref in workspace.evals())
    data: dict[str, Any] = {
        "ok": True,
        "root": workspace.root_path,
        "artifacts": len(workspace.artifacts),
        "folderArtifacts": kinds[ArtifactKind.FOLDER],
        "fileArtifacts": kinds[ArtifactKind.FILE],
        "evals": sum(profiles.values()),
        "evalsByKind": {k: profiles[k] for k in PROFILE_KINDS},
        "agentTools": sum(len(a.agent_tools) for a in workspace.artifacts.values()),
        "humanTools": sum(len(a.human_tools) for a in workspace.artifacts.values()),
        "agentSessions": sum(len(a.agent_sessions) for a in workspace.artifacts.values()),
        "relations": len(workspace.relations),
    }
    if workspace.nested_repositories:
        data["nestedRepositories"] = list(workspace.nested_repositories)
    return data
