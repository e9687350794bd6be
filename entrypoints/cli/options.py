"""Typer option declarations that several commands share, declared once so their flag and
help text stay the same everywhere (``Annotated`` aliases: ``reviewer: ReviewerOption = None``),
and the two factories every command's parameters are declared with: ``option("--name",
HELP)`` and ``argument(HELP)``, typer's own ``typer.Option``/``typer.Argument`` given the
help text, used as ``Annotated`` metadata (``force: Annotated[bool, option("--force", …)]``).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer


def option(name: str, help: str, **settings: Any) -> Any:
    """The option ``name`` (``--name``) with ``help`` (and any other ``typer.Option``
    setting)."""
    return typer.Option(name, help=help, **settings)


def argument(help: str, **settings: Any) -> Any:
    """A positional argument with ``help`` (and any other ``typer.Argument`` setting)."""
    return typer.Argument(help=help, **settings)


ReviewerOption = Annotated[str | None, option("--reviewer", "Reviewer id (default: $USER).")]
