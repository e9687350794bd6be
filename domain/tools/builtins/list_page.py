"""The ``list`` built-in: one page of a logical directory."""

from __future__ import annotations

from typing import Any

from artifactize.domain.text import compact_json_size
from artifactize.domain.tools.builtins.listing import list_location
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


def page_within(page: list[dict[str, str]], budget: int) -> list[dict[str, str]]:
    """The entries of ``page`` up to the first that takes ``budget`` (bytes already spent)
    past BUILTIN_RESULT_MAX_BYTES, each entry costing its compact JSON size plus a comma.

    Together they cost the page's compact JSON array less one byte: when the whole page
    fits, so does every prefix of it, and one encoding of the page answers (a listing's
    page is 200 entries; measuring each on its own was half of a ``list`` call)."""
    if not page or budget + compact_json_size(page) - 1 <= BUILTIN_RESULT_MAX_BYTES:
        return page
    return entries_within(page, budget)


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
    page = page_within([entry.to_json(path) for entry in entries[offset : offset + limit]], budget)
    if not page and offset < len(entries):
        raise ToolError("Listing entry exceeds 512 KiB; narrow the path.")
    following = offset + len(page)
    truncated = following < len(entries)
    return bounded_json_result(
        {
            "artifactId": context.owner,
            "resolvedArtifactId": location.artifact.name,
            "path": requested,
            "entries": page,
            "totalEntries": len(entries),
            "truncated": truncated,
            "nextOffset": following if truncated else None,
        }
    )
