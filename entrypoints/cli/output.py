"""How every command prints: its document as indented JSON with ``--json``, else its text.

One place, so a command's ``--json`` output has one format (``ensure_ascii=False``, an
indent of 2: ``kernel.indented_json`` writes exactly what ``json.dumps`` would, faster) and
its text answer is printed the same way everywhere."""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import typer

from artifactize.entrypoints.cli.context import CliContext
from artifactize.kernel.indented_json import (
    dumps_indented,
    dumps_indented_parts,
    write_indented_array,
)
from artifactize.ports.stored_answers import ANSWER_ENCODING


def json_text(document: Any) -> str:
    """``document`` as ``--json`` prints it: ``json.dumps(..., ensure_ascii=False,
    indent=2)``."""
    return dumps_indented(document)


def emit_json(document: Any) -> None:
    """``json_text(document)`` and a newline, printed part by part once all of it is made
    (``dumps_indented_parts``): a 67 MB answer is neither joined nor copied whole again."""
    parts = dumps_indented_parts(document)
    parts[-1] += "\n"
    for part in parts:
        typer.echo(part, nl=False)


def emit_json_array(items: Iterable[Any]) -> None:
    """``emit_json(list(items))``, written as ``items`` come: a long list (a request list
    of a long history is a gigabyte) is never whole in memory, as objects or as text. What
    is printed before a failure stays printed; a reader that closed the pipe ends it as
    ``emit_json`` would (exit 1, nothing on stderr)."""
    write_indented_array(items, lambda text: typer.echo(text, nl=False))
    typer.echo("")


def emit(document: Any, text: str | Callable[[Any], str]) -> None:
    """``document`` with ``--json``, else ``text`` (or the text made from the document)."""
    if CliContext.options.json:
        emit_json(document)
    else:
        typer.echo(text if isinstance(text, str) else text(document))


def emit_kept(pieces: Sequence[memoryview]) -> None:
    """A replayed Run's answer (``domain.reviews.run.replay``), in pieces of its UTF-8, as
    it is. It holds no control character but newlines and tabs (``adapters.stored_answers``
    keeps and finds none that does), so the pass ``typer.echo`` makes over output that is
    not a terminal, to remove ANSI escapes, would find none (0.1 s over a Run's 67 MB
    answer at 10,000 Artifacts). A UTF-8 standard output gets the bytes, one piece after
    the other, on its binary buffer: they are what its text layer would write for the
    text, since a plan is kept only for an answer that is strict UTF-8 (no lone surrogate:
    ``replay.printed_bytes``), and decoding and encoding 67 MB again cost 0.2 s. Any
    other output, and any output where a newline is written as ``os.linesep`` (Windows),
    gets the text joined through ``typer.echo`` (which may wrap a stream of another
    encoding), told to keep what it would strip: there is none."""
    stream = sys.stdout
    utf8 = stream is not None and codecs.lookup(stream.encoding or "ascii").name == "utf-8"
    buffer = getattr(stream, "buffer", None) if utf8 and os.linesep == "\n" else None
    if buffer is not None:
        stream.flush()
        buffer.writelines(pieces)
        buffer.flush()
    else:
        typer.echo(str(b"".join(pieces), *ANSWER_ENCODING), nl=False, color=True)
