"""The composition root: the one place where ports meet their adapters."""

from __future__ import annotations

from dependency_injector import containers, providers

from adapters.posix_filesystem import PosixFilesystem
from adapters.system_clock import SystemClock
from domain.config_service import ConfigService


class Container(containers.DeclarativeContainer):
    """Wires adapters into domain services. Tests override providers with fakes:

    ``with container.filesystem.override(providers.Object(MemoryFilesystem(...))): ...``
    """

    filesystem = providers.Singleton(PosixFilesystem)
    clock = providers.Singleton(SystemClock)
    config_service = providers.Factory(ConfigService, filesystem=filesystem)
