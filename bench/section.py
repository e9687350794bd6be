"""``section`` benchmark: the built-in (markdown-it-py, block parse plus the headings' inline
parse) against markdown-it-py's full CommonMark parse of the same document.

``section`` parses the document for its block structure only and each heading's content
inline; the reference is ``MarkdownIt("commonmark").parse(document)``, what the plain use
of the library costs (every paragraph parsed inline too). The ratio is ours / full parse:
below 1 means the block-only parse pays off.

The document is README-like Markdown cut at each size: ATX and setext headings, paragraphs
with emphasis, code spans and links, lists with continuation lines, fenced code holding
``# comment`` lines (which are no headings) and block quotes; the heading asked for is the
last one, so the whole document is parsed. Sizes run up to the 8 MiB source cap.

Each side runs once to warm up, then the best of ``--runs`` (default 3) is kept; the two
take turns within each round, so load from elsewhere on the machine hits both alike.

    .venv/bin/python bench/section.py
    .venv/bin/python bench/section.py --runs 5 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

from markdown_it import MarkdownIt

from artifactize.domain.tools.builtins.section import SECTION_SOURCE_MAX_BYTES, extract_section

KIB = 1024
SIZES = (10 * KIB, 100 * KIB, 1024 * KIB, SECTION_SOURCE_MAX_BYTES)


def document(size: int) -> tuple[str, str]:
    """A Markdown document of at most ``size`` bytes and the heading to ask for (its last)."""
    parts: list[str] = []
    used = 0
    number = 0
    while True:
        block = (
            f"## Section {number + 1}\n\n"
            f"Some *emphasised* text with `code` and [a link](https://example.com/{number}).\n"
            "A second line of the same paragraph, with **strong** words.\n\n"
            "- item one\n- item two\n  continued lazily\n\n"
            f"```python\n# not a heading {number}\nvalue = {number}\n```\n\n"
            "> a quoted\n> paragraph\n\n"
            f"Setext {number}\n---------\n\nclosing words\n\n"
        )
        if used + len(block.encode("utf-8")) > size:
            break
        number += 1
        parts.append(block)
        used += len(block.encode("utf-8"))
    return "".join(parts), f"Section {number}"


def best(run: Callable[[], object], times: list[float]) -> None:
    gc.collect()
    began = time.perf_counter()
    run()
    times.append(time.perf_counter() - began)


def measure(size: int, runs: int) -> dict[str, Any]:
    text, heading = document(size)
    full = MarkdownIt("commonmark")
    ours: list[float] = []
    reference: list[float] = []
    for _ in range(runs + 1):
        best(lambda: extract_section(text, heading), ours)
        best(lambda: full.parse(text), reference)
    ours_best, reference_best = min(ours[1:]), min(reference[1:])
    return {
        "documentBytes": len(text.encode("utf-8")),
        "sectionSeconds": round(ours_best, 4),
        "fullParseSeconds": round(reference_best, 4),
        "ratio": round(ours_best / reference_best, 2),
    }


def main() -> None:
    options = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    options.add_argument("--runs", type=int, default=3)
    options.add_argument("--json", action="store_true")
    args = options.parse_args()
    figures = [measure(size, args.runs) for size in SIZES]
    if args.json:
        print(json.dumps(figures))
        return
    for row in figures:
        print(
            f"section on {row['documentBytes']} bytes: {row['sectionSeconds']} s, "
            f"full markdown-it parse {row['fullParseSeconds']} s, ratio {row['ratio']}x"
        )


if __name__ == "__main__":
    main()
