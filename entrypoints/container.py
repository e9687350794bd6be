"""The composition root: the one place where ports meet their adapters.

Every adapter and every domain service is built here, and only here; ``entrypoints/
bootstrap.py`` (beside it) turns them into the use cases a command calls. Adapters are
imported inside their factory, when a command first asks for one, so ``--help`` never pays
for SQLAlchemy and ``config check`` never for httpx2. The platform's adapters are chosen
here, once: each platform port is a ``providers.Selector`` over the ``platform`` provider,
between the two factories ``_PLATFORM_FACTORIES`` names for it (``adapters/windows`` on
Windows).

Tests override providers with fakes, through the container's own ``override``:
``with container.filesystem.override(providers.Object(MemoryFilesystem(...))): ...``, and
``container.platform.override("windows")`` builds the Windows adapters.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from dependency_injector import containers, providers

if TYPE_CHECKING:
    from artifactize.domain.project.program_checks import ProgramChecks
    from artifactize.domain.use_cases.config_service import ConfigService
    from artifactize.ports.cleanup import CleanupExecutor
    from artifactize.ports.clock import Clock
    from artifactize.ports.coding_agents import CodingAgents
    from artifactize.ports.collector import CollectorPause, CollectorPauseUntilDecided
    from artifactize.ports.conversations import ConversationStore
    from artifactize.ports.file_index import FileIndex
    from artifactize.ports.filesystem import Filesystem
    from artifactize.ports.ids import IdSource
    from artifactize.ports.mcp_audit import McpAuditStores
    from artifactize.ports.model import Endpoint, ModelBackend, ModelBackends, ModelCatalog
    from artifactize.ports.private_files import PrivateFiles
    from artifactize.ports.process import ProcessRunner
    from artifactize.ports.programs import ProgramFinder
    from artifactize.ports.regex import RegexEngine
    from artifactize.ports.review_store import RemoteStores
    from artifactize.ports.secrets import SecretStore
    from artifactize.ports.state import StateStores
    from artifactize.ports.store_server_storage import ReviewStoreDb
    from artifactize.ports.stored_answers import StoredAnswers
    from artifactize.ports.threads import WorkerThreads

# The one platform decision: Windows gets the adapters of ``adapters/windows``.
ON_WINDOWS = sys.platform == "win32"
PLATFORM = "windows" if ON_WINDOWS else "posix"  # the key of ``Container.platform``
# The program a Human ``open`` tool hands its target to.
# On Windows the shell itself: the Windows launcher hands the target to ShellExecuteW.
DESKTOP_OPENER = "explorer" if ON_WINDOWS else "open" if sys.platform == "darwin" else "xdg-open"


# The terminal reviewer's editor when neither $VISUAL nor $EDITOR is set
# (reference/platforms.md): Notepad on Windows, where no vi is to be expected.
def fallback_editor(windows: bool) -> str:
    return "notepad" if windows else "vi"


FALLBACK_EDITOR = fallback_editor(ON_WINDOWS)
# How a Human ``graph`` tool starts artifactize itself (this interpreter, this code).
SELF_COMMAND = (
    sys.executable,
    "-P",
    "-m",
    "artifactize.entrypoints.cli.app",
)  # -P: never the cwd's modules


def _clock() -> Clock:
    from artifactize.adapters.system_clock import SystemClock

    return SystemClock()


def _ids() -> IdSource:
    from artifactize.adapters.ids import SecretIds

    return SecretIds()


def _cleanup_executor() -> CleanupExecutor:
    from artifactize.adapters.threads import ThreadCleanupExecutor

    return ThreadCleanupExecutor()


def _worker_threads() -> WorkerThreads:
    from artifactize.adapters.worker_threads import AnyioWorkerThreads

    return AnyioWorkerThreads()


def _regex() -> RegexEngine:
    from artifactize.adapters.ry_regex import RyRegexEngine

    return RyRegexEngine()


def _built(path: str) -> Callable[..., Any]:
    """The class at ``path`` (``module:Name``), constructed with the provider's arguments and
    imported on first use, so building the container imports no domain module."""
    module, _, name = path.partition(":")

    def build(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    build.__qualname__ = build.__name__ = name
    return build


def _posix_processes(environment: Mapping[str, str]) -> ProcessRunner:
    from artifactize.adapters.posix.group_journal import GroupJournal, default_journal_directory
    from artifactize.adapters.posix.process import PosixProcessRunner

    # Every group is journalled; the first run sweeps the groups of owners that died.
    home = str(Path.home())
    return PosixProcessRunner(GroupJournal(default_journal_directory(environment, home)))


def _windows_processes(environment: Mapping[str, str]) -> ProcessRunner:
    from artifactize.adapters.windows.process import WindowsProcessRunner

    return WindowsProcessRunner()


def _posix_programs(environment: Mapping[str, str]) -> ProgramFinder:
    from artifactize.adapters.posix.programs import PosixProgramFinder

    return PosixProgramFinder()


def _windows_programs(environment: Mapping[str, str]) -> ProgramFinder:
    """PATHEXT of the environment the process really has (the one commands run in)."""
    from artifactize.adapters.windows.programs import WindowsProgramFinder

    return WindowsProgramFinder(environment.get("PATHEXT"))


def _platform_pair(posix: str, windows: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The factories of a port's POSIX and Windows adapters (``module:Class`` below
    ``adapters/posix`` and ``adapters/windows``), each imported when first built."""
    return (
        _built(f"artifactize.adapters.posix.{posix}"),
        _built(f"artifactize.adapters.windows.{windows}"),
    )


