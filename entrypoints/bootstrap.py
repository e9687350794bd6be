"""The use cases a command calls, built from the container (the composition root's other half).

A command parses its arguments, asks ``Services`` for one service and renders the result.
Everything in between lives here, once: where the state home is, which state a command
opens (readers never create one), the tool-session ports, the producer, the team review
store, and the port bundles of ``Verify``, ``Status``, ``HumanReviews`` and ``FollowUp``.
The terminal reviewer and the CLI share it, so ``request …`` and ``review`` act on the same
requests with the same rules.

Domain modules are imported inside the method that needs them, so ``--help`` stays fast.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from artifactize.entrypoints.cli.global_options import GlobalOptions
from artifactize.entrypoints.container import ON_WINDOWS, Container
from artifactize.entrypoints.errors import CommandError

if TYPE_CHECKING:
    from artifactize.domain.config_service import ConfigService
    from artifactize.domain.doctor import Doctor
    from artifactize.domain.reviews.agent.followup import FollowUp
    from artifactize.domain.reviews.human.lifecycle import HumanReviews
    from artifactize.domain.reviews.remote.sync import RemoteSync
    from artifactize.domain.reviews.run.context import VerifyOptions
    from artifactize.domain.reviews.run.documents import RunResult
    from artifactize.domain.reviews.run.selection import Selection
    from artifactize.domain.reviews.run.status import Status, StatusOptions
    from artifactize.domain.reviews.run.verify import Verify
    from artifactize.domain.tools.sessions import SessionPorts
    from artifactize.domain.tools.tools_check import ToolsCheck
    from artifactize.domain.workspace import EvalRef, Workspace
    from artifactize.entrypoints.monitor_tui.source import MonitorSource
    from artifactize.ports.conversations import ConversationStore
    from artifactize.ports.documents import ProducerDocument
    from artifactize.ports.model import ModelBackends, ModelCatalog
    from artifactize.ports.progress import RunObserver
    from artifactize.ports.review_store import RemoteStore, RemoteStores
    from artifactize.ports.state import StateStore
    from artifactize.ports.store_server_storage import ReviewStoreDb

SESSIONS_FOLDER = "tool-sessions"
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
    keys: Any
    remote: RemoteSync | None
    runs_folder: Path

    async def run(self) -> RunResult:
        try:
            return await self.service.run(self.refs, self.keys)
        finally:
            if self.remote is not None:
                with anyio.CancelScope(shield=True):
                    await self.remote.aclose()

    def remove_empty_scratch(self, run_id: str) -> None:
        """A Run's scratch folder, once every tool call removed its own private directories,
        is empty: do not leave one empty folder per Run behind. Anything left in it stays."""
        with contextlib.suppress(OSError):
            (self.runs_folder / run_id).rmdir()


@dataclass
class Services:
    """The use cases of one invocation: its global options over the container."""

    container: Container
    options: GlobalOptions
    progress: Callable[[str], None] = print
    observer: RunObserver | None = None  # verify's live progress (entrypoints/cli/progress.py)

    # Where things are ------------------------------------------------------------------
    def repo(self) -> str:
        return os.path.realpath(self.options.repo)

    def state_dir(self) -> str:
        from artifactize.domain.state_home import state_home

        return state_home(os.environ, str(Path.home()), self.options.state_dir, windows=ON_WINDOWS)

    def session_ports(self) -> SessionPorts:
        """Tool sessions live below the state home, never in the reviewed repository."""
        from artifactize.domain.tools.sessions import SessionPorts

        return SessionPorts(
            launcher=self.container.launcher(),
            table=self.container.process_table(),
            store=self.container.session_store(),
            parent=str(Path(self.state_dir()) / SESSIONS_FOLDER),
            cleanup=self.container.cleanup_executor(),
            threads=self.container.worker_threads(),
        )

    def open_state(self, *, create: bool) -> StateStore | None:
        from artifactize.ports.state import StateError

        try:
            store: StateStore | None = self.container.state_stores().open(
                self.state_dir(), create=create
            )
        except StateError as exc:
            raise CommandError(str(exc)) from None
        if store is not None:
            self.settle_dead_runs(store)
        return store

    def monitor_source(self, *, all_repos: bool) -> MonitorSource:
        """What ``monitor`` reads: Runs of this repository (or every one), through a
        read-only state connection opened on first read (and again after a failure)."""
        from artifactize.entrypoints.monitor_tui.source import MonitorSource

        state_dir = self.state_dir()
        stores = self.container.state_stores()
        return MonitorSource(
            lambda: stores.open(state_dir, create=False, read_only=True),
            None if all_repos else self.repo(),
        )

    def settle_dead_runs(self, store: StateStore) -> tuple[str, ...]:
        """Every reader of the state first settles the Runs whose owner died (ERROR /
        OWNER_DIED, with their requests) and removes their scratch folders, so a killed
        ``verify`` never leaves a Run RUNNING for good (``entrypoints/dead_owners.py``)."""
        from artifactize.entrypoints.dead_owners import settle_dead_runs

        return settle_dead_runs(store, self.container, self.state_dir())

    def existing_state(self) -> StateStore:
        """The existing state; actions never create one (no state: no request to act on)."""
        from artifactize.domain.reviews.human.errors import REQUEST_NOT_FOUND

        store = self.open_state(create=False)
        if store is None:
            raise CommandError(REQUEST_NOT_FOUND)
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
        runs.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
        path = runs / run_id
        path.mkdir(mode=PRIVATE_DIRECTORY_MODE, exist_ok=True)
        return str(path)

    # Declarations ----------------------------------------------------------------------
    def config(self) -> ConfigService:
        service: ConfigService = self.container.config_service()
        return service

    def tools_check(self) -> ToolsCheck:
        service: ToolsCheck = self.container.tools_check(session_ports=self.session_ports())
        return service

    # Runs ------------------------------------------------------------------------------
    def prepare_verify(
        self,
        selector: str | Selection | None,
        select_all: bool,
        choose: Callable[[str, str], VerifyOptions],
    ) -> PreparedRun:
        """Load the workspace, select, check the state location, open the state and the team
        store, and compute the fingerprints. ``choose(repo, state_dir)`` gives the options."""
        from artifactize.domain.reviews.agent.review import ReviewPorts
        from artifactize.domain.reviews.reuse.fingerprints import FingerprintError
        from artifactize.domain.reviews.run.context import VerifyPorts
        from artifactize.domain.reviews.run.variants import with_variant
        from artifactize.domain.reviews.run.verify import Verify
        from artifactize.domain.reviews.runtime.review import RuntimePorts
        from artifactize.domain.state_home import StateLocationError, check_outside_repo

        container = self.container
        repo = self.repo()
        config = self.config()
        state = self.state_dir()
        options = choose(repo, state)
        variant = options.policy.profile
        loaded = config.load(repo)
        refs = self.select(loaded, selector, select_all)
        workspace, refs = self.with_variant(loaded, refs, variant)
        try:
            check_outside_repo(os.path.realpath(state), repo)
        except StateLocationError as exc:
            raise CommandError(str(exc)) from None
        backends = container.model_backends()
        remote = self._remote_sync(state, backends, workspace)  # before any state is created
        store = self.open_state(create=True)
        assert store is not None
        scripts = container.fingerprint_scripts()
        review = ReviewPorts(
            clock=container.clock(),
            backends=backends,
            tools=container.tool_ports(),
            sessions=self.session_ports(),
            reload=lambda: with_variant(config.load(repo), variant),
            scripts=scripts,
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
            runtime=RuntimePorts(
                processes=container.processes(),
                scratch=container.scratch(),
                filesystem=container.filesystem(),
                programs=container.programs(),
                clock=container.clock(),
                environment=container.environment(),
                scripts=scripts,
                threads=self.container.worker_threads(),
            ),
            remote=remote,
            progress=self.progress,
            observer=self.observer,
        )
        service = Verify(ports, workspace, options)
        try:
            keys = service.prepare(refs)
        except FingerprintError as exc:
            raise CommandError(str(exc)) from None
        return PreparedRun(service, refs, keys, remote, Path(state) / RUNS_FOLDER)

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

    def status(
        self, selector: str | Selection | None, options: StatusOptions
    ) -> tuple[Status, list[EvalRef]]:
        """``status`` over the existing state (none reads as "nothing reviewed yet")."""
        from artifactize.domain.reviews.run.status import Status, StatusPorts

        loaded = self.config().load(self.repo())
        refs = self.select(loaded, selector, selector is None)
        workspace, refs = self.with_variant(loaded, refs, options.policy.profile)
        ports = StatusPorts(
            filesystem=self.container.filesystem(),
            state=self.open_state(create=False),
            scripts=self.container.fingerprint_scripts(),
            threads=self.container.worker_threads(),
        )
        return Status(ports, workspace, options), refs

    # Agent conversations ---------------------------------------------------------------
    def conversations(self) -> ConversationStore:
        store: ConversationStore = self.container.conversations(state_dir=self.state_dir())
        return store

    def followup(self, session_id: str) -> FollowUp:
        """Follow-ups run tools as the review did, in fresh sessions and a private folder."""
        from artifactize.domain.reviews.agent.followup import FollowUp
        from artifactize.domain.reviews.agent.review import ReviewPorts

        container = self.container
        config = self.config()
        review = ReviewPorts(
            clock=container.clock(),
            backends=container.model_backends(),
            tools=container.tool_ports(),
            sessions=self.session_ports(),
            reload=lambda: config.load(self.options.repo),
            threads=self.container.worker_threads(),
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
        from artifactize.domain.reviews.human.lifecycle import HumanReviewPorts, HumanReviews

        container = self.container
        return HumanReviews(
            HumanReviewPorts(
                state=store,
                load=container.config_service().load,
                tools=container.human_tool_ports(),
                filesystem=container.filesystem(),
                clock=container.clock(),
                producer=self.producer(),
                scripts=container.fingerprint_scripts(),
                threads=self.container.worker_threads(),
            )
        )

    # The team review store -------------------------------------------------------------
    def remote_stores(self) -> RemoteStores:
        stores: RemoteStores = self.container.remote_stores()
        return stores

    def model_catalog(self) -> ModelCatalog:
        catalog: ModelCatalog = self.container.model_catalog()
        return catalog

    def doctor(self) -> tuple[Doctor, Workspace | None, str | None]:
        """The doctor, the workspace (None, with why, when it does not load)."""
        from artifactize.domain.doctor import Doctor
        from artifactize.entrypoints.doctor_checks import doctor_ports

        workspace, error = None, None
        try:
            workspace = self.config().load(self.repo())
        except Exception as exc:  # a broken workspace is one finding among others
            error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Doctor(doctor_ports(self)), workspace, error

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
