"""What the entry point hands to commands: parsed global options and the container."""

from __future__ import annotations

from entrypoints.cli.global_options import GlobalOptions
from entrypoints.container import Container


class CliContext:
    options = GlobalOptions()
    container = Container()
