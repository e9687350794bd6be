"""Scope: which Artifacts a registry may touch, and who owns a logical path.

- The scope of an Artifact is the Artifact plus its child and mount closure.
- The admitted scope of an eval is its target plus the Artifacts the eval itself
  references (instruction and runtime argv), each with its child and mount closure.
  References made by other evals are not admitted.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from artifactize.domain.declarations.model import ArtifactKind
from artifactize.domain.logical_paths import parse_logical_path
from artifactize.domain.project.workspace import Artifact, Workspace


class ScopeKind(enum.Enum):
    """The kind of a scope entry as the json protocol sends it."""

    FOLDER = "folder"
    FILE = "file"
    GRAPH = "graph"  # the whole project structure, as the ``graph`` built-in sees it


class ScopeError(LookupError):
    """A logical path that leaves the admitted scope or names what a file Artifact hides."""


def closure(workspace: Workspace, names: Iterable[str]) -> tuple[str, ...]:
    """The given Artifacts plus, transitively, their children and mount targets."""
    ordered: list[str] = []
    seen: set[str] = set()
    pending = deque(names)
    while pending:
        name = pending.popleft()
        if name in seen:
            continue
        seen.add(name)
        ordered.append(name)
        artifact = workspace.artifact(name)
        pending.extend(artifact.children.values())
        pending.extend(artifact.mounts.values())
    return tuple(ordered)


def artifact_scope(workspace: Workspace, name: str) -> tuple[str, ...]:
    return closure(workspace, [name])


def eval_scope(workspace: Workspace, qualified_id: str) -> tuple[str, ...]:
    found = workspace.find_eval(qualified_id)
    return closure(workspace, [found.artifact.name, *workspace.eval_inputs[qualified_id]])


@dataclass(frozen=True)
class Ownership:
    """Where a logical path lands: the declaring Artifact, the one reached, the rest."""

    artifact_id: str
    resolved_artifact_id: str
    remaining: tuple[str, ...]

    @property
    def remaining_path(self) -> str:
        return "/".join(self.remaining)


def resolve_ownership(
    workspace: Workspace,
    owner: str,
    path: str,
    scope: Iterable[str] | None = None,
    *,
    allow_virtual_root: bool = False,
) -> Ownership:
    """Walk mount aliases and child prefixes from ``owner`` until neither matches.

    A mount alias is tried before a child prefix. When the path ends in a file Artifact,
    what remains must be empty or exactly its target's file name.
    """
    admitted = set(scope) if scope is not None else None
    current = workspace.artifact(owner)
    is_file_root = allow_virtual_root and current.kind is ArtifactKind.FILE
    parts = parse_logical_path(path, file_artifact_root=is_file_root)
    while parts:
        jumped = _jump(current, parts)
        if jumped is None:
            break
        name, parts = jumped
        if admitted is not None and name not in admitted:
            raise ScopeError(f"Artifact is outside this review: {name}")
        current = workspace.artifact(name)
    if current.kind is ArtifactKind.FILE and parts not in ((), (current.target,)):
        raise ScopeError(
            f"File Artifact {current.name} exposes only its target {current.target} and mounts."
        )
    return Ownership(owner, current.name, parts)


def _jump(artifact: Artifact, parts: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    if parts[0] in artifact.mounts:
        return artifact.mounts[parts[0]], parts[1:]
    for prefix, child in artifact.children.items():
        prefix_parts = tuple(prefix.split("/"))
        if parts[: len(prefix_parts)] == prefix_parts:
            return child, parts[len(prefix_parts) :]
    return None


def physical_path(workspace: Workspace, artifact: Artifact) -> str:
    """Canonical physical path of an Artifact: its folder, or its file for a file Artifact."""
    return (
        f"{workspace.root_path.rstrip('/')}/{artifact.path}"
        if artifact.path
        else workspace.root_path
    )


def working_directory(workspace: Workspace, artifact: Artifact) -> str:
    """Where commands of the Artifact run: the folder, or a file Artifact's containing folder."""
    if not artifact.folder:
        return workspace.root_path
    return f"{workspace.root_path.rstrip('/')}/{artifact.folder}"


def scope_entries(workspace: Workspace, names: Iterable[str]) -> Mapping[str, Mapping[str, Any]]:
    """Scope entries as the json protocol sends them (camelCase keys)."""
    entries: dict[str, Mapping[str, Any]] = {}
    for name in names:
        artifact = workspace.artifact(name)
        entries[name] = {
            "path": physical_path(workspace, artifact),
            "kind": ScopeKind(artifact.kind.value).value,
            "children": dict(artifact.children),
            "mounts": dict(artifact.mounts),
        }
    return entries
