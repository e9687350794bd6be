"""Waiting Human requests published to the team review store (pure).

A ``verify --wait`` whose store token has the ``publish`` scope *announces* each Human
request it waits for: a small document (no instruction, no scope, no result) saying which
eval of which repository waits, since when, who claimed it and on which machine. It renews
the announcement while it waits (every ``WAITING_SECONDS / RENEWALS_PER_TERM``) and
withdraws it when the request settles or the wait ends, so a dead machine's announcement
lapses within WAITING_SECONDS. Readers (``artifactize web``) list the live announcements of
a repository, a page at a time.

The *repository* is the name of the repository's folder (``/src/shop`` → ``shop``): paths
differ between machines, names usually do not. It is a label for listing, not a key.

Checks here serve the server (``parse_announcement``, ``parse_list_query``) and the client
(``announcement``, ``read_listing``) alike, so both sides agree on one set of rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from artifactize.domain.reviews.remote.record_format import ID_MAX_CHARS, KIB
from artifactize.domain.reviews.remote.server_admission import (
    Refusal,
    StoreRequestError,
    is_reuse_key,
)
from artifactize.kernel.timestamps import normalize_rfc3339
from artifactize.ports.documents import Request

# How long an announcement lives unrenewed: a dead machine's request leaves every inbox
# within this.
WAITING_SECONDS = 90
RENEWALS_PER_TERM = 3
ANNOUNCEMENT_MAX_BYTES = 16 * KIB  # one announcement as sent
LIST_LIMIT_DEFAULT = 100
LIST_LIMIT_MAX = 500  # announcements per page
TEXT_MAX_CHARS = 200  # repository, eval ID, reviewer, machine
TITLE_MAX_CHARS = 500
FIELDS = frozenset(
    {"repository", "requestId", "runId", "evalId", "key", "title", "createdAt", "claim", "machine"}
)
CLAIM_FIELDS = frozenset({"reviewer", "claimedAt"})
QUERY_FIELDS = frozenset({"repository", "after", "limit"})
_ID = re.compile(f"[A-Za-z0-9._:-]{{1,{ID_MAX_CHARS}}}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Announcement:
    """An accepted announcement: its indexed fields and the document as sent."""

    request_id: str
    repository: str
    created_at: str  # the stored form: text order is time order
    document: dict[str, Any]


@dataclass(frozen=True)
class ListQuery:
    repository: str | None  # None: every repository
    after: str | None  # the last request ID of the previous page
    limit: int


def repository_name(repo_path: str) -> str:
    """The repository label of a local repository path: its folder's name."""
    name = re.split(r"[\\/]", repo_path.rstrip("\\/"))[-1]  # POSIX and Windows paths
    return name[:TEXT_MAX_CHARS] or "-"


def is_request_id(value: object) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def _text(value: object, limit: int) -> bool:
    return isinstance(value, str) and 0 < len(value) <= limit and _CONTROL.search(value) is None


def _invalid(message: str) -> StoreRequestError:
    return StoreRequestError(Refusal.INVALID, message)


def _problem(body: Mapping[str, Any]) -> str | None:
    """The first rule ``body`` breaks, naming the field (never echoing a value)."""
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        return f"Unknown field {unknown[0][:64]!r} in a waiting request."
    for name in ("repository", "evalId"):
        if not _text(body.get(name), TEXT_MAX_CHARS):
            return f"{name} must be 1-{TEXT_MAX_CHARS} characters without control characters."
    for name in ("requestId", "runId"):
        if not is_request_id(body.get(name)):
            return f"{name} must be 1-{ID_MAX_CHARS} of [A-Za-z0-9._:-]."
    key = body.get("key")
    if key is not None and not is_reuse_key(key):
        return "key must be a reuse key (64 lowercase hex) or null."
    title = body.get("title")
    if title is not None and not _text(title, TITLE_MAX_CHARS):
        return f"title must be 1-{TITLE_MAX_CHARS} characters without control characters, or null."
    machine = body.get("machine")
    if machine is not None and not _text(machine, TEXT_MAX_CHARS):
        return f"machine must be 1-{TEXT_MAX_CHARS} characters without control characters, or null."
    created = body.get("createdAt")
    if not isinstance(created, str) or normalize_rfc3339(created, truncate=True) is None:
        return "createdAt must be an RFC 3339 timestamp."
    claim = body.get("claim")
    if claim is None:
        return None
    if not isinstance(claim, Mapping) or set(claim) != CLAIM_FIELDS:
        return 'claim must be null or {"reviewer", "claimedAt"}.'
    if not _text(claim.get("reviewer"), TEXT_MAX_CHARS):
        return f"claim.reviewer must be 1-{TEXT_MAX_CHARS} characters without control characters."
    claimed = claim.get("claimedAt")
    if not isinstance(claimed, str) or normalize_rfc3339(claimed, truncate=True) is None:
        return "claim.claimedAt must be an RFC 3339 timestamp."
    return None


