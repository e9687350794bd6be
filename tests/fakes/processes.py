"""Fakes for running programs: a scripted process runner, scratch space, program lookup and a
clock, for domain unit tests that must not start anything real."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import anyio

from artifactize.ports.process import ProcessOutcome, ProcessSpec
from artifactize.ports.programs import ProgramIdentity

# What a scripted run does: an outcome, or a coroutine that builds one (may sleep, mutate…).
T = TypeVar("T")
Script = ProcessOutcome | Callable[[ProcessSpec], Awaitable[ProcessOutcome]]


@dataclass
class FakeProcessRunner:
    """Records every spec; returns ``script`` (or awaits it) and advances ``clock``."""

    script: Script = field(default_factory=lambda: ProcessOutcome(exit_code=0))
    clock: FakeClock | None = None
    elapsed_seconds: float = 0.25
    specs: list[ProcessSpec] = field(default_factory=list)
    trips: int = 0  # ``run_between`` calls

    async def run(self, spec: ProcessSpec) -> ProcessOutcome:
        self.specs.append(spec)
        if self.clock is not None:
            self.clock.advance(self.elapsed_seconds)
        if isinstance(self.script, ProcessOutcome):
            await anyio.lowlevel.checkpoint()
            return self.script
        return await self.script(spec)

    async def run_between(
        self, before: Callable[[], ProcessSpec], after: Callable[[ProcessOutcome], T]
    ) -> T:
        """``before``, ``run``, ``after`` in the caller's task; counted in ``trips``."""
        self.trips += 1
        return after(await self.run(before()))


async def hang_forever(spec: ProcessSpec) -> ProcessOutcome:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


@dataclass
class FakeScratch:
    """Directories exist only as paths in ``live``; ``remove_fails`` makes removal raise."""

    live: set[str] = field(default_factory=set)
    created: list[str] = field(default_factory=list)
    remove_fails: bool = False
    create_fails_after: int | None = None  # creations allowed before OSError
    dirty: set[str] = field(default_factory=set)  # roots a command left something in

    def create_private_directory(self, parent: str | None, prefix: str) -> str:
        if self.create_fails_after is not None and len(self.created) >= self.create_fails_after:
            raise PermissionError(13, "Permission denied")
        path = f"{parent or '/tmp'}/{prefix}{len(self.created) + 1}"
        self.created.append(path)
        self.live.add(path)
        return path

    def remove_tree(self, path: str) -> None:
        if self.remove_fails:
            raise OSError(16, "Device or resource busy")
        self.live = {p for p in self.live if p != path and not p.startswith(f"{path}/")}

    def emptied(self, path: str, children: Sequence[str]) -> bool:
        """Live with exactly ``children`` below it (a fake command leaves nothing), unless
        ``dirty`` names it."""
        below = {p for p in self.live if p.startswith(f"{path}/")}
        return path in self.live and path not in self.dirty and below == set(children)


@dataclass
class FakePrograms:
    """Programs found on PATH live in ``/usr/bin``; ``missing`` names are found nowhere."""

    missing: frozenset[str] = frozenset()
    windows_paths: bool = False
    own: frozenset[str] = frozenset()  # paths that run on artifactize's own interpreter

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        return None if name in self.missing or not path_variable else f"/usr/bin/{name}"

    def is_executable_file(self, path: str) -> bool:
        return path.rsplit("/", 1)[-1] not in self.missing

    def identity(self, path: str) -> ProgramIdentity:
        return ProgramIdentity(real_path=path, own_environment=path in self.own)


@dataclass
class FakeClock:
    monotonic_seconds: float = 100.0
    wall: datetime = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.wall

    def monotonic(self) -> float:
        return self.monotonic_seconds

    def advance(self, seconds: float) -> None:
        self.monotonic_seconds += seconds


@dataclass
class TickingClock:
    """A wall clock that advances ``step`` per reading, so the order of what a store stamps
    (last use, storage time) is exact."""

    wall: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    step: timedelta = timedelta(seconds=1)

    def now(self) -> datetime:
        self.wall += self.step
        return self.wall

    def monotonic(self) -> float:
        return 0.0
