"""Saved declarations: what a Human request was recorded with, and what a Run selected.

A Human request outlives the process that recorded it: the person claims, runs tools and
submits later, from another process, maybe after the repository changed. So the request
saves ``humanDefinition`` = ``{repo, eval, artifacts}``: the eval's declaration and the
declarations of every Artifact in its admitted scope (Human tool commands included), as
plain JSON. Every later action reopens the repository and rebuilds the same JSON; any
difference refuses the action instead of running an updated declaration.

The Run saves ``definitions`` (each selected eval and its owning Artifact, tags included),
which ``request show`` joins without needing the repository
(``domain/use_cases/request_views.py``: a reader of saved requests imports no workspace).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Iterable, Mapping
from typing import Any

from artifactize.domain.declarations.model import Declaration, Eval
from artifactize.domain.project.scope import eval_scope
from artifactize.domain.project.workspace import Artifact, EvalRef, UnknownName, Workspace
from artifactize.domain.reviews.reuse.canonical_json import canonical_json
from artifactize.ports.documents import (
    ArtifactDefinition,
    HumanDefinition,
    RunDefinitions,
)

EVAL_GONE = "Recorded Human eval no longer exists."
DEFINITION_CHANGED = (
    "Human Artifact scope or eval declarations changed since the request was recorded."
)


class DefinitionMismatch(Exception):
    """The repository no longer declares what the request was recorded with."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


_PLAIN_TYPES = frozenset({str, bool, int, float, type(None)})


def plain_json(value: Any) -> Any:
    """A declaration value as JSON: dataclass fields in camelCase, enums by value, tuples as
    lists. Mapping keys are kept as written (payloads and schemas are the owner's).

    The exact built-in types and the model's dataclasses are told apart by their type first
    (a Run records every selected eval and Artifact: ``isinstance`` against unions and
    ``is_dataclass`` for each value were most of its cost); anything else takes the general
    rules below, in their order."""
    kind: type = type(value)
    if kind in _PLAIN_TYPES:
        return value
    fields = _fields_of(kind)
    if fields is not None:
        return {camel: plain_json(getattr(value, name)) for name, camel in fields}
    if kind is tuple or kind is list:
        return [plain_json(item) for item in value]
    if kind is dict:
        return {str(key): plain_json(item) for key, item in value.items()}
    return _general_json(value)


def _general_json(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, enum.Enum):
        return plain_json(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel: plain_json(getattr(value, name)) for name, camel in _fields(type(value))}
    if isinstance(value, Mapping):
        return {str(key): plain_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(item) for item in value]
    raise TypeError(f"{type(value).__name__} has no JSON form in a saved declaration")


@functools.cache
def _fields_of(kind: type) -> tuple[tuple[str, str], ...] | None:
    """``_fields`` of a dataclass type (not an enum), None for any other type."""
    if dataclasses.is_dataclass(kind) and not issubclass(kind, enum.Enum):
        return _fields(kind)
    return None


@functools.cache
def _fields(kind: type) -> tuple[tuple[str, str], ...]:
    """A dataclass's field names with their camelCase forms (looked up once per type)."""
    return tuple((item.name, _camel(item.name)) for item in dataclasses.fields(kind))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# Each eval's ``plain_json`` by the eval's identity, within one ``run_definitions``: an eval
# is written twice in a Run's definitions (under ``evals``, and in its Artifact's
# ``declaration``), and converted once.
_Known = dict[int, tuple[Eval, Any]]


def _eval_plain(item: Eval, known: _Known | None) -> Any:
    if known is None:
        return plain_json(item)
    found = known.get(id(item))
    if found is None or found[0] is not item:
        found = known[id(item)] = (item, plain_json(item))  # the eval held: its id stays
    return found[1]


def eval_json(ref: EvalRef, known: _Known | None = None) -> dict[str, Any]:
    own = _eval_plain(ref.eval, known)
    return {"qualifiedId": ref.qualified_id, "artifact": ref.artifact.name, **own}


def artifact_json(artifact: Artifact, known: _Known | None = None) -> ArtifactDefinition:
    """Where the Artifact is and how it is declared (tags, tools, evals, fingerprint...)."""
    return {
        "name": artifact.name,
        "kind": artifact.kind.value,
        "path": artifact.path,
        "target": artifact.target,
        "children": dict(artifact.children),
        "mounts": dict(artifact.mounts),
        "tags": list(artifact.declaration.tags),
        "declaration": _declaration_json(artifact.declaration, known),
    }


def _declaration_json(declaration: Declaration, known: _Known | None) -> Any:
    """``plain_json(declaration)``, its evals converted through ``known``."""
    kind: type = type(declaration)
    fields = _fields_of(kind)
    if known is None or fields is None:
        return plain_json(declaration)
    return {
        camel: (
            [_eval_plain(item, known) for item in declaration.evals]
            if name == "evals" and type(declaration.evals) is tuple
            else plain_json(getattr(declaration, name))
        )
        for name, camel in fields
    }


def human_definition(workspace: Workspace, repo: str, qualified_eval_id: str) -> HumanDefinition:
    """``{repo, eval, artifacts}`` of a Human eval; raises UnknownName for a missing eval."""
    ref = workspace.find_eval(qualified_eval_id)
    scope = eval_scope(workspace, qualified_eval_id)
    return {
        "repo": repo,
        "eval": eval_json(ref),
        "artifacts": {name: artifact_json(workspace.artifact(name)) for name in scope},
    }


def check_definition(workspace: Workspace, recorded: Mapping[str, Any]) -> EvalRef:
    """The recorded eval in ``workspace`` when nothing it was recorded with changed; raises
    DefinitionMismatch otherwise (the eval gone, or any declaration in its scope changed)."""
    qualified_id = str((recorded.get("eval") or {}).get("qualifiedId", ""))
    try:
        ref = workspace.find_eval(qualified_id)
    except UnknownName:
        raise DefinitionMismatch(EVAL_GONE) from None
    current = human_definition(workspace, str(recorded.get("repo", "")), qualified_id)
    if canonical_json(current) != canonical_json(recorded):
        raise DefinitionMismatch(DEFINITION_CHANGED)
    return ref


def run_definitions(refs: Iterable[EvalRef]) -> RunDefinitions:
    """The Run's saved definitions: ``{evals: {id: eval}, artifacts: {name: artifact}}``."""
    evals: dict[str, Any] = {}
    artifacts: dict[str, ArtifactDefinition] = {}
    known: _Known = {}
    for ref in refs:
        if ref.artifact.name not in artifacts:  # once per Artifact, not once per eval
            artifacts[ref.artifact.name] = artifact_json(ref.artifact, known)
        evals[ref.qualified_id] = eval_json(ref, known)
    return {"evals": evals, "artifacts": artifacts}
