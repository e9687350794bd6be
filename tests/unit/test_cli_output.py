"""``entrypoints.cli.output.emit_kept``: a kept answer printed as it is, in pieces."""

from __future__ import annotations

import io

import pytest

from artifactize.entrypoints.cli.output import emit_kept
from artifactize.ports.stored_answers import ANSWER_ENCODING

TEXTS = ["Run: run-Abc at é\n\tdone\n", "Run: run-Abc at 한\n\tdone\n"]


def _pieces(text: str) -> list[memoryview]:
    data = text.encode(*ANSWER_ENCODING)
    return [memoryview(data)[:5], memoryview(data)[5:12], memoryview(data)[12:]]


@pytest.mark.parametrize("text", TEXTS, ids=["latin", "hangul"])
@pytest.mark.parametrize(
    ("encoding", "errors"),
    [("utf-8", "strict"), ("utf-8", "surrogateescape"), ("latin-1", "replace")],
)
def test_a_kept_answer_is_printed_as_its_text_would_be(
    monkeypatch: pytest.MonkeyPatch, encoding: str, errors: str, text: str
) -> None:
    """Whatever the standard output's encoding (the bytes themselves on UTF-8, the text
    through ``typer.echo`` on any other): the same bytes ``print`` would write."""
    written = io.BytesIO()
    stream = io.TextIOWrapper(written, encoding=encoding, errors=errors, newline="\n")
    monkeypatch.setattr("sys.stdout", stream)
    stream.write("before ")  # what the text layer holds is written first
    emit_kept(_pieces(text))
    stream.flush()
    assert written.getvalue() == ("before " + text).encode(encoding, errors)
