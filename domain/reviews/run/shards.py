"""``--shard I/N``: a deterministic, disjoint 1/N of the selected evals, for CI matrices.

An eval belongs to shard ``1 + (sha256(qualified ID) mod N)``: it depends on nothing but
its own ID, so the N shards of one selection are disjoint and together cover it, every
machine computes the same split, and adding or removing evals elsewhere never moves an
eval to another shard (a split by position would). Shards are uneven by chance only:
with many evals each holds about 1/N of them.

A shard selects evals as any selector does, so what its evals consume is handled as
without shards: an input eval in another shard is not run here but looked up (local
cache or team store) as the Run's evidence; a dependency eval's targets are run here too
(selecting a dependency eval always runs its targets), and with a team store the key's
lease makes the two shards share one execution instead of running it twice.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

SHARDS_MAX = 1024  # N in --shard I/N: more shards than CI matrices run
_SHAPE = re.compile(r"([0-9]+)/([0-9]+)")
BAD_SHARD = "--shard takes I/N with 1 <= I <= N <= {limit}, got {text!r}."


class ShardError(ValueError):
    """A ``--shard`` value that is not ``I/N`` within the limits (exit 2)."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SHAPE.fullmatch(text.strip())
        if match is None:
            raise ShardError(BAD_SHARD.format(limit=SHARDS_MAX, text=text))
        index, count = int(match.group(1)), int(match.group(2))
        if not 1 <= index <= count <= SHARDS_MAX:
            raise ShardError(BAD_SHARD.format(limit=SHARDS_MAX, text=text))
        return cls(index, count)

    def holds(self, qualified_id: str) -> bool:
        return shard_of(qualified_id, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(qualified_id: str, count: int) -> int:
    """The 1-based shard of an eval among ``count`` shards."""
    digest = hashlib.sha256(qualified_id.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count
