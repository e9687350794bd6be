"""Stored answers port: a command's printed answer, kept while everything it was made of holds.

``status`` at 10,000 Artifacts spends most of its time on work whose result does not change
between two runs over an unchanged repository and state: reading the newest records, the
gates, each eval's document, the answer's encoding. The answer is kept under a key that
digests every input the caller computed fresh (the workspace's content, every eval's key,
the programs, the options, the environment, the code) and the identity of the files it
reads besides them (``inputs``: the state's database and its write-ahead log, by device,
inode, size and nanosecond times, like the file index's identities). A later run whose key
is the same prints the kept answer.

Like the file index, it is an optimisation only: a lookup that finds nothing, or finds a
damaged or foreign answer, costs the full computation, never a wrong result; and an input
file whose times are not safely older than now is "racy" (a second write within one
timestamp tick could leave its identity unchanged), so no answer made from it is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from artifactize.ports.filesystem import FileIdentity

ANSWER_ENCODING = ("utf-8", "surrogatepass")  # any str a command echoed, back as it was


@dataclass(frozen=True)
class StoredAnswer:
    """What the command printed (its text as echoed, in ``ANSWER_ENCODING``) and the exit
    code it ended with. Kept as bytes, which a found answer can be printed as: a replayed
    Run's answer is 67 MB at 10,000 Artifacts, and decoding it, slicing it and encoding it
    again for standard output cost 0.25 s (``domain.reviews.run.replay``)."""

    data: bytes | memoryview
    exit_code: int

    @classmethod
    def of(cls, text: str, exit_code: int) -> StoredAnswer:
        return cls(text.encode(*ANSWER_ENCODING), exit_code)

    @property
    def text(self) -> str:
        return str(self.data, *ANSWER_ENCODING)


@dataclass(frozen=True)
class Observed:
    """An answer's first key and what its computation observed (``domain.project
    .observations``): when the first key is the same and every observation still holds, the
    answer holds without computing anything (not even its key)."""

    first_key: str
    log: Sequence[Any]


class StoredAnswers(Protocol):
    def inputs(self) -> str | None:
        """The identity of the files an answer reads besides what the key digests (the
        state's), as text; None when one of them is racy: no answer may be kept or used."""
        ...

    def safely_old(self, identity: FileIdentity) -> bool:
        """Whether a file of this identity changed long enough ago that a later write
        would change its identity (the racy rule): only such a file may key an answer."""
        ...

    def find(self, key: str) -> StoredAnswer | None:
        """The answer kept under ``key``, when there is one and it is whole."""
        ...

    def find_observed(self, first_key: str) -> tuple[Sequence[Any], StoredAnswer] | None:
        """The observations and the answer kept with ``first_key``, when there are some."""
        ...

    def keep(self, key: str, answer: StoredAnswer, observed: Observed | None = None) -> None:
        """Keep ``answer`` under ``key`` (and ``observed``, when given) in place of the one
        kept before; never raises (a failed write keeps nothing)."""
        ...