# Each platform port's factories, POSIX then Windows (``--help`` imports none of them).
_PLATFORM_FACTORIES: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "filesystem": _platform_pair("filesystem:PosixFilesystem", "filesystem:WindowsFilesystem"),
    "processes": (_posix_processes, _windows_processes),
    "programs": (_posix_programs, _windows_programs),
    "scratch": _platform_pair("scratch:PosixScratchSpace", "scratch:WindowsScratchSpace"),
    "launcher": _platform_pair(
        "session_process:PosixProcessLauncher", "session_process:WindowsProcessLauncher"
    ),
    "detached_launcher": _platform_pair(
        "launch:PosixDetachedLauncher", "launch:WindowsDetachedLauncher"
    ),
    "process_table": _platform_pair(
        "process_table:PsutilProcessTable", "process_table:WindowsProcessTable"
    ),
    "session_store": _platform_pair(
        "session_store:PosixSessionStore", "session_store:WindowsSessionStore"
    ),
    "private_files": _platform_pair(
        "private_files:PosixPrivateFiles", "private_files:WindowsPrivateFiles"
    ),
    "parallel_checks": _platform_pair(
        "parallel_checks:ForkedChecks", "parallel_checks:InTurnChecks"
    ),
}


def _state_stores(clock: Clock) -> StateStores:
    from artifactize.adapters.sqlite.stores import SqliteStatesOnDemand

    return SqliteStatesOnDemand(clock=clock)


def _state_repair() -> Callable[[str], dict[str, Any] | None]:
    """``doctor --repair``: recover a damaged state (its report, or None when sound)."""

    def repair(state_dir: str) -> dict[str, Any] | None:
        from artifactize.adapters.sqlite.recovery import repair_state

        recovery = repair_state(state_dir)
        return None if recovery is None else recovery.to_json()

    return repair


def _mcp_audit_stores(clock: Clock) -> McpAuditStores:
    from artifactize.adapters.sqlite.stores import SqliteMcpAuditOnDemand

    return SqliteMcpAuditOnDemand(clock=clock)


def _conversations(state_dir: str, private_files: PrivateFiles) -> ConversationStore:
    from artifactize.adapters.jsonl_conversations import JsonlConversationStore

    return JsonlConversationStore(state_dir, private_files=private_files)


