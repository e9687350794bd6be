"""What the entry point hands to commands: parsed global options, the container, and the
use cases built from both (``CliContext.services()``).

The container is built on first use, so ``--help`` and ``--version`` never import
dependency-injector; tests override its providers as usual
(``CliContext.container.filesystem.override(...)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from artifactize.entrypoints.cli.global_options import GlobalOptions

if TYPE_CHECKING:
    from artifactize.entrypoints.bootstrap import Container, Services


def _to_stderr(message: str) -> None:
    typer.echo(message, err=True)


class _BuiltOnFirstUse:
    """A class attribute holding the container, created when first read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type) -> Any:
        from artifactize.entrypoints.bootstrap import Container

        container = Container()
        setattr(owner, self.name, container)  # later reads find the container itself
        return container


class CliContext:
    options = GlobalOptions()
    container: Container = _BuiltOnFirstUse()  # type: ignore[assignment]

    @classmethod
    def services(cls) -> Services:
        from artifactize.entrypoints.bootstrap import Services

        return Services(cls.container, cls.options, progress=_to_stderr)
