"""What the frozen documents' codec costs (issue 23 item 3): a saved document read and
written again through ``kernel.document_codec`` against the plain ``json`` round trip the
state store did before (``json.loads``, then ``json.dumps`` compact).

The documents are the recorded ones the golden tests hold (a Run, its requests, its
executions: runtime, Agent and Human), each as the SQLite store saves it (compact JSON).
For each kind, the median of ``--runs`` interleaved rounds of ``--loops`` round trips of
every document:

* ``json``: ``json.loads`` + ``json.dumps`` (what a store read and write cost without it);
* ``codec``: the same with ``*_from_json`` between them and ``*_json`` before the dump.

The ratio is codec / json. The codec's own share is (codec - json), per document.

    .venv/bin/python bench/documents.py
    .venv/bin/python bench/documents.py --runs 9 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from artifactize.kernel.document_codec import (
    execution_from_json,
    execution_json,
    request_from_json,
    request_json,
    run_from_json,
    run_json,
)

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "integration" / "fixtures" / "golden"
DEFAULT_RUNS = 7
DEFAULT_LOOPS = 200


def _recorded(name: str) -> list[str]:
    """The documents of a recording, one after another, as compact saved JSON."""
    decoder, text, found, at = json.JSONDecoder(), (GOLDEN / name).read_text("utf-8"), [], 0
    while at < len(text.rstrip()):
        document, at = decoder.raw_decode(text, at)
        found.append(_dump(document))
        while at < len(text) and text[at].isspace():
            at += 1
    return found


def _dump(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


KINDS: dict[str, tuple[str, Callable[[Any], Any], Callable[[Any], dict[str, Any]]]] = {
    "run": ("stored-runs.json", run_from_json, run_json),
    "request": ("stored-requests.json", request_from_json, request_json),
    "execution": ("stored-executions.json", execution_from_json, execution_json),
}


def _plain(texts: list[str], loops: int) -> float:
    started = time.perf_counter()
    for _ in range(loops):
        for text in texts:
            _dump(json.loads(text))
    return time.perf_counter() - started


def _through_codec(
    texts: list[str], loops: int, read: Callable[[Any], Any], write: Callable[[Any], Any]
) -> float:
    started = time.perf_counter()
    for _ in range(loops):
        for text in texts:
            again = _dump(write(read(json.loads(text))))
    assert again == texts[-1]  # byte for byte, or the figure means nothing
    return time.perf_counter() - started


def measure(runs: int, loops: int) -> dict[str, dict[str, float]]:
    figures: dict[str, dict[str, float]] = {}
    for kind, (name, read, write) in KINDS.items():
        texts = _recorded(name)
        plain, codec = [], []
        for _ in range(runs):  # interleaved: a load spike hits both sides
            plain.append(_plain(texts, loops))
            codec.append(_through_codec(texts, loops, read, write))
        per = loops * len(texts)
        json_us = statistics.median(plain) / per * 1e6
        codec_us = statistics.median(codec) / per * 1e6
        figures[kind] = {
            "documents": len(texts),
            "bytes": statistics.mean(len(t.encode()) for t in texts),
            "json_us": json_us,
            "codec_us": codec_us,
            "ratio": codec_us / json_us,
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--loops", type=int, default=DEFAULT_LOOPS)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    figures = measure(options.runs, options.loops)
    if options.json:
        print(json.dumps(figures, indent=2))
        return
    for kind, row in figures.items():
        print(
            f"{kind:<9} {row['documents']:>2} docs, {row['bytes']:>6.0f} B: json "
            f"{row['json_us']:7.1f} us, codec {row['codec_us']:7.1f} us, ratio "
            f"{row['ratio']:.2f}x"
        )


if __name__ == "__main__":
    main()
