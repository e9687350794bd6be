"""Tool-session ports: long-lived harness processes, process identity, and the session journal.

A tool session keeps a harness (the ``start`` command) running across the calls of one
review. Cleanup must survive a crash of artifactize itself, so every process group that a
session admits is first written to a journal in the session's directory, with the identity
(pid + start time) of its leader; a later session start sweeps directories whose owner is
gone and kills what their journals name, never signalling a reused pid.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from artifactize.ports.process import ProcessOutcome, ProcessSpec


@dataclass(frozen=True)
class ProcessIdentity:
    """A process as it was when recorded: a pid alone may be reused, pid + start time not."""

    pid: int
    create_time: float


SpawnObserver = Callable[[ProcessIdentity], None]
"""Called with the leader's identity right after spawn, before the process is awaited."""


class JournalRole(enum.Enum):
    START = "start"
    STOP = "stop"
    CALL = "call"
    RELEASED = "released"  # this leader's group was confirmed dead: never signal it again


@dataclass(frozen=True)
class JournalEntry:
    """One process group a session admitted; its group id is the leader's pid."""

    role: JournalRole
    leader: ProcessIdentity


class RunningProcess(Protocol):
    """A started harness: its group runs until it exits or is killed."""

    @property
    def identity(self) -> ProcessIdentity: ...

    async def ready_line(self) -> bytes | None:
        """The first newline-terminated stdout line, or None if the process exited (or closed
        stdout) first. Afterwards stdout and stderr are drained and discarded."""
        ...

    async def wait_exit(self) -> None:
        """Return when the leader has exited (it stays unreaped until ``kill_group``)."""
        ...

    def has_exited(self) -> bool: ...

    async def kill_group(self) -> bool:
        """SIGKILL the whole group (identity checked first), reap the leader; True when no
        process of the group is left."""
        ...


class ProcessLauncher(Protocol):
    async def start(self, spec: ProcessSpec, observe: SpawnObserver) -> RunningProcess:
        """Start a long-lived process in a new group; ``spec.timeout_ms`` is not applied.

        Raises ``OSError`` when the program cannot be started. ``observe`` receives the
        leader's identity before this returns."""
        ...

    async def run_observed(self, spec: ProcessSpec, observe: SpawnObserver) -> ProcessOutcome:
        """Like ``ProcessRunner.run``, reporting the leader's identity to ``observe`` first."""
        ...


class ProcessTable(Protocol):
    """Process liveness and safe group signalling (psutil on POSIX)."""

    def own_identity(self) -> ProcessIdentity: ...

    def is_alive(self, identity: ProcessIdentity) -> bool:
        """True when that very process (same pid and start time) still runs; a process that
        exited but was never waited for (a zombie) counts as exited."""
        ...

    def kill_group(self, leader: ProcessIdentity) -> bool:
        """SIGKILL every live process of the group led by ``leader`` (group id = its pid),
        unless the pid now names a different process; True when none is left afterwards."""
        ...


STOP_REQUEST_EVENT = "Local\\artifactize-stop-{pid}-{create_time:.6f}"
"""Windows: the named event an artifactize process that can be stopped as on Ctrl-C waits on
(its own pid and start time in the name, so a reused pid names another event); ``run
cancel`` sets it, since no signal reaches another console's process there."""


class ProcessInterrupt(Protocol):
    """``run cancel``: stop a Run's owner, another artifactize process (the process tables
    implement it)."""

    def interrupt(self, identity: ProcessIdentity) -> bool:
        """Ask that very process (same pid and start time) to stop as on Ctrl-C (SIGTERM on
        POSIX), so it cleans up after itself; False when it is not running."""
        ...


class SessionStore(Protocol):
    """Session directories below a parent (in the state home), with owner, lease, journal."""

    def create(self, parent: str, owner: ProcessIdentity) -> str:
        """A new private (0700) directory holding the owner record and an active lease."""
        ...

    def work_directory(self, directory: str) -> str:
        """Create (0700) and return ``<directory>/work``: what the harness, bound tools and
        stop see as ``ARTIFACTIZE_SESSION_DIR``, apart from artifactize's own records."""
        ...

    def directories(self, parent: str) -> list[str]: ...

    def owner(self, directory: str) -> ProcessIdentity | None:
        """The recorded owner, or None when the record is missing or unreadable."""
        ...

    def has_lease(self, directory: str) -> bool: ...

    def release_lease(self, directory: str) -> None: ...

    def append(self, directory: str, entry: JournalEntry) -> None:
        """Durably record a process group (written and fsynced before it is admitted)."""
        ...

    def journal(self, directory: str) -> list[JournalEntry]:
        """The recorded groups, oldest first (none when nothing was appended). An unparsable
        final line, left by a crash during ``append``, is ignored; any other unparsable line
        raises ``OSError``, since what it named is unknown."""
        ...

    def remove(self, directory: str) -> None:
        """Remove the directory with its records; raises ``OSError`` on failure."""
        ...
