"""Where a reused verdict came from, said so a reader needs nothing else to find it.

A reused request's ``source`` names the producing Run and request and its ``kind``
(``cache``: this state's history; ``remote``: a record mirrored from the team store;
``joined``: a live execution of the same key that this request waited for); the request
also carries the source's ``provenance``, ``producer``, ``reviewer`` and, for a team store
record, ``origin`` (store, publisher, publication time), so ``run show`` explains it even
when the producing Run is not in the local state. The text names who produced it: the
Human reviewer, else the producer ``user@host``, else the publisher.

"Produced by another profile" counts only a producing profile that differs in a field
that changes the review (``PROFILE_FIELDS_THAT_MATTER``); timeouts and budgets do not, and
a field the producing record does not keep (a team store record keeps no runtime command:
the key already covers it) is never a difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.ports.statuses import SourceKind

SOURCE_WORDS: Mapping[str, str] = {
    SourceKind.CACHE: "local cache",
    SourceKind.REMOTE: "team store",
    SourceKind.JOINED: "joined",
    SourceKind.DERIVED: "derived",
}
PROFILE_FIELDS_THAT_MATTER = ("kind", "backend", "model", "reasoning")
PROFILE_FIELDS_IF_KEPT = ("command", "args")  # runtime: in the key, absent from store records


def produced_by(record_data: Mapping[str, Any]) -> str | None:
    """Who produced a result: its Human reviewer, else its producer's name, else its
    publisher (a team store record)."""
    reviewer = record_data.get("reviewer")
    if isinstance(reviewer, str) and reviewer:
        return reviewer
    producer = record_data.get("producer")
    if isinstance(producer, Mapping) and producer.get("name"):
        return str(producer["name"])
    origin = record_data.get("origin")
    if isinstance(origin, Mapping) and origin.get("publisher"):
        return str(origin["publisher"])
    return None


def source_text(request: Mapping[str, Any]) -> str | None:
    """``reused: team store, run-kDqg12 by alice`` (or ``derived``) for a request with a
    ``source``; None for one without."""
    source = request.get("source")
    if not isinstance(source, Mapping):
        return None
    kind = str(source.get("kind"))
    if kind == SourceKind.DERIVED:
        return "derived"
    text = f"reused: {SOURCE_WORDS.get(kind, kind)}, {source.get('runId')}"
    by = produced_by(request)
    return f"{text} by {by}" if by else text


def other_profile(produced: Mapping[str, Any] | None, requested: Mapping[str, Any]) -> bool:
    """Whether the producing profile differs from the requested one where it matters."""
    if not isinstance(produced, Mapping):
        return False
    if any(produced.get(name) != requested.get(name) for name in PROFILE_FIELDS_THAT_MATTER):
        return True
    return any(
        name in produced and name in requested and produced[name] != requested[name]
        for name in PROFILE_FIELDS_IF_KEPT
    )
