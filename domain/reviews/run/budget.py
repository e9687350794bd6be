"""``--max-executions N``: how many executor starts a Run may make.

A start is a runtime command or an Agent review this Run executes itself. Reuse (cache,
team store, a joined execution) and asking a person start nothing, so they need no
budget. A READY request that would start an executor past the limit settles
BUDGET_EXHAUSTED, and the Run is INCOMPLETE (exit 4). With concurrent jobs a slot of the
budget is *reserved* before the key is claimed and released again if the claim ends in
reuse, so two jobs never both take the last start.
"""

from __future__ import annotations

from dataclasses import dataclass

from artifactize.ports.statuses import RequestStatus

BUDGET_EXHAUSTED = RequestStatus.BUDGET_EXHAUSTED
EXHAUSTED_REASON = (
    "--max-executions {limit}: this Run already started {limit} executor(s); "
    "verify again to review it."
)


@dataclass
class ExecutionBudget:
    limit: int | None  # None: unlimited
    reserved: int = 0

    def reserve(self) -> bool:
        """Take one start; False when the budget is spent."""
        if self.limit is not None and self.reserved >= self.limit:
            return False
        self.reserved += 1
        return True

    def release(self) -> None:
        """Give back a start that was not used (the claim found something to reuse)."""
        self.reserved -= 1

    def reason(self) -> str:
        return EXHAUSTED_REASON.format(limit=self.limit)
