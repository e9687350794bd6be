"""What a built-in needs to run: the workspace, the ports, the owner and the admitted scope."""

from __future__ import annotations

from dataclasses import dataclass, field

from artifactize.domain.project.workspace import Workspace
from artifactize.domain.tools.cancellation import NEVER_CANCELLED, Cancellation
from artifactize.domain.tools.locations import Location, resolve_location
from artifactize.ports.filesystem import Filesystem
from artifactize.ports.regex import RegexEngine


@dataclass(frozen=True)
class BuiltinContext:
    workspace: Workspace
    filesystem: Filesystem
    regex: RegexEngine
    owner: str  # the Artifact that declares the tool
    scope: tuple[str, ...]  # the Artifacts the registry admits
    cancellation: Cancellation = field(default=NEVER_CANCELLED)

    @property
    def root_path(self) -> str:
        return self.workspace.root_path

    def locate(self, path: str, *, allow_virtual_root: bool = False) -> Location:
        return resolve_location(
            self.workspace, self.owner, path, self.scope, allow_virtual_root=allow_virtual_root
        )