def parse_announcement(request_id: str, body: object, size: int) -> Announcement:
    """The server's check of ``PUT /v1/waiting/{requestId}``."""
    if size > ANNOUNCEMENT_MAX_BYTES:
        raise StoreRequestError(
            Refusal.TOO_LARGE, f"A waiting request is at most {ANNOUNCEMENT_MAX_BYTES} bytes."
        )
    if not isinstance(body, Mapping):
        raise _invalid("A waiting request must be a JSON object.")
    problem = _problem(body)
    if problem is not None:
        raise _invalid(problem)
    if body["requestId"] != request_id:
        raise _invalid("requestId must equal the request ID in the path.")
    created = normalize_rfc3339(str(body["createdAt"]), truncate=True)
    assert created is not None
    return Announcement(request_id, str(body["repository"]), created, dict(body))


def parse_list_query(params: Mapping[str, str]) -> ListQuery:
    """The server's check of ``GET /v1/waiting?repository=&after=&limit=``."""
    unknown = sorted(set(params) - QUERY_FIELDS)
    if unknown:
        raise _invalid(f"Unknown query parameter {unknown[0][:64]!r}.")
    repository = params.get("repository")
    if repository is not None and not _text(repository, TEXT_MAX_CHARS):
        raise _invalid(f"repository must be 1-{TEXT_MAX_CHARS} characters.")
    after = params.get("after")
    if after is not None and not is_request_id(after):
        raise _invalid(f"after must be a request ID (1-{ID_MAX_CHARS} of [A-Za-z0-9._:-]).")
    raw = params.get("limit", str(LIST_LIMIT_DEFAULT))
    if not raw.isdigit() or not 1 <= int(raw) <= LIST_LIMIT_MAX:
        raise _invalid(f"limit must be a whole number from 1 to {LIST_LIMIT_MAX}.")
    return ListQuery(repository, after, int(raw))


# --- the client side -----------------------------------------------------------------------


@dataclass(frozen=True)
class PublishedRequest:
    """A waiting request as another machine announced it, validated."""

    request_id: str
    repository: str
    run_id: str
    eval_id: str
    key: str | None
    title: str | None
    created_at: str
    reviewer: str | None
    claimed_at: str | None
    machine: str | None
    publisher: str
    expires_at: str


def announcement(
    request: Request,
    repository: str,
    machine: str | None,
    claim: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """What ``verify`` announces for a waiting request document and its claim (None when
    it cannot be said within the rules: the request then stays unannounced, never
    half-said)."""
    title = request.title
    body: dict[str, Any] = {
        "repository": repository,
        "requestId": request.id,
        "runId": request.run_id,
        "evalId": request.eval_id,
        "key": request.key,
        "title": title[:TITLE_MAX_CHARS] if isinstance(title, str) and title else None,
        "createdAt": request.created_at,
        "claim": (
            {"reviewer": claim.get("reviewer"), "claimedAt": claim.get("claimedAt")}
            if isinstance(claim, Mapping)
            else None
        ),
        "machine": machine[:TEXT_MAX_CHARS] if machine else None,
    }
    return body if _problem(body) is None else None


def read_listing(item: object) -> PublishedRequest | str:
    """One entry of the store's listing, or the rule it breaks."""
    if not isinstance(item, Mapping):
        return "an entry is not a JSON object"
    stamped = {k: item.get(k) for k in ("publisher", "expiresAt")}
    body = {k: v for k, v in item.items() if k not in stamped}
    problem = _problem(body)
    if problem is not None:
        return problem
    if not _text(stamped["publisher"], TEXT_MAX_CHARS) or not isinstance(stamped["expiresAt"], str):
        return "publisher and expiresAt must be set by the store"
    claim = body.get("claim") or {}
    return PublishedRequest(
        request_id=str(body["requestId"]),
        repository=str(body["repository"]),
        run_id=str(body["runId"]),
        eval_id=str(body["evalId"]),
        key=body.get("key"),
        title=body.get("title"),
        created_at=str(body["createdAt"]),
        reviewer=claim.get("reviewer"),
        claimed_at=claim.get("claimedAt"),
        machine=body.get("machine"),
        publisher=str(stamped["publisher"]),
        expires_at=str(stamped["expiresAt"]),
    )