class _ModelBackendsOnFirstUse:
    """The model backends, imported when first asked for: the HTTP stack they bring (httpx2
    and three wire formats, a twentieth of a ``verify``'s start) is never needed by a Run
    whose evals all run commands or wait for people."""

    def __init__(self, environment: Mapping[str, str], secrets: SecretStore | None) -> None:
        self._environment = environment
        self._secrets = secrets
        self._loaded: ModelBackends | None = None

    def _backends(self) -> ModelBackends:
        if self._loaded is None:
            from artifactize.adapters.llm.backends import EnvModelBackends

            self._loaded = EnvModelBackends(environment=self._environment, secrets=self._secrets)
        return self._loaded

    def open(self, backend: str, base_url: str | None = None) -> ModelBackend:
        return self._backends().open(backend, base_url)

    def endpoint(self, backend: str, base_url: str | None = None) -> Endpoint:
        return self._backends().endpoint(backend, base_url)

    def test_endpoint(self, backend: str) -> str | None:
        return self._backends().test_endpoint(backend)

    def loopback_models_allowed(self) -> bool:
        return self._backends().loopback_models_allowed()


def _model_backends(
    environment: Mapping[str, str], secrets: SecretStore | None = None
) -> ModelBackends:
    return _ModelBackendsOnFirstUse(environment, secrets)


def _model_catalog(
    environment: Mapping[str, str], secrets: SecretStore | None = None
) -> ModelCatalog:
    from artifactize.adapters.llm.catalog import EnvModelCatalog

    return EnvModelCatalog(environment=environment, secrets=secrets)


class _SecretsOnFirstUse:
    """Saved API keys: the OS keyring when keyring finds a usable one, else a private file
    in the state home (a headless Linux). Chosen when first used, so a run whose keys all
    come from the environment never imports keyring."""

    def __init__(self, state_dir: str, private_files: PrivateFiles) -> None:
        self._state_dir = state_dir
        self._private_files = private_files
        self._chosen: SecretStore | None = None

    def _secrets(self) -> SecretStore:
        if self._chosen is None:
            from artifactize.adapters.keyring_secrets import KeyringSecrets, keyring_usable

            if keyring_usable():
                self._chosen = KeyringSecrets()
            else:
                from artifactize.adapters.file_secrets import FileSecrets

                self._chosen = FileSecrets(self._state_dir, self._private_files)
        return self._chosen

    @property
    def store(self) -> str:
        return self._secrets().store

    def get(self, account: str) -> str | None:
        return self._secrets().get(account)

    def put(self, account: str, secret: str) -> None:
        self._secrets().put(account, secret)

    def delete(self, account: str) -> bool:
        return self._secrets().delete(account)


def _secrets(state_dir: str, private_files: PrivateFiles) -> SecretStore:
    return _SecretsOnFirstUse(state_dir, private_files)


def _coding_agents(
    processes: ProcessRunner, environment: Mapping[str, str], workdir: str
) -> CodingAgents:
    from artifactize.adapters.coding_agents.agents import CliCodingAgents

    return CliCodingAgents(processes, environment, workdir)


def _remote_stores(environment: Mapping[str, str], private_files: PrivateFiles) -> RemoteStores:
    from artifactize.adapters.review_store.client_config import RemoteConfigStores

    return RemoteConfigStores(environment=environment, private_files=private_files)


def _review_store_db(
    state_dir: str, *, create: bool, database: str | None = None
) -> ReviewStoreDb | None:
    """The server's store: ``database`` (a URL) or the file below ``state_dir``; raises
    ReviewStoreDbError."""
    from artifactize.adapters.review_store.database import open_review_store_db

    return open_review_store_db(state_dir, create=create, database=database)


def _review_store_location(state_dir: str, database: str | None) -> str:
    from artifactize.adapters.review_store.database import describe_database

    return describe_database(state_dir, database)


def _stored_now() -> Callable[[], str]:
    """The current wall-clock time in the stored timestamp form (the store server's clock)."""
    from artifactize.adapters.utc_timestamps import utc_now

    return utc_now


# The code whose results the file index keeps: another version of it never trusts the index.
_INDEXED_CODE = (
    "artifactize.domain.declarations",
    "artifactize.domain.project.discovery",
    "artifactize.domain.declarations.toml_source",
    "artifactize.domain.json_schema",
    "artifactize.domain.logical_paths",
    "artifactize.domain.reviews.reuse.artifactsum",  # a folder's walk is kept too
    "artifactize.domain.reviews.reuse.ignore_rules",
    # each eval's definition hash is kept with its declaration
    "artifactize.domain.reviews.reuse.definition_hash",
    "artifactize.domain.reviews.reuse.canonical_json",
)


