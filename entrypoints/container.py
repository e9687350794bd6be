"""The composition root: the one place where ports meet their adapters."""

from __future__ import annotations

import os
import sys

from dependency_injector import containers, providers

from adapters.jsonl_conversations import JsonlConversationStore
from adapters.llm.backends import EnvModelBackends
from adapters.posix.filesystem import PosixFilesystem
from adapters.posix.launch import PosixDetachedLauncher
from adapters.posix.process import PosixProcessRunner
from adapters.posix.process_table import PsutilProcessTable
from adapters.posix.programs import PosixProgramFinder
from adapters.posix.scratch import PosixScratchSpace
from adapters.posix.session_process import PosixProcessLauncher
from adapters.posix.session_store import PosixSessionStore
from adapters.review_store.client_config import RemoteConfigStores
from adapters.ry_regex import RyRegexEngine
from adapters.sqlite.state import SqliteStateStores
from adapters.system_clock import SystemClock
from domain.config_service import ConfigService
from domain.reviews.reuse.scripts import ProcessFingerprintScripts, ScriptPorts
from domain.tools.human.registry import HumanToolPorts
from domain.tools.registry import ToolPorts
from domain.tools.tools_check import ToolsCheck

# The program a Human ``open`` tool hands its target to.
DESKTOP_OPENER = "open" if sys.platform == "darwin" else "xdg-open"
# How a Human ``graph`` tool starts artifactize itself (this interpreter, this code).
SELF_COMMAND = (sys.executable, "-P", "-m", "entrypoints.cli.app")  # -P: never the cwd's modules


class Container(containers.DeclarativeContainer):
    """Wires adapters into domain services. Tests override providers with fakes:

    ``with container.filesystem.override(providers.Object(MemoryFilesystem(...))): ...``
    """

    environment = providers.Object(os.environ)
    filesystem = providers.Singleton(PosixFilesystem)
    clock = providers.Singleton(SystemClock)
    regex = providers.Singleton(RyRegexEngine)
    processes = providers.Singleton(PosixProcessRunner)
    programs = providers.Singleton(PosixProgramFinder)
    scratch = providers.Singleton(PosixScratchSpace)
    launcher = providers.Singleton(PosixProcessLauncher)
    detached_launcher = providers.Singleton(PosixDetachedLauncher)
    process_table = providers.Singleton(PsutilProcessTable)
    session_store = providers.Singleton(PosixSessionStore)
    state_stores = providers.Singleton(SqliteStateStores, clock=clock)
    conversations = providers.Factory(JsonlConversationStore)  # call with state_dir=...
    model_backends = providers.Factory(EnvModelBackends, environment=environment)
    remote_stores = providers.Factory(RemoteConfigStores, environment=environment)
    config_service = providers.Factory(ConfigService, filesystem=filesystem)
    tool_ports = providers.Factory(
        ToolPorts,
        filesystem=filesystem,
        regex=regex,
        processes=processes,
        programs=programs,
        scratch=scratch,
        environment=environment,
    )
    fingerprint_scripts = providers.Factory(
        ProcessFingerprintScripts,
        ports=providers.Factory(
            ScriptPorts,
            processes=processes,
            scratch=scratch,
            filesystem=filesystem,
            programs=programs,
            environment=environment,
        ),
    )
    human_tool_ports = providers.Factory(
        HumanToolPorts,
        filesystem=filesystem,
        regex=regex,
        processes=processes,
        programs=programs,
        launcher=detached_launcher,
        environment=environment,
        desktop_opener=DESKTOP_OPENER,
        self_command=SELF_COMMAND,
    )
    tools_check = providers.Factory(
        ToolsCheck,
        load=config_service.provided.load,
        ports=tool_ports,
        programs=programs,
        human_ports=human_tool_ports,
    )
