"""Fakes and wiring shared by the unit tests of Human tools, Human reviews and ``verify``'s
dependency gates: a recording launcher, a regex engine that must not be used, a process
table, and ``HumanWorld``, the in-memory repository, state and clock those tests build their
``HumanReviews`` and ``VerifyPorts`` on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.agent.review import ReviewPorts
from artifactize.domain.tools.human.registry import HumanToolPorts
from artifactize.domain.tools.registry import ToolPorts
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.domain.use_cases.human_reviews import HumanReviewPorts, HumanReviews
from artifactize.ports.documents import ProducerDocument
from artifactize.ports.launch import LaunchObserver
from artifactize.ports.sessions import ProcessIdentity
from tests.fakes.filesystem import MemoryFilesystem
from tests.fakes.ids import CountingIds
from tests.fakes.model import ScriptedBackend, ScriptedBackends
from tests.fakes.processes import FakeClock, FakeProcessRunner, FakePrograms
from tests.fakes.state import MemoryStateStore
from tests.fakes.threads import THREADS

ME = ProcessIdentity(4242, 1000.0)
PRODUCER: ProducerDocument = {"name": "alice@host", "version": "1.0"}


@dataclass
class FakeLauncher:
    """Records every launch; ``error`` makes the spawn fail."""

    error: OSError | None = None
    launches: list[tuple[tuple[str, ...], str, Mapping[str, str], Any]] = field(
        default_factory=list
    )

    def launch(
        self,
        argv: tuple[str, ...],
        cwd: str,
        env: Mapping[str, str],
        observer: LaunchObserver | None = None,
    ) -> None:
        if self.error is not None:
            raise self.error
        self.launches.append((argv, cwd, dict(env), observer))


class NoRegex:
    """Human built-ins never search."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError("a Human built-in used the regex engine")


class Table:
    def own_identity(self) -> ProcessIdentity:
        return ME

    def is_alive(self, identity: ProcessIdentity) -> bool:
        return True

    def kill_group(self, leader: ProcessIdentity) -> bool:
        raise AssertionError("verify never kills a group itself")


class HumanWorld:
    """A repository at ``/repo`` in ``files``, with in-memory state, a fake clock and
    scripted processes; polls sleep on the fake clock and run ``during_sleep`` (an async
    callable, when set) each time."""

    def __init__(
        self, files: MemoryFilesystem, runner: FakeProcessRunner, clock: FakeClock
    ) -> None:
        self.files = files
        self.state = MemoryStateStore()
        self.ids = CountingIds()
        self.clock = clock
        self.runner = runner
        self.launcher = FakeLauncher()
        self.sleeps: list[float] = []
        self.during_sleep: Any = None

    def workspace(self) -> Workspace:
        return ConfigService(self.files).load("/repo")

    def reviews(self) -> HumanReviews:
        tools = HumanToolPorts(
            filesystem=self.files,
            regex=cast(Any, NoRegex()),
            processes=self.runner,
            programs=FakePrograms(),
            launcher=self.launcher,
            environment={"PATH": "/usr/bin"},
            threads=THREADS,
        )
        load = ConfigService(self.files).load
        ports = HumanReviewPorts(
            self.state, load, tools, self.files, self.clock, PRODUCER, threads=THREADS
        )
        return HumanReviews(ports)

    def review_ports(self) -> ReviewPorts:
        """Agent review ports no test here uses: scripted backends with no turns."""
        tools = ToolPorts(self.files, cast(Any, None), cast(Any, None), {}, threads=THREADS)
        backends = ScriptedBackends(ScriptedBackend([]))
        return ReviewPorts(
            self.clock, backends, tools, cast(Any, None), self.workspace, threads=THREADS
        )

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.clock.advance(seconds)
        if self.during_sleep is not None:
            await self.during_sleep()
