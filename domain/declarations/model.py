"""The typed model of one ``.artf`` declaration, after validation.

Everything here is plain data. JSON-like values (payloads, schemas) keep the owner's own
key names; every key artifactize defines is snake_case in the declaration.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from artifactize.ports.statuses import ProfileKind

JsonObject = Mapping[str, Any]

DEFAULT_INPUT_SCHEMA: JsonObject = {"type": "object", "additionalProperties": False}
COMMAND_TOOL_DEFAULT_TIMEOUT_MS = 120_000
RUNTIME_DEFAULT_TIMEOUT_MS = 30_000
AGENT_DEFAULT_TIMEOUT_MS = 240_000
FINGERPRINT_SCRIPT_DEFAULT_TIMEOUT_MS = 30_000


class ArtifactKind(enum.Enum):
    FOLDER = "folder"
    FILE = "file"


class ReferenceUse(enum.Enum):
    """Where a ``{name}`` reference was written; it decides what the reference adds."""

    INSTRUCTION = "instruction"  # admits the Artifact into the eval's scope, a relation
    RUNTIME_ARGV = "argv"  # same, for runtime eval arguments
    TOOL_ARGV = "tool-argv"  # must already be in the eval's scope; adds nothing
    HUMAN_ARGV = "human-argv"  # never widens the scope
    SCRIPT_ARGV = "script-argv"  # enters the fingerprint script's scope only


@dataclass(frozen=True)
class Reference:
    """A ``{name}`` written in a declaration, to be resolved against the workspace."""

    name: str
    use: ReferenceUse
    key_path: str
    eval_id: str | None = None
    suffix: str = ""  # ``/rel/path`` after the reference in an operand, without the slash


# --- tools ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BuiltinAgentTool:
    name: str
    builtin: str
    args: tuple[str, ...] | None
    description: str | None


@dataclass(frozen=True)
class CommandAgentTool:
    name: str
    description: str
    protocol: Literal["json", "plain"]
    command: str
    args: tuple[str, ...]
    input_schema: JsonObject
    execution_paths: tuple[str, ...]
    timeout_ms: int
    session: str | None


AgentTool = BuiltinAgentTool | CommandAgentTool


@dataclass(frozen=True)
class BuiltinHumanTool:
    name: str
    builtin: str
    args: tuple[str, ...]
    description: str | None
    kind: Literal["launch", "output"]


@dataclass(frozen=True)
class CommandHumanTool:
    name: str
    description: str
    kind: Literal["launch", "output"]
    command: str
    args: tuple[str, ...]
    timeout_ms: int


HumanTool = BuiltinHumanTool | CommandHumanTool


@dataclass(frozen=True)
class SessionCommand:
    command: str
    args: tuple[str, ...]
    execution_paths: tuple[str, ...]


@dataclass(frozen=True)
class AgentSession:
    name: str
    start: SessionCommand
    stop: SessionCommand


# --- evals ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RuntimeProfile:
    command: str
    args: tuple[str, ...]
    timeout_ms: int = RUNTIME_DEFAULT_TIMEOUT_MS
    kind: Literal[ProfileKind.RUNTIME] = ProfileKind.RUNTIME


@dataclass(frozen=True)
class AgentProfile:
    backend: str
    model: str
    reasoning: str | None = None
    timeout_ms: int = AGENT_DEFAULT_TIMEOUT_MS
    max_tool_calls: int | None = None
    max_tokens: int | None = None
    kind: Literal[ProfileKind.AGENT] = ProfileKind.AGENT
    base_url: str | None = None  # the team's shared server; ARTIFACTIZE_*_BASE_URL wins


@dataclass(frozen=True)
class HumanProfile:
    kind: Literal[ProfileKind.HUMAN] = ProfileKind.HUMAN


@dataclass(frozen=True)
class DependencyProfile:
    """``{ kind = "dependency", depends_on = [...] }``: no reviewer; GREEN once every eval of
    the listed Artifacts is (reference/declarations.md §2.4). Names as written: Artifact
    names or mount aliases of the declaring Artifact (``Workspace.eval_inputs`` resolves)."""

    depends_on: tuple[str, ...]
    kind: Literal[ProfileKind.DEPENDENCY] = ProfileKind.DEPENDENCY


Profile = RuntimeProfile | AgentProfile | HumanProfile | DependencyProfile


@dataclass(frozen=True)
class Eval:
    id: str
    title: str
    profile: Profile
    payload: JsonObject
    pass_schema: JsonObject | None
    fail_schema: JsonObject | None
    profile_variants: Mapping[str, Profile] = field(default_factory=dict)

    @property
    def instruction(self) -> str:
        return str(self.payload.get("instruction", ""))


# --- fingerprints ---------------------------------------------------------------------


@dataclass(frozen=True)
class ArtifactsumFingerprint:
    files: tuple[str, ...]
    ignore: tuple[str, ...]


@dataclass(frozen=True)
class ScriptFingerprint:
    command: str
    args: tuple[str, ...]
    files: tuple[str, ...]
    timeout_ms: int = FINGERPRINT_SCRIPT_DEFAULT_TIMEOUT_MS


@dataclass(frozen=True)
class NoFingerprint:
    """``fingerprint = false``: the Artifact's evals have no reuse key."""


Fingerprint = ArtifactsumFingerprint | ScriptFingerprint | NoFingerprint


# --- the declaration ------------------------------------------------------------------


@dataclass(frozen=True)
class Declaration:
    """One validated ``.artf`` file."""

    name: str
    kind: ArtifactKind
    tags: tuple[str, ...]
    mounts: Mapping[str, str]
    basis: bool
    fingerprint: Fingerprint
    evals: tuple[Eval, ...]  # ordered by eval ID, not by source order
    agent_tools: tuple[AgentTool, ...]
    human_tools: tuple[HumanTool, ...]
    agent_sessions: tuple[AgentSession, ...]
    dependency_gates: str | None
    references: tuple[Reference, ...]
