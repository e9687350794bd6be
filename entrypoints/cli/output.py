"""How every command prints: its document as indented JSON with ``--json``, else its text.

One place, so a command's ``--json`` output has one format (``ensure_ascii=False``, an
indent of 2: ``kernel.indented_json`` writes exactly what ``json.dumps`` would, faster) and
its text answer is printed the same way everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.kernel.indented_json import dumps_indented


def json_text(document: Any) -> str:
    """``document`` as ``--json`` prints it: ``json.dumps(..., ensure_ascii=False,
    indent=2)``."""
    return dumps_indented(document)


def emit_json(document: Any) -> None:
    typer.echo(json_text(document))


def emit(document: Any, text: str | Callable[[Any], str]) -> None:
    """``document`` with ``--json``, else ``text`` (or the text made from the document)."""
    if CliContext.options.json:
        emit_json(document)
    else:
        typer.echo(text if isinstance(text, str) else text(document))
