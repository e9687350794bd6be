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

from entrypoints.cli.global_options import GlobalOptions
from entrypoints.container import ON_WINDOWS, Container
from entrypoints.errors import CommandError

if TYPE_CHECKING:
    from domain.config_service import ConfigService
    from domain.reviews.agent.followup import FollowUp
    from domain.reviews.human.lifecycle import HumanReviews
    from domain.reviews.remote.sync import RemoteSync
    from domain.reviews.run.context import VerifyOptions
    from domain.reviews.run.documents import RunResult
    from domain.reviews.run.status import Status, StatusOptions
    from domain.reviews.run.verify import Verify
    from domain.tools.sessions import SessionPorts
    from domain.tools.tools_check import ToolsCheck
    from domain.workspace import EvalRef, Workspace
    from ports.conversations import ConversationStore
    from ports.model import ModelBackends
    from ports.review_store import RemoteStore, RemoteStores
    from ports.state import StateStore
    from ports.store_server_storage import ReviewStoreDb

SESSIONS_FOLDER = "tool-sessions"
RUNS_FOLDER = "runs"
PRIVATE_DIRECTORY_MODE = 0o700
TEST_ENDPOINT_VARIABLES = {
    "openai": "ARTIFACTIZE_OPENAI_BASE_URL",
    "anthropic": "ARTIFACTIZE_ANTHROPIC_BASE_URL",
}


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

    # Where things are ------------------------------------------------------------------
    def repo(self) -> str:
        return os.path.realpath(self.options.repo)

    def state_dir(self) -> str:
        from domain.state_home import state_home

        return state_home(os.environ, str(Path.home()), self.options.state_dir, windows=ON_WINDOWS)

    def session_ports(self) -> SessionPorts:
        """Tool sessions live below the state home, never in the reviewed repository."""
        from domain.tools.sessions import SessionPorts

        return SessionPorts(
            launcher=self.container.launcher(),
            table=self.container.process_table(),
            store=self.container.session_store(),
            parent=str(Path(self.state_dir()) / SESSIONS_FOLDER),
            cleanup=self.container.cleanup_executor(),
        )

    def open_state(self, *, create: bool) -> StateStore | None:
        from ports.state import StateError

        try:
            store: StateStore | None = self.container.state_stores().open(
                self.state_dir(), create=create
            )
        except StateError as exc:
            raise CommandError(str(exc)) from None
        return store

    def existing_state(self) -> StateStore:
        """The existing state; actions never create one (no state: no request to act on)."""
        from domain.reviews.human.errors import REQUEST_NOT_FOUND

        store = self.open_state(create=False)
        if store is None:
            raise CommandError(REQUEST_NOT_FOUND)
        return store

    def producer(self) -> dict[str, Any]:
        from importlib.metadata import version

        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = "unknown"
        return {"name": f"{user}@{socket.gethostname()}", "version": version("artifactize")}

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
        self, selector: str | None, select_all: bool, choose: Callable[[str, str], VerifyOptions]
    ) -> PreparedRun:
        """Load the workspace, select, check the state location, open the state and the team
        store, and compute the fingerprints. ``choose(repo, state_dir)`` gives the options."""
        from domain.reviews.agent.review import ReviewPorts
        from domain.reviews.reuse.fingerprints import FingerprintError
        from domain.reviews.run.context import VerifyPorts
        from domain.reviews.run.verify import Verify
        from domain.reviews.runtime.review import RuntimePorts
        from domain.state_home import StateLocationError, check_outside_repo

        container = self.container
        repo = self.repo()
        config = self.config()
        workspace = config.load(repo)
        refs = self.select(workspace, selector, select_all)
        state = self.state_dir()
        try:
            check_outside_repo(os.path.realpath(state), repo)
        except StateLocationError as exc:
            raise CommandError(str(exc)) from None
        backends = container.model_backends()
        remote = self._remote_sync(state, backends)  # checked before any state is created
        store = self.open_state(create=True)
        assert store is not None
        scripts = container.fingerprint_scripts()
        review = ReviewPorts(
            clock=container.clock(),
            backends=backends,
            tools=container.tool_ports(),
            sessions=self.session_ports(),
            reload=lambda: config.load(repo),
            scripts=scripts,
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
            ),
            remote=remote,
            progress=self.progress,
        )
        service = Verify(ports, workspace, choose(repo, state))
        try:
            keys = service.prepare(refs)
        except FingerprintError as exc:
            raise CommandError(str(exc)) from None
        return PreparedRun(service, refs, keys, remote, Path(state) / RUNS_FOLDER)

    def select(self, workspace: Workspace, selector: str | None, select_all: bool) -> list[EvalRef]:
        from domain.reviews.run.verify import SelectionError, select_evals

        try:
            return select_evals(workspace, selector, select_all)
        except SelectionError as exc:
            raise CommandError(str(exc)) from None

    def _remote_sync(self, state: str, backends: ModelBackends) -> RemoteSync | None:
        """The team review store for this Run, or None. A test endpoint rules the store out,
        so results of a fake provider can never reach a team's store."""
        from domain.reviews.remote.sync import RemoteSync
        from ports.model import BackendUnavailable
        from ports.review_store import RemoteConfigError

        stores = self.remote_stores()
        try:
            settings = stores.settings(state)
        except RemoteConfigError as exc:
            raise CommandError(str(exc)) from None
        if settings is None:
            return None
        for backend, variable in TEST_ENDPOINT_VARIABLES.items():
            try:
                endpoint = backends.test_endpoint(backend)
            except BackendUnavailable:
                endpoint = "invalid"
            if endpoint is not None:
                raise CommandError(
                    f"{variable} is set, so verify will not use the remote "
                    "review store; set ARTIFACTIZE_REMOTE=off."
                )
        return RemoteSync(stores.open(settings), self.progress)

    def status(self, selector: str | None, options: StatusOptions) -> tuple[Status, list[EvalRef]]:
        """``status`` over the existing state (none reads as "nothing reviewed yet")."""
        from domain.reviews.run.status import Status, StatusPorts

        workspace = self.config().load(self.repo())
        refs = self.select(workspace, selector, selector is None)
        ports = StatusPorts(
            filesystem=self.container.filesystem(),
            state=self.open_state(create=False),
            scripts=self.container.fingerprint_scripts(),
        )
        return Status(ports, workspace, options), refs

    # Agent conversations ---------------------------------------------------------------
    def conversations(self) -> ConversationStore:
        store: ConversationStore = self.container.conversations(state_dir=self.state_dir())
        return store

    def followup(self, session_id: str) -> FollowUp:
        """Follow-ups run tools as the review did, in fresh sessions and a private folder."""
        from domain.reviews.agent.followup import FollowUp
        from domain.reviews.agent.review import ReviewPorts

        container = self.container
        config = self.config()
        review = ReviewPorts(
            clock=container.clock(),
            backends=container.model_backends(),
            tools=container.tool_ports(),
            sessions=self.session_ports(),
            reload=lambda: config.load(self.options.repo),
        )
        output_root = self.output_root(f"followup-{session_id}")
        return FollowUp(review, self.conversations(), config.load, output_root)

    # Human reviews ---------------------------------------------------------------------
    def reviewer_name(self, given: str | None) -> str:
        """``--reviewer``, else ``$USER`` (``$USERNAME`` on Windows); checked by the lifecycle
        as well."""
        from domain.reviews.human.reviewers import ReviewerError, default_reviewer

        if given is not None:
            return given
        try:
            return default_reviewer(os.environ, windows=ON_WINDOWS)
        except ReviewerError as exc:
            raise CommandError(exc.message) from None

    def human_reviews(self, store: StateStore) -> HumanReviews:
        """The Human review lifecycle over ``store`` and the container's adapters."""
        from domain.reviews.human.lifecycle import HumanReviewPorts, HumanReviews

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
            )
        )

    # The team review store -------------------------------------------------------------
    def remote_stores(self) -> RemoteStores:
        stores: RemoteStores = self.container.remote_stores()
        return stores

    def remote_store(self) -> RemoteStore | None:
        """The configured team review store, or None. An invalid configuration is an error
        here, before anything settles, so a submission is never saved without its publish."""
        from ports.review_store import RemoteConfigError

        stores = self.remote_stores()
        try:
            settings = stores.settings(self.state_dir())
        except RemoteConfigError as exc:
            raise CommandError(str(exc)) from None
        return stores.open(settings) if settings is not None else None

    def review_store_db(self, *, create: bool) -> ReviewStoreDb | None:
        """The store a team server keeps in ``<state-dir>/review-store.sqlite``."""
        from ports.store_server_storage import ReviewStoreDbError

        try:
            db: ReviewStoreDb | None = self.container.review_store_db(
                self.state_dir(), create=create
            )
        except ReviewStoreDbError as exc:
            raise CommandError(str(exc)) from None
        return db
