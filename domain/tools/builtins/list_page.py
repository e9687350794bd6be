"""The ``list`` built-in: one page of a logical directory.

The page is encoded once: its compact JSON answers the budget check (``page_text_within``)
and is the ``entries`` member of the result's compact JSON, whose other members are
encoded on their own (``merged_json_objects``); encoding the 200-entry page again for the
result was a sixth of a served ``list`` call (bench/README.md, "mcp")."""

from __future__ import annotations

from typing import Any

from artifactize.domain.text import compact_json, compact_json_size, merged_json_objects
from artifactize.domain.tools.builtins.listing import entries_json, list_location
from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.results import (
    BUILTIN_RESULT_MAX_BYTES,
    ToolError,
    ToolResult,
    bounded_json_result,
)

LIST_DEFAULT_LIMIT = 200
LIST_MAX_LIMIT = 200
_PAGE_OVERHEAD_BYTES = 1024


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def page_text_within(page: list[dict[str, str]], budget: int) -> tuple[list[dict[str, str]], str]:
    """``page_within`` and the compact JSON of the page it gives (encoded once when the
    whole page fits)."""
    text = compact_json(page)
    if not page or budget + _utf8_size(text) - 1 <= BUILTIN_RESULT_MAX_BYTES:
        return page, text
    kept = entries_within(page, budget)
    return kept, compact_json(kept)


def page_within(page: list[dict[str, str]], budget: int) -> list[dict[str, str]]:
    """The entries of ``page`` up to the first that takes ``budget`` (bytes already spent)
    past BUILTIN_RESULT_MAX_BYTES, each entry costing its compact JSON size plus a comma.

    Together they cost the page's compact JSON array less one byte: when the whole page
    fits, so does every prefix of it, and one encoding of the page answers (a listing's
    page is 200 entries; measuring each on its own was half of a ``list`` call)."""
    return page_text_within(page, budget)[0]


def entries_within(page: list[dict[str, str]], budget: int) -> list[dict[str, str]]:
    """``page_within`` measuring entry by entry: the reference, and the case of a page that
    does not fit whole."""
    for index, data in enumerate(page):
        budget += compact_json_size(data) + 1
        if budget > BUILTIN_RESULT_MAX_BYTES:
            return page[:index]
    return page


def run_list(context: BuiltinContext, args: dict[str, Any]) -> ToolResult:
    requested = args.get("path", "")
    offset = int(args.get("offset", 0))
    limit = int(args.get("limit", LIST_DEFAULT_LIMIT))
    location = context.locate(requested, allow_virtual_root=True)
    # Entries of a file Artifact's virtual root ``.`` are named from the containing folder;
    # the result echoes the request path as given (the seed: the logical request path).
    path = "" if location.is_file_artifact_root and requested == "." else requested
    entries = list_location(context, location)
    budget = _PAGE_OVERHEAD_BYTES + compact_json_size(requested)
    page, page_text = page_text_within(entries_json(entries[offset : offset + limit], path), budget)
    if not page and offset < len(entries):
        raise ToolError("Listing entry exceeds 512 KiB; narrow the path.")
    following = offset + len(page)
    truncated = following < len(entries)
    head = {
        "artifactId": context.owner,
        "resolvedArtifactId": location.artifact.name,
        "path": requested,
    }
    tail = {
        "totalEntries": len(entries),
        "truncated": truncated,
        "nextOffset": following if truncated else None,
    }
    text = merged_json_objects(
        compact_json(head), '{"entries":' + page_text + "}", compact_json(tail)
    )
    return bounded_json_result({**head, "entries": page, **tail}, text)