FILE_INDEX_FILE = "file-index.sqlite"  # in the state home (docs/reviews.md)


def reading_only(index: FileIndex) -> FileIndex:
    """``index`` read and never written (``config check`` and ``config graph``)."""
    from artifactize.adapters.file_index import ReadingOnly

    return ReadingOnly(index)


def file_index_of(state_dir: str, *, now_ns: Callable[[], int] | None = None) -> FileIndex:
    """The file index of the state home, stamped with the sources of the code whose results
    it keeps; ``now_ns``: the time its racy rule measures against (tests move it on)."""
    from artifactize.adapters.file_index import SqliteFileIndex, code_stamp

    sources: list[str] = []
    for name in _INDEXED_CODE:
        module = importlib.import_module(name)
        origin = Path(module.__file__ or "")
        sources += (
            [str(p) for p in origin.parent.glob("*.py")]
            if origin.name == "__init__.py"
            else [str(origin)]
        )
    path, stamp = str(Path(state_dir) / FILE_INDEX_FILE), code_stamp(sources)
    if now_ns is None:
        return SqliteFileIndex(path, stamp)
    return SqliteFileIndex(path, stamp, now_ns=now_ns)


def stored_answers_of(
    state_dir: str,
    repository: str,
    *,
    private_files: PrivateFiles,
    clock_ns: Callable[[], int] | None = None,
    command: str = "status",
) -> StoredAnswers:
    """The stored answers of ``repository``'s commands (``ports.stored_answers``), kept as
    private files, which read the state's database and its write-ahead and rollback
    journals besides their keys; ``clock_ns``: the time they are measured against (tests
    move it on); ``command``: whose (each command's answers are kept apart)."""
    from artifactize.adapters.sqlite.state_files import state_file
    from artifactize.adapters.stored_answers import FileStoredAnswers

    database = state_file(state_dir)
    inputs = [(database, False), *((database + s, True) for s in ("-wal", "-journal"))]
    clock = {} if clock_ns is None else {"clock_ns": clock_ns}
    return FileStoredAnswers(
        state_dir, repository, inputs, files=private_files, command=command, **clock
    )


