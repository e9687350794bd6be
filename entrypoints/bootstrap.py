"""The use cases a command calls, built from the container (the composition root's other half).

A command parses its arguments, asks ``Services`` for one service and renders the result.
Everything in between lives here, once: where the state home is, which state a command
opens (readers never create one) and the dead owners every reader settles first, the
tool-session ports, the producer, the team review store, the doctor's machine checks, the
MCP server's serving Run, and the port bundles of ``Verify``, ``Status``, ``HumanReviews``
and ``FollowUp``. Nothing here imports a command module: commands import this.
The terminal reviewer and the CLI share it, so ``request …`` and ``review`` act on the same
requests with the same rules.

Domain modules are imported inside the method that needs them, so ``--help`` stays fast.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import socket
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from artifactize.entrypoints.container import FALLBACK_EDITOR, ON_WINDOWS, Container
from artifactize.entrypoints.errors import CommandError
from artifactize.entrypoints.options import GlobalOptions
from artifactize.ports.ids import RequestId, RunId
from artifactize.ports.statuses import ErrorCode, RunStatus

if TYPE_CHECKING:
    from artifactize.domain.project.observations import Observer
    from artifactize.domain.project.workspace import EvalRef, Workspace
    from artifactize.domain.reviews.remote.sync import RemoteSync
    from artifactize.domain.reviews.reuse.keys import KeyInputs
    from artifactize.domain.reviews.run.documents import RunResult
    from artifactize.domain.reviews.run.policy import VerifyOptions
    from artifactize.domain.reviews.run.selection import Selection
    from artifactize.domain.tools.sessions import SessionPorts
    from artifactize.domain.use_cases.api_keys import ApiKeys
    from artifactize.domain.use_cases.config_service import ConfigService
    from artifactize.domain.use_cases.doctor import Doctor, DoctorPorts, StoreCheck
    from artifactize.domain.use_cases.followup import FollowUp
    from artifactize.domain.use_cases.human_reviews import HumanReviews
    from artifactize.domain.use_cases.serving import ServeSelection, ServingPorts, ServingRun
    from artifactize.domain.use_cases.status import Status, StatusOptions, StatusReport
    from artifactize.domain.use_cases.tools_check import ToolsCheck
    from artifactize.domain.use_cases.verify import Verify
    from artifactize.entrypoints.init_project import InitResult
    from artifactize.entrypoints.monitor_tui.source import MonitorSource
    from artifactize.entrypoints.review_tui.session import ReviewSession
    from artifactize.ports.coding_agents import CodingAgents
    from artifactize.ports.collector import CollectorPause, CollectorPauseUntilDecided
    from artifactize.ports.conversations import ConversationStore
    from artifactize.ports.documents import ProducerDocument
    from artifactize.ports.file_index import FileIndex
    from artifactize.ports.mcp_audit import McpAuditStore
    from artifactize.ports.model import ModelBackends, ModelCatalog
    from artifactize.ports.progress import RunObserver
    from artifactize.ports.review_store import RemoteStore, RemoteStores
    from artifactize.ports.secrets import SecretStore
    from artifactize.ports.state import StateStore
    from artifactize.ports.store_server_storage import ReviewStoreDb
    from artifactize.ports.stored_answers import StoredAnswer, StoredAnswers

__all__ = ["ON_WINDOWS", "Container", "PreparedRun", "PreparedServer", "Services"]


def _invocation(selector: str | Selection | None, options: StatusOptions) -> str:
    """What one ``status`` invocation asked, as text: its selector and every option (the
    ``--reuse-only`` kinds sorted: a set's order changes from process to process)."""
    policy = options.policy
    return json.dumps(
        [
            repr(selector),
            options.recursive,
            options.ignore_gates,
            options.force,
            sorted(str(kind) for kind in policy.reuse_only),
            policy.profile,
            policy.jobs,
            policy.max_executions,
            policy.fingerprint_jobs,
        ]
    )


def verify_invocation(selector: Selection, options: VerifyOptions, quiet: bool, live: bool) -> str:
    """What one ``verify`` invocation asked, as text (``_invocation``'s, for a Run plan):
    its selection, every option of the Run, ``--quiet``, and whether its progress is live
    on a terminal."""
    policy = options.policy
    return json.dumps(
        [
            "verify",
            repr(selector),
            options.force,
            options.wait,
            options.recursive,
            options.ignore_gates,
            options.wait_timeout_ms,
            options.comment,
            sorted(str(kind) for kind in policy.reuse_only),
            policy.profile,
            policy.jobs,
            policy.max_executions,
            policy.fingerprint_jobs,
            quiet,
            live,
        ]
    )


@dataclass
class VerifyPlanning:
    """Where one ``verify`` invocation's Run plan is kept (``domain.reviews.run.replay``):
    its stored answers, its first key, and the observer its keys are computed through."""

    answers: StoredAnswers
    first_key: str
    observer: Observer


@dataclass(frozen=True)
class ReplayedRun:
    """What a replayed Run prints: its progress lines, its answer (in pieces of UTF-8,
    printed one after the other), and its exit code."""

    progress: list[tuple[bool, str]]
    answer: list[memoryview]
    exit_code: int


# The shell's own bookkeeping, left out of a stored answer's key: the last command's path
# (`_`), the folder before the last `cd` (`OLDPWD`) and how deep shells are nested (`SHLVL`:
# `make` and scripts add one) change between two identical commands, and nothing
# artifactize computes reads them (a program a Run starts does see them: none is started
# by a kept answer or a replayed Run).
SHELL_BOOKKEEPING = frozenset({"_", "OLDPWD", "SHLVL"})
SESSIONS_FOLDER = "tool-sessions"
CODING_AGENTS_FOLDER = "coding-agents"
RUNS_FOLDER = "runs"
PRIVATE_DIRECTORY_MODE = 0o700
TEST_ENDPOINT_VARIABLES = {
    "openai": "ARTIFACTIZE_OPENAI_BASE_URL",
    "anthropic": "ARTIFACTIZE_ANTHROPIC_BASE_URL",
    "openai-chat": "ARTIFACTIZE_OPENAI_CHAT_BASE_URL",
}
LOOPBACK_STORE_FIX = (
    "set ARTIFACTIZE_REMOTE=off. (To publish verdicts of a local model such as Ollama, "
    "set ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS=1.)"
)


@dataclass
class PreparedRun:
    """A ``verify`` Run with its fingerprints computed, ready to run (``run``)."""

    service: Verify
    refs: list[EvalRef]
    keys: list[KeyInputs]  # each ref's key inputs, in the same order
    remote: RemoteSync | None
    runs_folder: Path
    # The Run's freeze (``adapters.collector.freeze_collector``), entered before the
    # workspace is loaded: the load and the keys allocate in keeping pauses, so the loaded
    # workspace and the keys join the frozen objects as each pause ends, and no pass
    # traverses them between the load and the Run (at 10,000 Artifacts a gen-0, a gen-1
    # and a gen-2 pass over the workspace, ~0.3 s, then a gen-0 over the keys). Given back
    # when the Run ends, or by ``close`` when it never runs.
    frozen: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    planning: VerifyPlanning | None = None  # a plan may be kept of this Run
    stamp: str | None = None  # the history's, read before the Run looked anything up

    async def run(self) -> RunResult:
        try:
            return await self.service.run(self.refs, self.keys)
        finally:
            self.close()
            if self.remote is not None:
                with anyio.CancelScope(shield=True):
                    await self.remote.aclose()

    def close(self) -> None:
        """Give the frozen objects back to the collector (once; again is nothing)."""
        self.frozen.close()

    def remove_empty_scratch(self, run_id: str) -> None:
        """A Run's scratch folder, once every tool call removed its own private directories,
        is empty: do not leave one empty folder per Run behind. Anything left in it stays."""
        with contextlib.suppress(OSError):
            (self.runs_folder / run_id).rmdir()


@dataclass
class PreparedServer:
    """One ``artifactize mcp`` serving Run, checked and ready to serve."""

    run: ServingRun
    audit: McpAuditStore
    scratch: Path

    def finish(self) -> None:
        """After the run: release the state, drop the scratch folder if the calls left it
        empty (anything left in it stays)."""
        self.audit.close()
        with contextlib.suppress(OSError):
            self.scratch.rmdir()


def state_problem(path: str) -> str | None:
    """Why ``path`` (existing or to be created) cannot hold the state, or None. Nothing is
    created: a missing state home is judged by its nearest existing parent."""
    probe = Path(path).absolute()
    while not probe.exists():
        if probe.parent == probe:
            return "no existing parent folder"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable by this user"
    return None


@dataclass
class Services:
    """The use cases of one invocation: its global options over the container."""

    fallback_editor = FALLBACK_EDITOR  # the terminal reviewer's, with no $VISUAL or $EDITOR

    container: Container
    options: GlobalOptions
    progress: Callable[[str], None] = print
    observer: RunObserver | None = None  # verify's live progress (entrypoints/cli/progress.py)
    _file_index: list[FileIndex | None] = field(default_factory=list, init=False, repr=False)

    # Where things are ------------------------------------------------------------------
    def repo(self) -> str:
        return os.path.realpath(self.options.repo)

    def state_dir(self) -> str:
        from artifactize.domain.project.state_home import state_home

        return state_home(os.environ, str(Path.home()), self.options.state_dir, windows=ON_WINDOWS)

    def session_ports(self) -> SessionPorts:
        """Tool sessions live below the state home, never in the reviewed repository."""
        ports: SessionPorts = self.container.session_ports(
            parent=str(Path(self.state_dir()) / SESSIONS_FOLDER)
        )
        return ports

    def open_state(self, *, create: bool) -> StateStore | None:
        from artifactize.ports.state import StateError

        try:
            store: StateStore | None = self.container.state_stores().open(
                self.state_dir(), create=create
            )
        except StateError as exc:
            raise CommandError(str(exc)) from None
        if store is not None:
            _settled, unsettled = self._settle_dead_runs(store)
            if unsettled:  # the state could not be written: read them as settled
                from artifactize.entrypoints.dead_owner_view import DeadOwnersView
                from artifactize.kernel.timestamps import timestamp

                now = timestamp(self.container.clock().now())
                return cast("StateStore", DeadOwnersView(store, unsettled, now))
        return store

    def monitor_source(self, *, all_repos: bool) -> MonitorSource:
        """What ``monitor`` reads: Runs of this repository (or every one), through a
        read-only state connection opened on first read (and again after a failure); a
        RUNNING Run whose owner died reads as settled (the process table says who runs)."""
        from artifactize.entrypoints.monitor_tui.source import MonitorSource
        from artifactize.kernel.timestamps import timestamp
        from artifactize.ports.sessions import ProcessIdentity

        state_dir = self.state_dir()
        stores = self.container.state_stores()
        table, clock = self.container.process_table(), self.container.clock()
        return MonitorSource(
            lambda: stores.open(state_dir, create=False, read_only=True),
            None if all_repos else self.repo(),
            lambda pid, start_time: bool(table.is_alive(ProcessIdentity(pid, start_time))),
            lambda: timestamp(clock.now()),
        )

    def settle_dead_runs(self, store: StateStore) -> tuple[str, ...]:
        """Every reader of the state first settles the Runs whose owner died (ERROR /
        OWNER_DIED, with their requests) and removes their scratch folders, so a killed
        ``verify`` never leaves a Run RUNNING for good. The owner is that very process (pid
        and start time, never a reused pid); the scratch folders are removed no-follow."""
        return self._settle_dead_runs(store)[0]

    def _settle_dead_runs(
        self, store: StateStore
    ) -> tuple[tuple[str, ...], frozenset[tuple[int, float]]]:
        """The IDs settled, and the dead owners whose Runs could not be written (a full,
        read-only or busy state: the next reader settles them; this one reads them settled,
        ``DeadOwnersView``)."""
        from artifactize.ports.sessions import ProcessIdentity
        from artifactize.ports.state import StateError

        table = self.container.process_table()
        dead: set[tuple[int, float]] = set()

        def owner_alive(pid: int, start_time: float) -> bool:
            alive = bool(table.is_alive(ProcessIdentity(pid, start_time)))
            if not alive:
                dead.add((pid, start_time))
            return alive

        try:
            settled = store.settle_dead_runs(owner_alive)
        except StateError:
            return (), frozenset(dead)
        self._sweep_dead_run_folders(store)
        return settled, frozenset()

    def _sweep_dead_run_folders(self, store: StateStore) -> None:
        """Remove ``<state>/runs/RUN`` of every Run that ended OWNER_DIED (its owner cannot)."""
        try:
            folders = list((Path(self.state_dir()) / RUNS_FOLDER).iterdir())
        except OSError:
            return
        scratch = self.container.scratch()
        for folder in folders:
            head = store.run_head(RunId(folder.name))
            if head is None or head.status != RunStatus.ERROR:
                continue  # a live Run's folder, most often: its status alone is read
            run = store.get_run(RunId(folder.name))
            if run is None or run.data.error_code != ErrorCode.OWNER_DIED:
                continue
            with contextlib.suppress(OSError):
                scratch.remove_tree(str(folder))

    def existing_state(self, request_id: str | None = None) -> StateStore:
        """The existing state; actions never create one (no state: no request to act on,
        and the refusal names ``request_id`` when given)."""
        from artifactize.domain.reviews.human.errors import REQUEST_ID_NOT_FOUND, REQUEST_NOT_FOUND

        store = self.open_state(create=False)
        if store is None:
            missing = REQUEST_NOT_FOUND if request_id is None else REQUEST_ID_NOT_FOUND
            raise CommandError(missing.format(id=request_id))
        return store

    def producer(self) -> ProducerDocument:
        from artifactize.entrypoints.version import VERSION

        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = "unknown"
        return {"name": f"{user}@{socket.gethostname()}", "version": VERSION}

    def output_root(self, run_id: str) -> str:
        """A private (0700) scratch folder for ``run_id`` below ``<state>/runs``."""
        runs = Path(self.state_dir()) / RUNS_FOLDER
        path = runs / run_id
        try:  # asked once per request: one system call once the folder exists
            path.mkdir(mode=PRIVATE_DIRECTORY_MODE)
        except FileExistsError:
            if not path.is_dir():
                raise
        except FileNotFoundError:  # the Run's first request: ``runs`` first
            runs.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
            path.mkdir(mode=PRIVATE_DIRECTORY_MODE, exist_ok=True)
        return str(path)

    # Declarations ----------------------------------------------------------------------
    def init_project(self) -> InitResult:
        """``init``: detect the project at ``--repo`` and write its starter ``index.artf``
        and ``.artfignore`` (both or neither, never over an existing file)."""
        from artifactize.entrypoints.init_project import init_project

        return init_project(Path(self.options.repo))

    def config(self) -> ConfigService:
        service: ConfigService = self.container.config_service()
        return service

    def indexed_config(self) -> ConfigService:
        """``config()`` reading unchanged declarations from the file index, and keeping
        what it parsed there (status, verify)."""
        index = self.file_index()
        return self.config() if index is None else replace(self.config(), index=index)

    def reading_config(self) -> ConfigService:
        """``config()`` reading unchanged declarations from the file index without writing
        it (``config check`` and ``config graph`` write nothing): a declaration ``status``
        or ``verify`` parsed is not parsed again (at 10,000 Artifacts, about half of a
        ``config check``)."""
        index = self.file_index()
        if index is None:
            return self.config()
        reading: FileIndex = self.container.reading_file_index(index=index)
        return replace(self.config(), index=reading)

    def file_index(self) -> FileIndex | None:
        """The state home's file index (docs/reviews.md), one per invocation; None when
        the state home does not exist yet (asked again later: the first ``verify`` creates
        it, then keeps what its keys read) or lies inside the repository."""
        if not self._file_index:
            index = self._open_file_index()
            if index is None and not Path(self.state_dir()).is_dir():
                return None
            self._file_index.append(index)
        return self._file_index[0]

    def _open_file_index(self) -> FileIndex | None:
        state = self._optimisations_home()
        if state is None:
            return None
        index: FileIndex = self.container.file_index(state_dir=state)
        return index

    def _optimisations_home(self) -> str | None:
        """The state home, where what only saves work is kept (the file index, stored
        answers); None when it does not exist yet or lies inside the repository."""
        from artifactize.domain.project.state_home import StateLocationError, check_outside_repo

        state = self.state_dir()
        if not Path(state).is_dir():
            return None
        try:
            check_outside_repo(os.path.realpath(state), self.repo())
        except StateLocationError:
            return None
        return state

    def tools_check(self) -> ToolsCheck:
        service: ToolsCheck = self.container.tools_check(
            session_ports=self.session_ports(), load=self.reading_config().load
        )
        return service

    # Runs ------------------------------------------------------------------------------
    def verify_options(self, choose: Callable[[str, str], VerifyOptions]) -> VerifyOptions:
        return choose(self.repo(), self.state_dir())

    def verify_planning(self, invocation: str) -> VerifyPlanning | None:
        """Where this ``verify`` invocation's Run plan is kept, or None when none may be kept
        nor used: no state home yet (or one inside the repository), or a team store is
        configured (a replay would not look the store up)."""
        from artifactize.ports.review_store import RemoteConfigError

        home = self._optimisations_home()
        if home is None:
            return None
        try:
            if self.remote_stores().settings(home) is not None:
                return None
        except RemoteConfigError:
            return None  # the Run says why
        answers = self.container.stored_answers(
            state_dir=home, repository=self.repo(), command="verify"
        )
        first = self._answer_key(invocation, "verify")
        return VerifyPlanning(answers, first, self._observer(answers))

    def replay_verify(self, planning: VerifyPlanning) -> ReplayedRun | None:
        """The Run planned for this invocation, written again with its own ID, times and
        owner, when every question its computation asked of the files and programs gets
        the same answer and the history's stamp is the one it was planned at; else None
        (nothing written: the whole ``verify`` runs)."""
        from artifactize.domain.project.observations import checking
        from artifactize.domain.reviews.run.replay import RunIdentity, RunPlan, filler
        from artifactize.domain.reviews.timestamps import new_run_id
        from artifactize.kernel.timestamps import timestamp
        from artifactize.ports.state import StateError

        container = self.container
        created = timestamp(container.clock().now())
        found = planning.answers.find_observed(planning.first_key)
        if found is None:
            return None
        checks = container.parallel_checks()
        with checking(found[0], container.filesystem(), container.programs(), checks) as held:
            # While the observations are checked (in other processes where they can be):
            # what the replay needs whatever they say, wasted when they say False.
            plan = RunPlan.from_data(found[1].data, found[1].exit_code)
            store = None if plan is None else self.open_state(create=False)
            if plan is None or store is None or not held():
                return None
        own = container.process_table().own_identity()
        run_id = new_run_id(container.ids())
        completed = timestamp(container.clock().now())
        identity = RunIdentity(run_id, created, completed, own.pid, own.create_time)
        fill = filler(plan.placeholders, identity)
        try:
            if not store.replay_run(plan.filled_rows(fill), plan.stamp, plan.touched):
                return None
        except StateError:
            return None  # the whole verify meets it again, and says so
        progress = [(timed, fill(text)) for timed, text in plan.progress]
        return ReplayedRun(progress, plan.answer_pieces(identity), plan.exit_code)

    def keep_verify_plan(
        self,
        prepared: PreparedRun,
        result: RunResult,
        progress: list[tuple[bool, str]],
        render: Callable[[RunResult], str],
        exit_code: int,
    ) -> None:
        """Keep the plan of a Run that started nothing and waits for nothing, when what its
        keys observed can be asked again and the history did not move while it ran."""
        from artifactize.domain.reviews.run import replay
        from artifactize.domain.reviews.run.documents import request_record, run_record
        from artifactize.ports.state import StateError
        from artifactize.ports.stored_answers import Observed, StoredAnswer

        planning, stamp = prepared.planning, prepared.stamp
        if planning is None or stamp is None or prepared.remote is not None:
            return
        if not planning.observer.complete:
            return
        if not replay.replayable(result):
            return
        state = prepared.service.ports.state
        try:
            if state.history_stamp() != stamp:
                return
            placeholders = replay.RunIdentity.placeholders(self.container.ids())
            shown = replay.with_identity(result, placeholders)
            rows = state.run_rows(
                run_record(shown.run, prepared.service.options.repo),
                [request_record(request) for request in shown.requests],
            )
        except StateError:
            return
        answer = replay.printed_bytes(render(shown))
        if answer is None:
            return
        plan = replay.RunPlan(
            stamp,
            placeholders,
            rows,
            replay.touched(result),
            replay.progress_lines(progress, result.run.id, placeholders.run_id),
            answer,
            exit_code,
        )
        data = plan.to_data() if plan.holds_no_trace_of(result) else None
        if data is not None:
            observed = Observed(planning.first_key, [*planning.observer.log])
            planning.answers.keep(planning.first_key, StoredAnswer(data, exit_code), observed)

    def prepare_verify(
        self,
        selector: str | Selection | None,
        select_all: bool,
        choose: Callable[[str, str], VerifyOptions],
        planning: VerifyPlanning | None = None,
    ) -> PreparedRun:
        """Load the workspace, select, check the state location, open the state and the team
        store, and compute the fingerprints. ``choose(repo, state_dir)`` gives the options;
        with ``planning``, the workspace and the keys are computed through its observer."""
        repo = self.repo()
        config = self.indexed_config()
        state = self.state_dir()
        options = choose(repo, state)
        frozen = contextlib.ExitStack()
        frozen.enter_context(self.container.collector_freeze()())
        try:
            prepared = self._prepare_verify(
                repo, state, config, options, selector, select_all, frozen, planning
            )
        except BaseException:
            frozen.close()
            raise
        return prepared

    def _prepare_verify(
        self,
        repo: str,
        state: str,
        config: ConfigService,
        options: VerifyOptions,
        selector: str | Selection | None,
        select_all: bool,
        frozen: contextlib.ExitStack,
        planning: VerifyPlanning | None,
    ) -> PreparedRun:
        """``prepare_verify`` inside the Run's freeze (``frozen``, handed to the Run)."""
        from artifactize.domain.project.state_home import StateLocationError, check_outside_repo
        from artifactize.domain.reviews.reuse.fingerprints import FingerprintError
        from artifactize.domain.reviews.run.context import KeySources, VerifyPorts
        from artifactize.domain.reviews.run.variants import with_variant
        from artifactize.domain.use_cases.verify import Verify

        container = self.container
        variant = options.policy.profile
        keeping = replace(config, pause_collector=container.collector_pause_keeping())
        observer = None if planning is None else planning.observer
        if observer is not None:  # the workspace's load observed, as ``status``'s
            checks = replace(
                container.program_checks(),
                filesystem=observer.filesystem,
                programs=observer.programs,
            )
            keeping = replace(keeping, filesystem=observer.filesystem, programs=checks)
        loaded = keeping.load(repo)
        refs = self.select(loaded, selector, select_all)
        workspace, refs = self.with_variant(loaded, refs, variant)
        try:
            check_outside_repo(os.path.realpath(state), repo)
        except StateLocationError as exc:
            raise CommandError(str(exc)) from None
        backends = container.model_backends(secrets=self.secrets())
        remote = self._remote_sync(state, backends, workspace)  # before any state is created
        store = self.open_state(create=True)
        assert store is not None
        stamp = None if planning is None else store.history_stamp()
        scripts = container.fingerprint_scripts()
        review = container.review_ports(
            backends=backends,
            sessions=self.session_ports(),
            reload=lambda: with_variant(config.load(repo), variant),
            scripts=scripts,
            coding_agents=self.coding_agents(),
            threads=self.container.worker_threads(),
        )
        ports = VerifyPorts(
            review=review,
            state=store,
            processes=container.process_table(),
            make_output_root=self.output_root,
            producer=self.producer(),
            ids=container.ids(),
            conversations=container.conversations(state_dir=state),
            runtime=container.runtime_ports(scripts=scripts),
            remote=remote,
            progress=self.progress,
            observer=self.observer,
            index=self.file_index(),
            pause_collector=container.collector_pause_keeping(),
            key_sources=(
                None
                if observer is None
                else KeySources(observer.filesystem, observer.scripts(scripts))
            ),
        )
        service = Verify(ports, workspace, options)
        try:
            keys = service.prepare(refs)
        except FingerprintError as exc:
            raise CommandError(str(exc)) from None
        runs = Path(state) / RUNS_FOLDER
        return PreparedRun(service, refs, keys, remote, runs, frozen, planning, stamp)

    def select(
        self, workspace: Workspace, selector: str | Selection | None, select_all: bool
    ) -> list[EvalRef]:
        from artifactize.domain.reviews.run import selection

        try:
            if isinstance(selector, selection.Selection):
                return selector.select(workspace)
            return selection.select_evals(workspace, selector, select_all)
        except selection.SelectionError as exc:
            raise CommandError(str(exc)) from None

    def with_variant(
        self, workspace: Workspace, refs: list[EvalRef], variant: str | None
    ) -> tuple[Workspace, list[EvalRef]]:
        """``--profile``: the workspace with the variant swapped in, and the same selection
        over it; a variant none of ``refs`` declares is refused (exit 2)."""
        from artifactize.domain.reviews.run import variants

        if variant is None:
            return workspace, refs
        try:
            variants.check_variant(refs, variant)
        except variants.UnknownVariant as exc:
            raise CommandError(str(exc)) from None
        swapped = variants.with_variant(workspace, variant)
        return swapped, variants.reselect(swapped, refs)

    def _remote_sync(
        self, state: str, backends: ModelBackends, workspace: Workspace
    ) -> RemoteSync | None:
        """The team review store for this Run, or None. A loopback model endpoint (a test
        variable, or a profile's ``base_url``) rules the store out, so results of a fake
        provider can never reach a team's store, unless the user allows loopback models."""
        from artifactize.domain.declarations.model import AgentProfile
        from artifactize.domain.reviews.remote.sync import RemoteSync
        from artifactize.ports.model import BackendUnavailable
        from artifactize.ports.review_store import RemoteConfigError

        stores = self.remote_stores()
        try:
            settings = stores.settings(state)
        except RemoteConfigError as exc:
            raise CommandError(str(exc)) from None
        if settings is None:
            return None
        allowed = backends.loopback_models_allowed()
        for backend, variable in TEST_ENDPOINT_VARIABLES.items():
            try:
                endpoint = backends.test_endpoint(backend)
                loopback = endpoint is not None and backends.endpoint(backend).loopback
            except BackendUnavailable:
                loopback = True  # an invalid value: the review will say why; stay safe
            if loopback and not allowed:
                raise CommandError(
                    f"{variable} is set, so verify will not use the remote "
                    f"review store; {LOOPBACK_STORE_FIX}"
                )
        for ref in workspace.evals():
            profile = ref.eval.profile
            if not isinstance(profile, AgentProfile) or profile.base_url is None:
                continue
            try:
                loopback = backends.endpoint(profile.backend, profile.base_url).loopback
            except BackendUnavailable:
                loopback = True
            if loopback and not allowed:
                raise CommandError(
                    f"The base_url of {ref.qualified_id} is a loopback endpoint, so verify "
                    f"will not use the remote review store; {LOOPBACK_STORE_FIX}"
                )
        return RemoteSync(stores.open(settings), self.progress)

    def replay_paused(self) -> AbstractContextManager[Callable[[], None]]:
        """The cyclic collector paused while a replay is tried and printed: what it reads
        (the observations, the plan's rows and answer) makes no cycles and stays alive until
        it is printed, and the collector's passes over it were 0.2 s of a replay at 10,000
        Artifacts. The block calls what it is given once the replay holds; a replay that
        does not hold freezes nothing (``adapters.collector.pause_collector_until_decided``)."""
        pause: CollectorPauseUntilDecided = self.container.collector_pause_until_decided()
        return pause()

    def collector_paused(self) -> AbstractContextManager[None]:
        """The cyclic collector paused for the whole of a short command whose loaded
        workspace stays alive until it exits (``status``), and what is alive then kept out
        of its passes: its load, report and rendering make next to no cycles, and each pass
        traversed the workspace again (about a tenth of a warm ``status`` at 10,000
        Artifacts, the rendering's and the exit's passes the most)."""
        pause: CollectorPause = self.container.collector_pause_to_exit()
        return pause()

    def status(
        self, selector: str | Selection | None, options: StatusOptions
    ) -> tuple[Status, list[EvalRef]]:
        """``status`` over the existing state (none reads as "nothing reviewed yet")."""
        status, refs = self._status_without_state(selector, options)
        status.attach_state(self.open_state(create=False))
        return status, refs

    def status_answer(
        self,
        selector: str | Selection | None,
        options: StatusOptions,
        render: Callable[[StatusReport], StoredAnswer],
    ) -> StoredAnswer:
        """``status``'s answer as ``render`` prints it: the one kept in the state home when
        everything it was made of holds, else computed, and kept for next time when the
        state was not moving under it (``ports.stored_answers``; docs/reviews.md).

        Two checks, cheapest first. The first: this invocation (options, environment,
        code, the state's files) is the one the answer was kept for, and every question
        its computation asked of the files and programs gets the same answer now
        (``domain.project.observations``): nothing is loaded. The second: the workspace
        loaded and every key computed, their digest is the one the answer was kept for."""
        from artifactize.domain.project.observations import still_hold
        from artifactize.ports.stored_answers import Observed

        home = self._optimisations_home()
        answers = (
            None
            if home is None
            else self.container.stored_answers(state_dir=home, repository=self.repo())
        )
        inputs = None if answers is None else answers.inputs()
        first = None if inputs is None else self._answer_key(_invocation(selector, options), inputs)
        if answers is not None and first is not None:
            observed = answers.find_observed(first)
            filesystem, programs = self.container.filesystem(), self.container.programs()
            checks = self.container.parallel_checks()
            if observed is not None and still_hold(observed[0], filesystem, programs, checks):
                return observed[1]
        observer = self._observer(answers)
        status, refs = self._status_without_state(selector, options, observer)
        computed = status.keys(refs)
        key = None if inputs is None else self._answer_key(status.answer_inputs(computed), inputs)
        log = None if first is None or not observer.complete else Observed(first, [*observer.log])
        found = None if answers is None or key is None else answers.find(key)
        if found is not None:
            if answers is not None and key is not None and log is not None:
                answers.keep(key, found, log)  # its observations, for the first check
            return found
        state = self.open_state(create=False)
        status.attach_state(state)
        answer = render(status.report_of(computed))
        if (
            answers is not None
            and key is not None
            and (state is None or state.running_runs() == 0)
            and answers.inputs() == inputs
        ):
            answers.keep(key, answer, log)
        return answer

    def _observer(self, answers: StoredAnswers | None) -> Observer:
        """The files and programs of one ``status``, each answer logged; a log that a later
        run cannot replay (a fingerprint script ran, or no answer is kept at all) is
        incomplete."""
        from artifactize.domain.project.observations import Observer

        observer = Observer(
            self.container.filesystem(),
            self.container.programs(),
            safely_old=(lambda _: False) if answers is None else answers.safely_old,
        )
        if answers is None:
            observer.incomplete()
        return observer

    def _answer_key(self, computed: str, state: str) -> str:
        """The key of a stored answer: what the domain computed fresh (``computed``), the
        state's files (``state``), this invocation (its global options, resolved, and its
        whole environment but ``SHELL_BOOKKEEPING``) and the code that answers."""
        from artifactize.entrypoints.container import answer_code_stamp

        def keyed(environment: Mapping[str, str]) -> list[tuple[str, str]]:
            return sorted(item for item in environment.items() if item[0] not in SHELL_BOOKKEEPING)

        document = [
            answer_code_stamp(),
            repr(self.options),
            self.repo(),
            self.state_dir(),
            keyed(os.environ),
            keyed(self.container.environment()),  # the programs' (os.environ)
            state,
            computed,
        ]
        text = json.dumps(document, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _status_without_state(
        self,
        selector: str | Selection | None,
        options: StatusOptions,
        observer: Observer | None = None,
    ) -> tuple[Status, list[EvalRef]]:
        """The ``status`` use case before its state is opened; ``observer``: the files and
        programs it reads go through it (logged)."""
        from artifactize.domain.use_cases.status import Status

        config = self.indexed_config()
        observed: dict[str, Any] = {}
        if observer is not None:
            checks = replace(
                self.container.program_checks(),
                filesystem=observer.filesystem,
                programs=observer.programs,
            )
            config = replace(config, filesystem=observer.filesystem, programs=checks)
            observed = {"filesystem": observer.filesystem, "programs": checks}
        loaded = config.load(self.repo())
        refs = self.select(loaded, selector, selector is None)
        workspace, refs = self.with_variant(loaded, refs, options.policy.profile)
        scripts = self.container.fingerprint_scripts()
        ports = self.container.status_ports(
            state=None,
            scripts=scripts if observer is None else observer.scripts(scripts),
            index=self.file_index(),
            **observed,
        )
        return Status(ports, workspace, options), refs

    def coding_agents(self) -> CodingAgents:
        """Claude Code and Codex run in one empty folder of the state home (docs/agents.md)."""
        agents: CodingAgents = self.container.coding_agents(
            workdir=str(Path(self.state_dir()) / CODING_AGENTS_FOLDER)
        )
        return agents

    # Agent conversations ---------------------------------------------------------------
    def conversations(self) -> ConversationStore:
        store: ConversationStore = self.container.conversations(state_dir=self.state_dir())
        return store

    def followup(self, session_id: str) -> FollowUp:
        """Follow-ups run tools as the review did, in fresh sessions and a private folder."""
        from artifactize.domain.use_cases.followup import FollowUp

        container = self.container
        config = self.config()
        review = container.review_ports(
            backends=container.model_backends(secrets=self.secrets()),
            sessions=self.session_ports(),
            reload=lambda: config.load(self.options.repo),
            coding_agents=self.coding_agents(),
        )
        output_root = self.output_root(f"followup-{session_id}")
        return FollowUp(review, self.conversations(), config.load, output_root)

    # Human reviews ---------------------------------------------------------------------
    def reviewer_name(self, given: str | None) -> str:
        """``--reviewer``, else ``$USER`` (``$USERNAME`` on Windows); checked by the lifecycle
        as well."""
        from artifactize.domain.reviews.human.reviewers import ReviewerError, default_reviewer

        if given is not None:
            return given
        try:
            return default_reviewer(os.environ, windows=ON_WINDOWS)
        except ReviewerError as exc:
            raise CommandError(exc.message) from None

    def human_reviews(self, store: StateStore) -> HumanReviews:
        """The Human review lifecycle over ``store`` and the container's adapters."""
        from artifactize.domain.use_cases.human_reviews import HumanReviews

        container = self.container
        ports = container.human_review_ports(
            state=store,
            producer=self.producer(),
            scripts=container.fingerprint_scripts(),
            load=self.reading_config().load,  # each action's check: unchanged ones indexed
        )
        return HumanReviews(ports)

    def review_session(
        self, request_id: str | None, reviewer: str | None, *, all_repos: bool
    ) -> ReviewSession | None:
        """The terminal reviewer's session: who reviews, the state, the lifecycle, the team
        store (an invalid configuration fails before the screen opens). None when no state
        was ever recorded, so nothing waits; an unknown ``request_id`` is refused (exit 2)."""
        from artifactize.domain.reviews.human.errors import REQUEST_ID_NOT_FOUND, HumanReviewError
        from artifactize.domain.reviews.human.reviewers import ReviewerError, check_reviewer
        from artifactize.entrypoints.review_tui.session import ReviewSession

        try:
            name = check_reviewer(self.reviewer_name(reviewer))
        except ReviewerError as exc:
            raise CommandError(exc.message) from None
        store = self.open_state(create=False)
        if store is None:
            if request_id is not None:
                raise CommandError(REQUEST_ID_NOT_FOUND.format(id=request_id))
            return None
        reviews = self.human_reviews(store)
        if request_id is not None:
            try:
                reviews.resolve(RequestId(request_id))
            except HumanReviewError as exc:
                raise CommandError(exc.message) from None
        return ReviewSession(
            store=store,
            reviews=reviews,
            reviewer=name,
            remote=self.remote_store(),
            repo=None if all_repos else self.repo(),
            now=self.container.clock().now,
        )

    # The team review store -------------------------------------------------------------
    def remote_stores(self) -> RemoteStores:
        stores: RemoteStores = self.container.remote_stores()
        return stores

    def model_catalog(self) -> ModelCatalog:
        catalog: ModelCatalog = self.container.model_catalog(secrets=self.secrets())
        return catalog

    # Saved API keys ----------------------------------------------------------------------
    def secrets(self) -> SecretStore:
        secrets: SecretStore = self.container.secrets(state_dir=self.state_dir())
        return secrets

    def api_keys(self) -> ApiKeys:
        """``login`` / ``logout``: keys saved for the endpoint a run would use."""
        from artifactize.domain.use_cases.api_keys import ApiKeys

        secrets = self.secrets()
        return ApiKeys(self.container.model_backends(secrets=secrets), secrets)

    def doctor(self) -> tuple[Doctor, Workspace | None, str | None]:
        """The doctor, the workspace (None, with why, when it does not load)."""
        from artifactize.domain.use_cases.doctor import Doctor

        workspace, error = None, None
        try:
            workspace = self.reading_config().load(self.repo())
        except Exception as exc:  # a broken workspace is one finding among others
            error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Doctor(self._doctor_ports()), workspace, error

    def _doctor_ports(self) -> DoctorPorts:
        """The machine-side checks: nothing here creates or changes anything."""
        from artifactize.domain.use_cases.doctor import DoctorPorts
        from artifactize.entrypoints.container import DESKTOP_OPENER

        state = self.state_dir()
        return DoctorPorts(
            backends=self.container.model_backends(secrets=self.secrets()),
            catalog=self.model_catalog(),
            programs=self.container.programs(),
            environment=self.container.environment(),
            state_dir=state,
            state_problem=lambda: state_problem(state) or self._damaged_state(),
            store=lambda: self._store_check(state),
            desktop_opener=DESKTOP_OPENER,
            fallback_editor=FALLBACK_EDITOR,
            cwd=self.repo(),
            coding_agents=self.coding_agents(),
        )

    def _damaged_state(self) -> str | None:
        """Why the existing state cannot be opened (damaged, not a state), or None; opened
        read-only, so nothing is written."""
        from artifactize.ports.state import StateError

        try:
            self.container.full_state_check()(self.state_dir())  # not a remembered check
            store = self.container.state_stores().open(
                self.state_dir(), create=False, read_only=True
            )
        except StateError as exc:
            return str(exc)
        close = getattr(store, "close", None)
        if close is not None:
            close()
        return None

    async def _store_check(self, state: str) -> StoreCheck:
        """Does the team store answer? It is only asked who the token belongs to."""
        from artifactize.domain.use_cases.doctor import PROBE_TIMEOUT_SECONDS, StoreCheck
        from artifactize.ports.review_store import RemoteConfigError, RemoteFailure

        stores = self.remote_stores()
        try:
            settings = stores.settings(state)
        except RemoteConfigError as exc:
            return StoreCheck(configured=True, reachable=False, detail=str(exc))
        if settings is None:
            return StoreCheck(configured=False, detail=stores.switched_off() or "")
        remote = stores.open(settings)
        try:
            with anyio.fail_after(PROBE_TIMEOUT_SECONDS):
                principal = await remote.whoami()
        except RemoteFailure as exc:
            return StoreCheck(True, settings.url, exc.status is not None, exc.message)
        except TimeoutError:
            return StoreCheck(True, settings.url, False, "no answer within 2 s")
        finally:
            with anyio.CancelScope(shield=True):
                await remote.aclose()
        return StoreCheck(True, settings.url, True, f"token of {principal.name}")

    # The MCP server -----------------------------------------------------------------------
    def prepare_server(self, selection: ServeSelection, transport: str) -> PreparedServer:
        """Workspace, scope and pins, the state's MCP audit, tool-session ports and a private
        scratch folder, all checked before serving; raises ``CommandError`` (exit 2)."""
        from artifactize.domain.use_cases.serving import ServeRefused, ServingRun, prepare_scope

        container = self.container
        repo = self.repo()
        # Unchanged declarations come from the file index, as for `config check` (nothing
        # written): at 10,000 Artifacts the server answered its client 3 s after its start.
        workspace = self.reading_config().load(repo)
        try:
            served = prepare_scope(workspace, selection, container.tool_ports())
        except ServeRefused as exc:  # a pin failure carries the review's PREPARATION_FAILED
            raise CommandError(exc.message) from None
        state, audit, ports = self._serving_ports(repo)
        run = ServingRun(served, ports, repo, transport=transport)
        run.session_id = run.new_session_id()
        run.output_root = self.output_root(run.session_id)
        return PreparedServer(run, audit, Path(state) / RUNS_FOLDER / run.session_id)

    def _serving_ports(self, repo: str) -> tuple[str, McpAuditStore, ServingPorts]:
        """The state home (outside the repository), its MCP audit and the serving ports both
        MCP surfaces use; refusals are ``CommandError`` (exit 2), before anything is served."""
        from artifactize.domain.project.state_home import StateLocationError, check_outside_repo
        from artifactize.domain.use_cases.serving import ServingPorts
        from artifactize.ports.state import StateError

        container = self.container
        state = self.state_dir()
        try:
            check_outside_repo(os.path.realpath(state), repo)
            audit = container.mcp_audit_stores().open(state, create=True)
        except (StateLocationError, StateError) as exc:
            raise CommandError(str(exc)) from None
        assert audit is not None
        ports = ServingPorts(
            audit=audit, sessions=self.session_ports(), clock=container.clock(), ids=container.ids()
        )
        return state, audit, ports

    def prepare_control(self, transport: str) -> PreparedServer:
        """The control surface (``artifactize mcp --control``) on this repository and state
        home: the tools run this artifactize's own ``--json`` commands; raises
        ``CommandError`` (exit 2) before anything is served."""
        from artifactize.entrypoints.container import SELF_COMMAND
        from artifactize.entrypoints.mcp.control import ControlTools, control_run

        container = self.container
        repo = self.repo()
        workspace = self.reading_config().load(repo)  # a broken workspace refuses the start
        state, audit, ports = self._serving_ports(repo)
        tools = ControlTools(
            repo,
            state,
            SELF_COMMAND,
            container.processes(),
            dict(os.environ),
            threads=container.worker_threads(),
        )
        run = control_run(tools, ports, repo, transport, workspace)
        return PreparedServer(run, audit, Path(state) / RUNS_FOLDER / run.session_id)

    def remote_store(self) -> RemoteStore | None:
        """The configured team review store, or None. An invalid configuration is an error
        here, before anything settles, so a submission is never saved without its publish."""
        from artifactize.ports.review_store import RemoteConfigError

        stores = self.remote_stores()
        try:
            settings = stores.settings(self.state_dir())
        except RemoteConfigError as exc:
            raise CommandError(str(exc)) from None
        return stores.open(settings) if settings is not None else None

    def review_store_db(self, *, create: bool, database: str | None = None) -> ReviewStoreDb | None:
        """The store a team server keeps in ``database`` (a SQLAlchemy URL), by default in
        ``<state-dir>/review-store.sqlite``."""
        from artifactize.ports.store_server_storage import ReviewStoreDbError

        try:
            db: ReviewStoreDb | None = self.container.review_store_db(
                self.state_dir(), create=create, database=database
            )
        except ReviewStoreDbError as exc:
            raise CommandError(str(exc)) from None
        return db

    def review_store_location(self, database: str) -> str:
        """``database`` as messages show it: a file path, or the URL without its password."""
        from artifactize.ports.store_server_storage import ReviewStoreDbError

        try:
            shown: str = self.container.review_store_location(self.state_dir(), database)
        except ReviewStoreDbError as exc:
            raise CommandError(str(exc)) from None
        return shown
