"""Use cases over the declarations: load the workspace, check it, describe it."""

from __future__ import annotations

from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from artifactize.domain.declarations.model import ArtifactKind
from artifactize.domain.diagnostics import ConfigError
from artifactize.domain.discovery import discover
from artifactize.domain.graph import graph_report
from artifactize.domain.workspace import Workspace, build_workspace
from artifactize.ports.collector import CollectorPause
from artifactize.ports.filesystem import Filesystem
from artifactize.ports.statuses import PROFILE_KINDS


@dataclass(frozen=True)
class ConfigService:
    """Reads declarations through the filesystem port; writes nothing anywhere.

    A load allocates a great many objects that all stay alive and makes next to no
    reference cycles, so the composition root pauses the cyclic garbage collector for its
    length (``pause_collector``; None: the collector runs as usual)."""

    filesystem: Filesystem
    pause_collector: CollectorPause | None = None

    def load(self, repo: str) -> Workspace:
        root_path = self.filesystem.canonical_directory(repo)
        with self._paused():
            with self.filesystem.open_root(root_path) as root:
                discovery = discover(root, root_path)
            return build_workspace(discovery)

    def _paused(self) -> AbstractContextManager[None]:
        return nullcontext() if self.pause_collector is None else self.pause_collector()

    def check(self, repo: str) -> dict[str, Any]:
        """``summary`` of a workspace that loads and whose tool operands stay within the
        scopes their tools run in; raises ConfigError (file, line, key, fix) otherwise."""
        from artifactize.domain.tool_scopes import scope_problems

        workspace = self.load(repo)
        problems = scope_problems(workspace)
        if problems:
            raise ConfigError(problems)
        return summary(workspace)

    def graph(self, repo: str, artifact: str | None) -> dict[str, Any]:
        return graph_report(self.load(repo), artifact)


def summary(workspace: Workspace) -> dict[str, Any]:
    """Counts for ``config check`` (camelCase JSON)."""
    kinds = Counter(a.kind for a in workspace.artifacts.values())
    profiles = Counter(ref.eval.profile.kind for ref in workspace.evals())
    return {
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