def answer_code_stamp() -> str:
    """The code a stored answer was made by: every source file of artifactize (its bytes),
    the interpreter's version, and each folder modules are imported from (``sys.path``), by
    its identity: installing, upgrading or removing a library adds or removes entries there,
    which changes the folder's times. Another code never finds the answer an older one
    kept."""
    folders = []
    for entry in sys.path:
        try:
            info = Path(entry or ".").stat()
        except OSError:
            continue
        identity = f"{info.st_dev}:{info.st_ino}:{info.st_mtime_ns}:{info.st_ctime_ns}"
        folders.append(f"{entry}\0{identity}")
    digest = hashlib.sha256(_own_sources_digest().encode())
    digest.update(sys.version.encode())
    digest.update("\n".join(folders).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


@functools.cache
def _own_sources_digest() -> str:
    """A digest of every ``.py`` file of the artifactize package (~380 files, ~10 ms)."""
    import artifactize

    root = Path(artifactize.__file__).parent
    digest = hashlib.sha256()
    for folder, folders, files in os.walk(root, followlinks=True):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = Path(folder) / name
                digest.update(str(path.relative_to(root)).encode("utf-8", "surrogateescape"))
                with contextlib.suppress(OSError):
                    digest.update(path.read_bytes())
    return digest.hexdigest()


def _collector_pause() -> CollectorPause:
    from artifactize.adapters.collector import pause_collector

    return pause_collector


def _full_state_check() -> Callable[[str], None]:
    """``doctor``'s check of the state in full (``quick_check`` even when a passed check is
    remembered beside the file: ``adapters/sqlite/integrity.py``); raises ``StateError``."""
    from artifactize.adapters.sqlite.integrity import check_state_integrity
    from artifactize.adapters.sqlite.state_files import check_state_files, state_file

    def check(state_dir: str) -> None:
        database = state_file(state_dir)
        if check_state_files(database):  # a link or a folder is refused as any open does
            check_state_integrity(database, full=True)

    return check


def _collector_pause_to_exit() -> CollectorPause:
    from artifactize.adapters.collector import pause_collector_to_exit

    return pause_collector_to_exit


def _collector_pause_until_decided() -> CollectorPauseUntilDecided:
    from artifactize.adapters.collector import pause_collector_until_decided

    return pause_collector_until_decided


def _collector_pause_keeping() -> CollectorPause:
    from artifactize.adapters.collector import pause_keeping

    return pause_keeping


def _collector_freeze() -> Callable[[], AbstractContextManager[None]]:
    from artifactize.adapters.collector import freeze_collector

    return freeze_collector


def _config_service(
    filesystem: Filesystem, programs: ProgramChecks, enter_nested: bool = False
) -> ConfigService:
    """Loading pauses the garbage collector (a sixth faster at 10,000 Artifacts); ``check``
    resolves every program and file operand on the caller's PATH."""
    from artifactize.adapters.collector import pause_collector
    from artifactize.domain.use_cases.config_service import ConfigService

    return ConfigService(
        filesystem=filesystem,
        pause_collector=pause_collector,
        programs=programs,
        enter_nested=enter_nested,
        refuse_filesystem_root=True,
    )


def _program_checks(
    filesystem: Filesystem, programs: ProgramFinder, environment: Mapping[str, str]
) -> ProgramChecks:
    from artifactize.domain.project.program_checks import ProgramChecks

    return ProgramChecks(filesystem, programs, environment)


def _on_platform(platform: providers.Provider[str], port: str, **kwargs: Any) -> Any:
    """One port's adapter, chosen by ``platform``: the POSIX or the Windows one, built once."""
    return providers.Selector(
        platform,
        posix=providers.Singleton(_PLATFORM_FACTORIES[port][0], **kwargs),
        windows=providers.Singleton(_PLATFORM_FACTORIES[port][1], **kwargs),
    )


class Container(containers.DeclarativeContainer):
    """Wires adapters into domain services (see the module docstring for overrides)."""

    environment = providers.Object(os.environ)
    # The one platform decision; a test may override it (``container.platform.override``).
    platform = providers.Object(PLATFORM)
    filesystem = _on_platform(platform, "filesystem")
    clock = providers.Singleton(_clock)
    ids = providers.Singleton(_ids)
    cleanup_executor = providers.Singleton(_cleanup_executor)  # one pool per process
    worker_threads = providers.Singleton(_worker_threads)  # the domain's blocking work
    regex = providers.Singleton(_regex)
    processes = _on_platform(platform, "processes", environment=environment)
    programs = _on_platform(platform, "programs", environment=environment)
    scratch = _on_platform(platform, "scratch")
    launcher = _on_platform(platform, "launcher")
    detached_launcher = _on_platform(platform, "detached_launcher")
    process_table = _on_platform(platform, "process_table")
    session_store = _on_platform(platform, "session_store")
    private_files = _on_platform(platform, "private_files")
    parallel_checks = _on_platform(platform, "parallel_checks")  # a kept answer's checks
    process_interrupt = process_table  # run cancel stops another process through it
    state_stores = providers.Singleton(_state_stores, clock=clock)
    state_repair = providers.Factory(_state_repair)
    mcp_audit_stores = providers.Singleton(_mcp_audit_stores, clock=clock)
    review_store_db = providers.Factory(_review_store_db)  # call with state_dir, create=
    review_store_location = providers.Factory(_review_store_location)
    stored_now = providers.Singleton(_stored_now)
    conversations = providers.Factory(_conversations, private_files=private_files)  # state_dir=
    model_backends = providers.Factory(_model_backends, environment=environment)  # secrets=
    model_catalog = providers.Factory(_model_catalog, environment=environment)  # secrets=
    secrets = providers.Factory(_secrets, private_files=private_files)  # state_dir=
    coding_agents = providers.Factory(_coding_agents, processes=processes, environment=environment)
    remote_stores = providers.Factory(
        _remote_stores, environment=environment, private_files=private_files
    )
    enter_nested = providers.Object(False)  # --nested-repos overrides it
    program_checks = providers.Factory(
        _program_checks, filesystem=filesystem, programs=programs, environment=environment
    )
    config_service = providers.Factory(
        _config_service, filesystem=filesystem, programs=program_checks, enter_nested=enter_nested
    )
    # What every bundle that runs programs takes, named once; each adds its own.
    _runs_programs: ClassVar[dict[str, Any]] = {
        "filesystem": filesystem,
        "processes": processes,
        "programs": programs,
        "environment": environment,
    }
    # What every bundle that keeps time and hands blocking work to threads takes.
    _timed: ClassVar[dict[str, Any]] = {"clock": clock, "threads": worker_threads}
    # What both tool bundles (the Agent's and the Human's) take.
    _runs_tools: ClassVar[dict[str, Any]] = {
        **_runs_programs,
        "regex": regex,
        "threads": worker_threads,
    }
    tool_ports = providers.Factory(
        _built("artifactize.domain.tools.registry:ToolPorts"), **_runs_tools, scratch=scratch
    )
    fingerprint_scripts = providers.Factory(
        _built("artifactize.domain.reviews.reuse.scripts:ProcessFingerprintScripts"),
        providers.Factory(
            _built("artifactize.domain.reviews.reuse.scripts:ScriptPorts"),
            **_runs_programs,
            scratch=scratch,
        ),
    )
    # The platform's desktop opener for ``open`` and this artifactize for ``graph``.
    human_tool_ports = providers.Factory(
        _built("artifactize.domain.tools.human.registry:HumanToolPorts"),
        **_runs_tools,
        launcher=detached_launcher,
        desktop_opener=DESKTOP_OPENER,
        self_command=SELF_COMMAND,
    )
    tools_check = providers.Factory(
        _built("artifactize.domain.use_cases.tools_check:ToolsCheck"),
        load=config_service.provided.load,
        ports=tool_ports,
        programs=programs,
        human_ports=human_tool_ports,
        clock=clock,
        runtime=program_checks,
    )  # session_ports=
    # The port bundles of the use cases; the arguments a call gives are noted beside each.
    session_ports = providers.Factory(
        _built("artifactize.domain.tools.sessions:SessionPorts"),
        launcher=launcher,
        table=process_table,
        store=session_store,
        cleanup=cleanup_executor,
        threads=worker_threads,
    )  # parent= (below the state home)
    runtime_ports = providers.Factory(
        _built("artifactize.domain.reviews.runtime.review:RuntimePorts"),
        **_runs_programs,
        scratch=scratch,
        **_timed,
    )  # scripts=
    review_ports = providers.Factory(
        _built("artifactize.domain.reviews.agent.review:ReviewPorts"),
        tools=tool_ports,
        **_timed,
    )  # backends=, sessions=, reload=, scripts=
    human_review_ports = providers.Factory(
        _built("artifactize.domain.use_cases.human_reviews:HumanReviewPorts"),
        load=config_service.provided.load,
        tools=human_tool_ports,
        filesystem=filesystem,
        **_timed,
    )  # state=, producer=, scripts=
    stored_answers = providers.Factory(stored_answers_of, private_files=private_files)
    file_index = providers.Factory(file_index_of)  # state_dir=
    reading_file_index = providers.Factory(reading_only)  # index=
    collector_pause = providers.Callable(_collector_pause)
    collector_freeze = providers.Callable(_collector_freeze)
    collector_pause_to_exit = providers.Callable(_collector_pause_to_exit)
    collector_pause_until_decided = providers.Callable(_collector_pause_until_decided)
    full_state_check = providers.Callable(_full_state_check)
    # verify's pause: a Run's documents, kept as long as the Run, join its frozen objects.
    collector_pause_keeping = providers.Callable(_collector_pause_keeping)
    # How a large computation runs: its batches on worker threads, with the collector paused.
    _large_computation: ClassVar[dict[str, Any]] = {
        "threads": worker_threads,
        "pause_collector": collector_pause,
    }
    status_ports = providers.Factory(
        _built("artifactize.domain.use_cases.status:StatusPorts"),
        filesystem=filesystem,
        programs=program_checks,
        **_large_computation,
    )  # state=, scripts=, index=
