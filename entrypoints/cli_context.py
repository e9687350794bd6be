"""What the entry point hands to commands: parsed global options and the container."""

from __future__ import annotations

from entrypoints.container import Container
from entrypoints.global_options import GlobalOptions


class CliContext:
    options = GlobalOptions()
    container = Container()
