"""``section`` benchmark: today's hand-written CommonMark heading parser against markdown-it-py.

The issue asked whether ``domain/tools/builtins/section.py`` could hand its parsing to
markdown-it-py (block parse, inline parse of headings only), provided ``section`` stays
within 1.5x of today's time at its 8 MiB cap. This script answers that, in one process:

- **document**: just under ``SECTION_SOURCE_MAX_BYTES`` (8 MiB) of README-like Markdown:
  ATX and setext headings, paragraphs with emphasis, code spans and links, lists with
  continuation lines, fenced code holding ``# comment`` lines (which are no headings) and
  block quotes; the heading asked for is the last one, so the whole document is parsed;
- **today**: ``extract_section(document, heading)``, the built-in as it is;
- **markdown-it-py**: the same section found through ``MarkdownIt("commonmark")`` with the
  core ``inline`` rule off (block parse only; link reference definitions off, as today's
  parser does not model them), the ATX and setext heading rules wrapped to note where
  each heading starts, and ``parseInline`` on each heading's content only, reduced to its
  text (text, code spans, image alt text; breaks become a space). Both must find the same
  headings and return the same section, or the script fails.

Each side runs once to warm up, then the best of ``--runs`` (default 2) is kept; the two
take turns within each round, so load from elsewhere on the machine hits both alike. The
ratio is markdown-it-py / today; ``RATIO_LIMIT`` (1.5) is the bar the issue set.

    .venv/bin/python bench/section.py
    .venv/bin/python bench/section.py --runs 3 --json
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock

from artifactize.domain.tools.builtins.section import (
    SECTION_OUTPUT_MAX_BYTES,
    SECTION_SOURCE_MAX_BYTES,
    Heading,
    extract_section,
    parse_headings,
)
from artifactize.domain.tools.commands.text_output import truncate_utf8

RATIO_LIMIT = 1.5
DOCUMENT_SLACK_BYTES = 4096  # the document stays this far under the 8 MiB cap


def document() -> tuple[str, str]:
    """The Markdown document and the heading to ask for (its last one)."""
    parts: list[str] = []
    size = 0
    number = 0
    while size < SECTION_SOURCE_MAX_BYTES - DOCUMENT_SLACK_BYTES:
        number += 1
        block = (
            f"## Section {number}\n\n"
            f"Some *emphasised* text with `code` and [a link](https://example.com/{number}).\n"
            "A second line of the same paragraph, with **strong** words.\n\n"
            "- item one\n- item two\n  continued lazily\n\n"
            f"```python\n# not a heading {number}\nvalue = {number}\n```\n\n"
            "> a quoted\n> paragraph\n\n"
            f"Setext {number}\n---------\n\nclosing words\n\n"
        )
        parts.append(block)
        size += len(block.encode("utf-8"))
    return "".join(parts), f"Section {number}"


def markdown_it_headings(text: str) -> list[Heading]:
    """Every heading, as ``parse_headings`` reports them, found by markdown-it-py."""
    parser = MarkdownIt("commonmark")
    parser.disable(["inline", "text_join"])  # block parse only; headings' inline below
    parser.block.ruler.disable("reference")  # as today: reference definitions not modelled
    starts: list[tuple[int, int]] = []  # (line, column in the normalized source)

    def noting(rule: Callable[..., bool]) -> Callable[..., bool]:
        def wrapped(state: StateBlock, start: int, end: int, silent: bool) -> bool:
            found = rule(state, start, end, silent)
            if found and not silent:
                starts.append((start, state.bMarks[start] + state.tShift[start]))
            return found

        return wrapped

    for name in ("heading", "lheading"):
        rule = next(r for r in parser.block.ruler.__rules__ if r.name == name)
        rule.fn = noting(rule.fn)
    parser.block.ruler.__cache__ = None
    offset = 1 if text.startswith("\ufeff") else 0
    source = text[offset:]
    tokens = parser.parse(source)
    original_lines = _line_starts(source)
    normalized_lines = _line_starts(source.replace("\r\n", "\n").replace("\r", "\n"))
    inline = MarkdownIt("commonmark")  # the heading contents only
    inline.block.ruler.disable("reference")
    headings: list[Heading] = []
    opened = [i for i, token in enumerate(tokens) if token.type == "heading_open"]
    for index, (line, position) in zip(opened, starts, strict=True):
        column = position - normalized_lines[line]
        start = offset + original_lines[line] + column
        content = tokens[index + 1].content
        headings.append(
            Heading(
                int(tokens[index].tag[1]),
                _inline_text(inline, content),
                start,
                offset + original_lines[line],
            )
        )
    return headings


def _line_starts(text: str) -> list[int]:
    starts = [0]
    position = 0
    for piece in text.splitlines(keepends=True):
        position += len(piece)
        starts.append(position)
    return starts


def _inline_text(parser: MarkdownIt, content: str) -> str:
    parts: list[str] = []
    for token in parser.parseInline(content)[0].children or []:
        if token.type in ("text", "code_inline", "image"):  # an image: its alt text
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def markdown_it_section(text: str, heading: str) -> str:
    headings = markdown_it_headings(text)
    for index, candidate in enumerate(headings):
        if candidate.text == heading:
            end = next(
                (h.line_start for h in headings[index + 1 :] if h.level <= candidate.level),
                len(text),
            )
            return truncate_utf8(text[candidate.start : end], SECTION_OUTPUT_MAX_BYTES)
    raise LookupError(heading)


def best(run: Callable[[], object], times: list[float]) -> None:
    gc.collect()
    began = time.perf_counter()
    run()
    times.append(time.perf_counter() - began)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--runs", type=int, default=2)
    options.add_argument("--json", action="store_true")
    args = options.parse_args()
    text, heading = document()
    today = extract_section(text, heading)
    ours = [(h.level, h.text, h.start, h.line_start) for h in parse_headings(text)]
    theirs = [(h.level, h.text, h.start, h.line_start) for h in markdown_it_headings(text)]
    if ours != theirs or markdown_it_section(text, heading) != today:
        raise SystemExit("markdown-it-py and today's parser disagree on the bench document")
    today_times: list[float] = []
    markdown_it_times: list[float] = []
    for _ in range(args.runs):
        best(lambda: extract_section(text, heading), today_times)
        best(lambda: markdown_it_section(text, heading), markdown_it_times)
    figures: dict[str, Any] = {
        "documentBytes": len(text.encode("utf-8")),
        "headings": len(ours),
        "todaySeconds": round(min(today_times), 3),
        "markdownItSeconds": round(min(markdown_it_times), 3),
        "ratio": round(min(markdown_it_times) / min(today_times), 2),
        "ratioLimit": RATIO_LIMIT,
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"section on {figures['documentBytes']} bytes ({figures['headings']} headings): "
        f"today {figures['todaySeconds']} s, markdown-it-py {figures['markdownItSeconds']} s, "
        f"ratio {figures['ratio']}x (limit {RATIO_LIMIT}x)"
    )


if __name__ == "__main__":
    main()
