"""Which evals a ``verify`` or ``status`` selects (reference/declarations.md §4.3).

Exactly one selector: ``ARTIFACT`` or ``ARTIFACT/EVAL`` (positional), ``--eval A/E``,
``--evals A/E,…``, ``--artifacts A,…`` or ``--all``. An Artifact expands to its evals in ID
order; selection order is kept and a duplicate is dropped at its first occurrence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from artifactize.domain.reviews.run.shards import Shard

if TYPE_CHECKING:  # the workspace is imported where a selection is made, not where it is
    # parsed: a replayed Run (``run.replay``) parses its selection and loads no workspace
    from artifactize.domain.project.workspace import EvalRef, Workspace

LIST_MAX = 100_000  # IDs in one --evals or --artifacts list, before duplicates are dropped
NO_SELECTOR = "Select evals: ARTIFACT, ARTIFACT/EVAL, --eval, --evals, --artifacts or --all."
ONE_SELECTOR = (
    "Give exactly one selector: ARTIFACT, ARTIFACT/EVAL, --eval, --evals, --artifacts or --all."
)
EMPTY_ITEM = "{flag} takes a comma-separated list without empty items, got {text!r}."
TOO_MANY = "{flag} takes at most {limit} IDs, got {count}."
NOT_QUALIFIED = "--evals takes qualified eval IDs ARTIFACT/EVAL, got {item!r}."
NO_EVALS = "Artifact `{name}` declares no evals."


class SelectionError(Exception):
    """A selector that names nothing, or names something unknown (exit 2)."""


def split_list(flag: str, text: str) -> list[str]:
    """A comma-separated ID list: trimmed, no empty items, at most ``LIST_MAX``."""
    items = [part.strip() for part in text.split(",")]
    if not all(items):
        raise SelectionError(EMPTY_ITEM.format(flag=flag, text=text))
    if len(items) > LIST_MAX:
        raise SelectionError(TOO_MANY.format(flag=flag, limit=LIST_MAX, count=len(items)))
    return items


@dataclass(frozen=True)
class Selection:
    """The selector a command was given; ``evals``/``artifacts`` hold raw CSV text."""

    selector: str | None = None  # positional ARTIFACT or ARTIFACT/EVAL, or --eval
    evals: str | None = None
    artifacts: str | None = None
    select_all: bool = False
    shard: Shard | None = None  # --shard I/N: only this shard of what the selector names

    def given(self) -> int:
        return sum(x is not None for x in (self.selector, self.evals, self.artifacts)) + int(
            self.select_all
        )

    def check(self, *, default_all: bool = False) -> Selection:
        """Exactly one selector (with ``default_all``, none means ``--all``)."""
        count = self.given()
        if count == 0 and default_all:
            return Selection(select_all=True, shard=self.shard)
        if count != 1:
            raise SelectionError(ONE_SELECTOR if count else NO_SELECTOR)
        if self.evals is not None:
            for item in split_list("--evals", self.evals):
                if "/" not in item:
                    raise SelectionError(NOT_QUALIFIED.format(item=item))
        if self.artifacts is not None:
            split_list("--artifacts", self.artifacts)
        return self

    def select(self, workspace: Workspace) -> list[EvalRef]:
        """The selected evals in selection order, without duplicates (``shard``'s only)."""
        refs = self._select(workspace)
        shard = self.shard
        if shard is None:
            return refs
        return [ref for ref in refs if shard.holds(ref.qualified_id)]

    def _select(self, workspace: Workspace) -> list[EvalRef]:
        from artifactize.domain.project.workspace import UnknownName

        if self.select_all:
            refs = list(workspace.evals())
            if not refs:
                raise SelectionError("The workspace declares no evals.")
            return refs
        try:
            if self.evals is not None:
                found = [workspace.find_eval(i) for i in split_list("--evals", self.evals)]
            elif self.artifacts is not None:
                names = split_list("--artifacts", self.artifacts)
                found = [ref for name in names for ref in _artifact_evals(workspace, name)]
            elif self.selector is not None and "/" in self.selector:
                found = [workspace.find_eval(self.selector)]
            elif self.selector is not None:
                found = _artifact_evals(workspace, self.selector)
            else:
                raise SelectionError(NO_SELECTOR)
        except UnknownName as exc:
            raise SelectionError(str(exc)) from None
        seen: set[str] = set()
        unique = []
        for ref in found:
            if ref.qualified_id not in seen:
                seen.add(ref.qualified_id)
                unique.append(ref)
        return unique


def _artifact_evals(workspace: Workspace, name: str) -> list[EvalRef]:
    from artifactize.domain.project.workspace import EvalRef

    artifact = workspace.artifact(name)
    if not artifact.evals:
        raise SelectionError(NO_EVALS.format(name=name))
    return [EvalRef(artifact, item) for item in artifact.evals]


def select_evals(workspace: Workspace, selector: str | None, select_all: bool) -> list[EvalRef]:
    """``ARTIFACT`` (its evals in ID order), ``ARTIFACT/EVAL``, or every eval."""
    from artifactize.domain.project.workspace import EvalRef, UnknownName

    if select_all:
        refs = list(workspace.evals())
        if not refs:
            raise SelectionError("The workspace declares no evals.")
        return refs
    if not selector:
        raise SelectionError("Select evals: ARTIFACT, ARTIFACT/EVAL, --eval ID or --all.")
    try:
        if "/" in selector:
            return [workspace.find_eval(selector)]
        artifact = workspace.artifact(selector)
    except UnknownName as exc:
        raise SelectionError(str(exc)) from None
    if not artifact.evals:
        raise SelectionError(NO_EVALS.format(name=selector))
    return [EvalRef(artifact, item) for item in artifact.evals]
