"""``--profile NAME``: swap in an eval's named profile variant (reference/declarations.md §2.6).

Every eval that declares the variant ``NAME`` in ``profile_variants`` runs (and is keyed)
with that complete profile instead of its default one; an eval without it keeps its
default profile. A name that none of the Run's evals declares is refused before the Run.
The variant is an execution option: the reuse key changes only where the definition hash
does (a runtime variant's command or args), so results of other variants are reused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from artifactize.domain.project.workspace import EvalRef, Workspace

UNKNOWN_VARIANT = (
    "--profile {name}: no selected eval declares this profile variant (declared: {declared})."
)


class UnknownVariant(ValueError):
    """A ``--profile`` that none of the selected evals declares (exit 2)."""


def check_variant(refs: Sequence[EvalRef], name: str) -> None:
    """Raise ``UnknownVariant`` unless one of ``refs`` declares the variant ``name``."""
    declared = sorted({v for ref in refs for v in ref.eval.profile_variants})
    if name not in declared:
        listed = ", ".join(declared) or "none"
        raise UnknownVariant(UNKNOWN_VARIANT.format(name=name, declared=listed))


def with_variant(workspace: Workspace, name: str | None) -> Workspace:
    """``workspace`` with every eval that declares variant ``name`` using it (None: as is)."""
    if name is None:
        return workspace
    artifacts = {}
    for artifact_name, artifact in workspace.artifacts.items():
        evals = tuple(
            dataclasses.replace(item, profile=item.profile_variants[name])
            if name in item.profile_variants
            else item
            for item in artifact.evals
        )
        if evals != artifact.evals:
            declaration = dataclasses.replace(artifact.declaration, evals=evals)
            artifact = dataclasses.replace(artifact, declaration=declaration)
        artifacts[artifact_name] = artifact
    return dataclasses.replace(workspace, artifacts=artifacts)


def reselect(workspace: Workspace, refs: Sequence[EvalRef]) -> list[EvalRef]:
    """The same selection, over ``workspace`` (after a variant swapped profiles)."""
    return [workspace.find_eval(ref.qualified_id) for ref in refs]
