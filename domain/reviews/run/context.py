"""What every part of a Run works with: its ports, its options, the workspace and the clock.

``Verify`` builds one ``RunContext`` and hands it to the modules that do the work
(``documents``, ``reuse``, ``human_wait``, ``commit``), so each of them reads like the rule
it owns instead of reaching into a 500-line class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from artifactize.domain.declarations.model import Profile, RuntimeProfile
from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.run.documents import request_record
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.reviews.timestamps import timestamp
from artifactize.ports.callbacks import OutputRoots, ProgressSink
from artifactize.ports.clock import Sleeper
from artifactize.ports.collector import CollectorPause
from artifactize.ports.conversations import ConversationStore
from artifactize.ports.documents import ProducerDocument, Request
from artifactize.ports.file_index import FileIndex
from artifactize.ports.ids import IdSource
from artifactize.ports.progress import RunObserver
from artifactize.ports.sessions import ProcessTable
from artifactize.ports.state import HeldWritten, StateStore

if TYPE_CHECKING:  # field types only: ``status`` imports this module without the reviews
    from artifactize.domain.reviews.agent.review import ReviewPorts
    from artifactize.domain.reviews.remote.sync import RemoteSync
    from artifactize.domain.reviews.reuse.fingerprints import FingerprintScripts
    from artifactize.domain.reviews.runtime.review import RuntimePorts
    from artifactize.ports.filesystem import Filesystem

# A settled eval's completion is held for a group commit at most about this long: it is
# written with the next state transaction of the Run (the next claim, a pass that parks,
# the Run's end), or after this interval if none began meanwhile.
HOLD_SECONDS = 0.05
NO_RUNTIME_PORTS = "Runtime evals are not run here: no process runner is configured."
IGNORE_GATES = "ignore"  # review_policy.dependency_gates that bypasses execution gates


@dataclass(frozen=True)
class VerifyPorts:
    review: ReviewPorts
    state: StateStore
    processes: ProcessTable
    make_output_root: OutputRoots  # Run ID -> a private output root for its tools
    producer: ProducerDocument
    ids: IdSource  # Run and conversation IDs
    conversations: ConversationStore | None = None
    sleep: Sleeper = anyio.sleep
    runtime: RuntimePorts | None = None  # None: runtime evals stay UNREVIEWED
    remote: RemoteSync | None = None  # the team review store, when one is configured
    progress: ProgressSink | None = None  # notices for the person at the terminal
    observer: RunObserver | None = None  # live progress: requests as saved, Agent activity
    # Digests of unchanged files (ports.file_index), saved once the keys are computed.
    index: FileIndex | None = None
    # Paused while the keys are computed (``Verify.prepare``), as ``status`` pauses it for
    # its report, and over the Run's documents, its reuse phase, its ending and the answer
    # (``Verify.paused``); None: the collector runs as usual. The composition root's keeps
    # what a block inside the Run allocated out of the collector's passes until it ends.
    pause_collector: CollectorPause | None = None
    # What the keys are computed through when not the review's files and fingerprint
    # scripts: a replayable Run's plan logs what its keys observed (``run.replay``).
    key_sources: KeySources | None = None


@dataclass(frozen=True)
class KeySources:
    filesystem: Filesystem
    scripts: FingerprintScripts | None


class HeldCompletions:
    """The Run's writes the state holds for a group commit (the ``held`` of
    ``StateStore.complete_execution`` and ``update_request``): settled evals and RUNNING
    saves. A held verdict is in the Run's documents at once (gates open, the scheduler goes
    on), but is shown to the observer only once it is written, so nothing reported is lost
    to a crash; one whose write failed goes back to its RUNNING document, which the Run's
    end settles ERROR (a dropped RUNNING save needs nothing: the Run fails, and its end
    settles the request). ``flush_behind`` writes what is held HOLD_SECONDS after it was
    held when no other transaction of the Run did, so a long eval shows RUNNING in the
    state and a verdict reaches it while other evals still run."""

    def __init__(self) -> None:
        self.count = 0  # held, not yet written or dropped
        self._wake: anyio.Event | None = None

    def watch(self) -> HeldWritten:
        """Count one more held write (``flush_behind`` writes it in time); what the state
        calls once it is written or dropped."""
        self.count += 1
        if self._wake is not None:
            self._wake.set()

        def written(_done: bool) -> None:
            self.count -= 1

        return written

    def hold(self, ctx: RunContext, settled: Request, running: Request) -> HeldWritten:
        """Make ``settled`` the Run's current document now; what the state calls once its
        completion is written (observed) or dropped (back to ``running``)."""
        counted = self.watch()
        ctx.keep(settled, observe=False)

        def written(done: bool) -> None:
            counted(done)
            if done:
                ctx.observe(settled)
            elif ctx.current(settled) is settled:
                ctx.keep(running, observe=False)

        return written

    async def flush_behind(self, state: StateStore) -> None:
        """For the Run's whole schedule: HOLD_SECONDS after a completion was held, write
        what is still held."""
        while True:
            if not self.count:
                self._wake = anyio.Event()
                await self._wake.wait()
                self._wake = None
            await anyio.sleep(HOLD_SECONDS)
            state.flush()


@dataclass(frozen=True)
class RunContext:
    ports: VerifyPorts
    workspace: Workspace
    options: VerifyOptions
    # The Run's current request documents (``RunResult.requests``), by ordinal: a change makes
    # a new document and ``save`` or ``keep`` puts it in its slot; none is modified in place.
    requests: list[Request] = field(default_factory=list)
    _slots: dict[str, int] = field(default_factory=dict, repr=False)
    held: HeldCompletions = field(default_factory=HeldCompletions, repr=False)

    def track(self, requests: list[Request]) -> list[Request]:
        """Take ``requests`` as the Run's documents; the list ``save`` keeps current."""
        self.requests[:] = requests
        self._slots.clear()
        self._slots.update((request.id, index) for index, request in enumerate(requests))
        return self.requests

    def now(self) -> str:
        return timestamp(self.ports.review.clock.now())

    @property
    def ignore_gates(self) -> bool:
        return self.options.ignore_gates or self.workspace.dependency_gates == IGNORE_GATES

    def save(self, request: Request) -> None:
        """Save a request document as it is now, make it the Run's current one and show it
        to the observer."""
        self.ports.state.update_request(request_record(request))
        self.keep(request)

    def save_held(self, request: Request) -> None:
        """``save``, the write held for the Run's next transaction (``HeldCompletions``), and
        not shown yet (the caller shows it once its transaction committed): for a request
        saved RUNNING beside its claim, whose settlement usually replaces it before it is
        written."""
        self.ports.state.update_request(request_record(request), held=self.held.watch())
        self.keep(request, observe=False)

    def current(self, request: Request) -> Request:
        """The Run's current document of ``request``'s ID (``request`` itself when the Run
        does not track it)."""
        slot = self._slots.get(request.id)
        return request if slot is None else self.requests[slot]

    def stage(self, request: Request) -> None:
        """Make ``request`` the Run's current document of its ID before the Run is stored:
        ``create_run`` writes it as it then is; nobody is shown it yet."""
        self.requests[self._slots[request.id]] = request

    def current_of(self, request_id: str) -> Request:
        """The Run's current document of the request ``request_id``."""
        return self.requests[self._slots[request_id]]

    def keep(self, request: Request, *, observe: bool = True) -> None:
        """Make ``request`` (saved by the caller) the Run's current document of its ID, and
        show it to the observer (unless ``observe`` is False)."""
        slot = self._slots.get(request.id)
        if slot is not None:
            self.requests[slot] = request
        if observe:
            self.observe(request)

    def observe(self, request: Request) -> None:
        """Tell the progress observer (if any) what the request is now."""
        if self.ports.observer is not None:
            self.ports.observer.request_changed(request)

    def not_run_reason(self, profile: Profile) -> str | None:
        """Why this ``verify`` does not review an eval of this kind, or None when it does."""
        if isinstance(profile, RuntimeProfile) and self.ports.runtime is None:
            return NO_RUNTIME_PORTS
        return None
