"""Typer option declarations that several commands share, declared once so their flag and
help text stay the same everywhere (``Annotated`` aliases: ``reviewer: ReviewerOption = None``)."""

from __future__ import annotations

from typing import Annotated

import typer

ReviewerOption = Annotated[
    str | None, typer.Option("--reviewer", help="Reviewer id (default: $USER).")
]
