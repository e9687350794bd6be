"""Reuse keys: when a verdict still holds (reference/declarations.md §3.2-3.4).

An eval's key covers its definition (``eval_def_hash``) and, one hop only, the fingerprints of
its target, the target's mounts, the target's child Artifacts and the Artifacts this eval names
in its instruction or runtime args. Key layout (ours, version 2)::

    SHA-256( "artifactize-key-v2\\n"
             "eval <evalDefHash>\\n"
             "artifact <name> <kind> <fingerprint>\\n"   per dependency, by name )

as lowercase hex. ``kind`` is ``folder`` or ``file``; physical paths never enter the key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from artifactize.domain.declarations.model import (
    ArtifactKind,
    DependencyProfile,
    NoFingerprint,
    Profile,
)
from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.reuse.artifactsum import (
    DEFAULT_LIMITS,
    ArtifactsumLimits,
    GitignoreMemo,
    OpenFolders,
)
from artifactize.domain.reviews.reuse.definition_hash import eval_def_hash as eval_def_hash
from artifactize.domain.reviews.reuse.fingerprints import (
    ComputedFingerprint,
    FingerprintScripts,
    compute_fingerprint,
)
from artifactize.ports.file_index import FileIndex
from artifactize.ports.filesystem import Filesystem
from artifactize.ports.ids import ReuseKey

REUSE_KEY_VERSION = "artifactize-key-v2"
DERIVED_NO_KEY = "a dependency eval derives its verdict; it has no reuse key"


def eval_dependencies(workspace: Workspace, qualified_eval_id: str) -> tuple[str, ...]:
    """Target, its mounts, its child Artifacts and this eval's references, sorted by name."""
    target = workspace.find_eval(qualified_eval_id).artifact
    names = {target.name, *target.mounts.values(), *target.children.values()}
    names.update(workspace.eval_inputs.get(qualified_eval_id, ()))
    return tuple(sorted(names))


def reuse_key(def_hash: str, deps: Mapping[str, tuple[ArtifactKind, str]]) -> ReuseKey:
    """The v2 key over the definition hash and ``{name: (kind, fingerprint)}``."""
    lines = [f"{REUSE_KEY_VERSION}\n", f"eval {_field(def_hash, 'eval definition hash')}\n"]
    for name in sorted(deps):
        kind, fingerprint = deps[name]
        lines.append(
            f"artifact {_field(name, 'Artifact name')} {kind.value} "
            f"{_field(fingerprint, f'fingerprint of `{name}`')}\n"
        )
    return ReuseKey(hashlib.sha256("".join(lines).encode("utf-8")).hexdigest())


def _field(value: str, what: str) -> str:
    """A key field must not contain a separator, or two inputs could write the same text."""
    if value.split(None, 1) != [value]:  # empty, or a whitespace character (str.isspace)
        raise ValueError(f"{what} {value!r} cannot enter a reuse key: it is empty or has a space")
    return value


@dataclass(frozen=True)
class KeyInputs:
    """Everything an eval's reuse key is made of, computed at preparation and at the recheck.

    ``key`` is None when an Artifact the key covers declares ``fingerprint = false``; then
    ``unkeyed_reason`` names it and no fingerprint is computed (an unkeyed review has nothing
    to recheck, and an unrelated fingerprint failure must not stop it).
    """

    def_hash: str
    dependencies: tuple[str, ...]
    fingerprints: Mapping[str, str]  # name -> value, every dependency (empty when unkeyed)
    key: ReuseKey | None
    unkeyed_reason: str | None
    manifests: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # artifactsum only


def key_inputs(
    workspace: Workspace,
    qualified_eval_id: str,
    filesystem: Filesystem,
    scripts: FingerprintScripts | None = None,
    *,
    profile: Profile | None = None,
    limits: ArtifactsumLimits = DEFAULT_LIMITS,
    index: FileIndex | None = None,
    computed: dict[str, ComputedFingerprint] | None = None,
    gitignores: GitignoreMemo | None = None,
    folders: OpenFolders | None = None,
    without_scripts: bool = False,
) -> KeyInputs:
    """Compute the key of an eval; raises ``FingerprintError`` when a fingerprint fails.
    ``index``: the file index fingerprints read known digests from; ``computed``: the
    fingerprints already computed over this same workspace, by Artifact (filled here), so
    that the evals of one Artifact do not walk its files once each; ``gitignores``: the
    ``.gitignore`` files already read over this same workspace (filled here); ``folders``:
    the folders held open for this computation's walks (``artifactsum.OpenFolders``);
    ``without_scripts``: raises ``NeedsScript`` rather than run a fingerprint script (the
    fingerprints computed before it stay in ``computed``)."""
    ref = workspace.find_eval(qualified_eval_id)
    kept = workspace.kept_def_hash(ref) if profile is None or profile is ref.eval.profile else None
    def_hash = kept if kept is not None else eval_def_hash(ref.eval, profile)
    if isinstance(ref.eval.profile, DependencyProfile):  # derived: nothing to key or reuse
        return KeyInputs(def_hash, (), {}, None, DERIVED_NO_KEY)
    dependencies = eval_dependencies(workspace, qualified_eval_id)
    reason = _unkeyed_reason(workspace, ref.artifact.name, dependencies)
    if reason is not None:
        return KeyInputs(def_hash, dependencies, {}, None, reason)
    fingerprints: dict[str, str] = {}
    manifests: dict[str, Mapping[str, Any]] = {}
    for name in dependencies:
        known = computed.get(name) if computed is not None else None
        if known is None:
            known = compute_fingerprint(
                workspace,
                name,
                filesystem,
                scripts,
                limits=limits,
                index=index,
                gitignores=gitignores,
                folders=folders,
                without_scripts=without_scripts,
            )
            assert known is not None  # _unkeyed_reason found no `fingerprint = false`
            if computed is not None:
                computed[name] = known
        fingerprints[name] = known.value
        if known.manifest is not None:
            manifests[name] = known.manifest
    deps = {name: (workspace.artifact(name).kind, fingerprints[name]) for name in dependencies}
    return KeyInputs(
        def_hash, dependencies, fingerprints, reuse_key(def_hash, deps), None, manifests
    )


def _unkeyed_reason(workspace: Workspace, target: str, dependencies: tuple[str, ...]) -> str | None:
    def declares_none(name: str) -> bool:
        return isinstance(workspace.artifact(name).declaration.fingerprint, NoFingerprint)

    if declares_none(target):
        return f"Target Artifact `{target}` declares no fingerprint."
    culprit = next((name for name in dependencies if declares_none(name)), None)
    if culprit is not None:
        return f"Dependency `{culprit}` declares no fingerprint."
    return None
