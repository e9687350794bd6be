"""Lease limits and lease request checks (domain/reviews/remote/leases.py)."""

from __future__ import annotations

import pytest

from artifactize.domain.reviews.remote.leases import (
    HOLDER_MAX_CHARS,
    LEASE_RENEWALS_PER_TERM,
    LEASE_SECONDS_DEFAULT,
    LEASE_SECONDS_MAX,
    LEASE_SECONDS_MIN,
    check_lease_seconds,
    parse_lease_request,
    renew_interval,
)
from artifactize.domain.reviews.remote.server_admission import Refusal, StoreRequestError


def test_lease_seconds_at_the_limits_and_one_past() -> None:
    assert (LEASE_SECONDS_MIN, LEASE_SECONDS_MAX, LEASE_SECONDS_DEFAULT) == (1, 60, 60)
    assert check_lease_seconds(LEASE_SECONDS_MIN) == 1
    assert check_lease_seconds(LEASE_SECONDS_MAX) == 60
    for bad in (LEASE_SECONDS_MIN - 1, LEASE_SECONDS_MAX + 1):
        with pytest.raises(ValueError, match="must lapse within 60 s"):
            check_lease_seconds(bad)
    for wrong in (True, 1.5, "5"):
        with pytest.raises(ValueError, match="whole number"):
            check_lease_seconds(wrong)  # type: ignore[arg-type]


def test_the_holder_renews_several_times_per_term() -> None:
    assert LEASE_RENEWALS_PER_TERM == 3
    assert renew_interval(60) == 20.0
    assert renew_interval(LEASE_SECONDS_MIN) < LEASE_SECONDS_MIN


def test_holder_ids_at_the_limit_and_one_past() -> None:
    longest = "h" * HOLDER_MAX_CHARS
    assert parse_lease_request({"holder": longest}) == longest
    assert parse_lease_request({"holder": "execution-run-Abc_1.x:2"}) == "execution-run-Abc_1.x:2"
    bodies: list[object] = [
        {"holder": "h" * (HOLDER_MAX_CHARS + 1)},
        {"holder": ""},
        {"holder": "-leading"},
        {"holder": "a b"},
        {"holder": 7},
        {},
        [],
        "holder",
    ]
    for body in bodies:
        with pytest.raises(StoreRequestError) as caught:
            parse_lease_request(body)
        assert caught.value.kind is Refusal.INVALID
    with pytest.raises(StoreRequestError, match="Unknown field 'ttl'"):
        parse_lease_request({"holder": "h", "ttl": 5})
