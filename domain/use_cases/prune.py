"""``artifactize prune``: keep the state bounded without losing a verdict.

Runs created before a date, or beyond the newest N (either criterion selects a Run), go
with their requests and their scratch folders (``<state>/runs/<runId>``); then the
executions no remaining request points at that are neither a key's reuse record nor
active. What a later ``verify`` reuses is never touched, nor a Run still running (its
leases), nor one with a request still waiting (a person may submit, a follower may read):
the store decides that inside its one transaction (``StateStore.prune``). ``--dry-run``
reports the same counts and changes nothing. After a real prune the database is
compacted.

Saved Agent conversations are not pruned: a reused request and its reuse record share
the producing request's conversation, so a conversation outlives the Runs that made it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from artifactize.kernel.timestamps import timestamp
from artifactize.ports.scratch import ScratchSpace
from artifactize.ports.state import PruneOutcome, StateStore

NO_CRITERION = "prune needs --before DATE, --keep N, or both."
BAD_DATE = (
    "--before takes a date (YYYY-MM-DD, UTC midnight) or an ISO 8601 time with a zone "
    "(2026-01-31T12:00:00Z), got {text!r}."
)
BAD_KEEP = "--keep takes a number of Runs, 0 or more, got {value}."


class PruneError(ValueError):
    """A ``prune`` argument that says nothing, or cannot be read (exit 2)."""


@dataclass(frozen=True)
class PruneCriteria:
    before: str | None  # a stored timestamp: Runs created earlier go
    keep: int | None  # Runs beyond the newest ``keep`` go
    dry_run: bool = False

    @classmethod
    def parse(cls, before: str | None, keep: int | None, dry_run: bool) -> PruneCriteria:
        if before is None and keep is None:
            raise PruneError(NO_CRITERION)
        if keep is not None and keep < 0:
            raise PruneError(BAD_KEEP.format(value=keep))
        return cls(None if before is None else parse_before(before), keep, dry_run)


def parse_before(text: str) -> str:
    """``YYYY-MM-DD`` (midnight UTC) or an ISO 8601 time with a zone, as stored."""
    try:
        if len(text) == len("YYYY-MM-DD"):
            day = date.fromisoformat(text)
            return timestamp(datetime(day.year, day.month, day.day, tzinfo=UTC))
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise PruneError(BAD_DATE.format(text=text)) from None
    if moment.tzinfo is None:
        raise PruneError(BAD_DATE.format(text=text))
    return timestamp(moment)


@dataclass(frozen=True)
class PruneReport:
    outcome: PruneOutcome
    dry_run: bool
    folders: int  # scratch folders removed (or that would be)

    def to_json(self) -> dict[str, Any]:
        return {
            "dryRun": self.dry_run,
            "runs": list(self.outcome.runs),
            "requests": self.outcome.requests,
            "executions": self.outcome.executions,
            "scratchFolders": self.folders,
            "keptLive": list(self.outcome.kept_live),
        }

    def text(self) -> str:
        verb = "Would remove" if self.dry_run else "Removed"
        line = (
            f"{verb} {len(self.outcome.runs)} Runs, {self.outcome.requests} requests, "
            f"{self.outcome.executions} executions, {self.folders} scratch folders."
        )
        if self.outcome.kept_live:
            line += f" Kept {len(self.outcome.kept_live)} Runs still running or waiting."
        return line


def prune(
    state: StateStore | None,
    scratch: ScratchSpace,
    run_folder: Callable[[str], str | None],
    criteria: PruneCriteria,
) -> PruneReport:
    """Prune ``state`` (None: no state yet, nothing to do); ``run_folder`` gives a Run's
    scratch folder when it exists."""
    if state is None:
        return PruneReport(PruneOutcome((), 0, 0, ()), criteria.dry_run, 0)
    outcome = state.prune(before=criteria.before, keep=criteria.keep, dry_run=criteria.dry_run)
    folders = [f for f in map(run_folder, outcome.runs) if f is not None]
    if not criteria.dry_run:
        for folder in folders:
            scratch.remove_tree(folder)
    return PruneReport(outcome, criteria.dry_run, len(folders))
