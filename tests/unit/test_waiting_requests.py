"""The rules of an announced waiting Human request (pure): what the server accepts, what
``verify`` announces, what a reader trusts, and the listing query; each limit at its value
and one past."""

from __future__ import annotations

from typing import Any

import pytest

from artifactize.domain.reviews.remote.server_admission import Refusal, StoreRequestError
from artifactize.domain.reviews.remote.waiting_requests import (
    ANNOUNCEMENT_MAX_BYTES,
    LIST_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    TEXT_MAX_CHARS,
    TITLE_MAX_CHARS,
    announcement,
    parse_announcement,
    parse_list_query,
    read_listing,
    repository_name,
)
from artifactize.kernel.document_codec import request_from_json


def said(**changes: Any) -> dict[str, Any]:
    return {
        "repository": "shop",
        "requestId": "run-1-1",
        "runId": "run-1",
        "evalId": "doc/signoff",
        "key": None,
        "title": None,
        "createdAt": "2026-05-01T10:00:00+02:00",
        "claim": None,
        "machine": None,
        **changes,
    }


def refusal(body: Any, size: int = 10) -> StoreRequestError:
    with pytest.raises(StoreRequestError) as caught:
        parse_announcement("run-1-1", body, size)
    return caught.value


def test_an_announcement_is_accepted_with_its_time_in_the_stored_form() -> None:
    checked = parse_announcement("run-1-1", said(), 10)
    assert (checked.repository, checked.created_at) == ("shop", "2026-05-01T08:00:00.000000000Z")
    assert checked.document == said()


@pytest.mark.parametrize(
    ("field", "limit"),
    [
        ("repository", TEXT_MAX_CHARS),
        ("evalId", TEXT_MAX_CHARS),
        ("machine", TEXT_MAX_CHARS),
        ("title", TITLE_MAX_CHARS),
    ],
)
def test_text_limits_at_the_limit_and_one_past(field: str, limit: int) -> None:
    parse_announcement("run-1-1", said(**{field: "x" * limit}), 10)
    assert field in refusal(said(**{field: "x" * (limit + 1)})).message


def test_the_size_limit_and_one_past() -> None:
    parse_announcement("run-1-1", said(), ANNOUNCEMENT_MAX_BYTES)
    assert refusal(said(), ANNOUNCEMENT_MAX_BYTES + 1).kind is Refusal.TOO_LARGE


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([], "JSON object"),
        (said(requestId="run-2-1"), "requestId"),
        (said(runId="a b"), "runId"),
        (said(key="A" * 64), "key"),
        (said(createdAt="2026-05-01T10:00:60Z"), "createdAt"),
        (said(claim={"reviewer": "carol"}), "claim"),
        (said(claim={"reviewer": "carol", "claimedAt": "now"}), "claim.claimedAt"),
        (said(claim={"reviewer": "", "claimedAt": "2026-05-01T10:00:00Z"}), "claim.reviewer"),
        (said(title="a\x1bb"), "title"),
        (said(secret=1), "secret"),
    ],
)
def test_invalid_announcements_name_the_field(body: Any, field: str) -> None:
    problem = refusal(body)
    assert problem.kind is Refusal.INVALID and field in problem.message


def test_the_listing_query() -> None:
    assert parse_list_query({}).limit == LIST_LIMIT_DEFAULT
    query = parse_list_query(
        {"repository": "shop", "after": "run-1-1", "limit": str(LIST_LIMIT_MAX)}
    )
    assert (query.repository, query.after, query.limit) == ("shop", "run-1-1", LIST_LIMIT_MAX)
    for bad in (
        {"limit": str(LIST_LIMIT_MAX + 1)},
        {"limit": "0"},
        {"limit": "-1"},
        {"after": "../x"},
        {"token": "x"},
    ):
        with pytest.raises(StoreRequestError):
            parse_list_query(bad)


def test_what_verify_announces() -> None:
    request = {
        "id": "run-1-1",
        "runId": "run-1",
        "evalId": "doc/signoff",
        "key": "a" * 64,
        "title": "T" * (TITLE_MAX_CHARS + 5),
        "createdAt": "2026-05-01T10:00:00.000000000Z",
    }
    claim = {"reviewer": "carol", "claimedAt": "2026-05-01T10:01:00.000000000Z"}
    body = announcement(request_from_json(request), "shop", "bob@build-7", claim)
    assert body is not None
    assert len(body["title"]) == TITLE_MAX_CHARS and body["claim"] == claim
    parse_announcement("run-1-1", body, 10)
    undated = request_from_json({**request, "createdAt": None})
    assert announcement(undated, "shop", None, None) is None


def test_a_reader_trusts_only_a_valid_entry_stamped_by_the_store() -> None:
    stamped = said() | {"publisher": "ci", "expiresAt": "2026-05-01T10:01:30.000000000Z"}
    checked = read_listing(stamped)
    assert not isinstance(checked, str) and checked.publisher == "ci"
    assert isinstance(read_listing(said()), str)
    assert isinstance(read_listing(stamped | {"evalId": ""}), str)
    assert isinstance(read_listing("x"), str)


def test_the_repository_label_is_the_folder_name() -> None:
    assert repository_name("/src/shop") == "shop"
    assert repository_name("/") == "-"
    assert len(repository_name("/" + "x" * (TEXT_MAX_CHARS + 9))) == TEXT_MAX_CHARS


def test_the_repository_label_of_windows_and_trailing_separators() -> None:
    assert repository_name("C:\\src\\shop\\") == "shop"
    assert repository_name("/src/shop/") == "shop"
