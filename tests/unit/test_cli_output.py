"""``entrypoints.cli.output.emit_kept``: a kept answer printed as it is, in pieces."""

from __future__ import annotations

import io

import pytest

from artifactize.entrypoints.cli.output import emit_kept

PIECES = ["Run: ", "run-Abc", " at é\n", "\tdone\n"]


@pytest.mark.parametrize(("encoding", "errors"), [("utf-8", "strict"), ("latin-1", "replace")])
def test_a_kept_answer_is_printed_as_its_pieces_joined(
    monkeypatch: pytest.MonkeyPatch, encoding: str, errors: str
) -> None:
    """Whatever the standard output's encoding (one piece after the other on UTF-8,
    joined through ``typer.echo`` on any other): the same bytes ``print`` would write."""
    written = io.BytesIO()
    stream = io.TextIOWrapper(written, encoding=encoding, errors=errors, newline="\n")
    monkeypatch.setattr("sys.stdout", stream)
    emit_kept(iter(PIECES))
    stream.flush()
    assert written.getvalue() == "".join(PIECES).encode(encoding, errors)
