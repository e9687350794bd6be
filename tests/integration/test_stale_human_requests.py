"""A Human request stranded by a declaration edit, and ``request cancel``, through the real
CLI and real SQLite state (issue 12, Build 1).

A description is not in the reuse key: after editing one, the key still names the waiting
execution, whose Human actions are refused (its declarations changed). ``verify`` must then
supersede that request (and its followers) and ask again instead of following it forever;
``request cancel`` ends a waiting request on purpose. Fixture F of test_human_reviews.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_human_reviews import (  # noqa: F401  (an autouse fixture)
    GREEN_FIELDS,
    WAITING,
    Fixture,
    no_process_left_behind,
)


@pytest.fixture
def fx(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Fixture:
    """Fixture F, in an environment without artifactize settings (as test_human_reviews)."""
    for key in [k for k in os.environ if k.startswith("ARTIFACTIZE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ARTIFACTIZE_REMOTE", "off")
    monkeypatch.setenv("USER", "alice")
    return Fixture(tmp_path, capsys)


CHANGED = "Human Artifact scope or eval declarations changed since the request was recorded."
FOLLOWING = "Waiting for the active Human execution of this reuse key."


def edit_description(fx: Fixture) -> None:
    path: Path = fx.repo / "doc" / "index.artf"
    text = path.read_text(encoding="utf-8")
    assert 'description = "Show the notes."' in text
    path.write_text(text.replace("Show the notes.", "Show the release notes."), encoding="utf-8")


def request(fx: Fixture, request_id: str) -> dict[str, Any]:
    outcome = fx.cli("request", "show", request_id)
    assert outcome.code == 0, outcome
    data = outcome.data
    assert isinstance(data, dict)
    return data


def verify_signoff(fx: Fixture) -> str:
    outcome = fx.cli("verify", "doc/signoff")
    assert outcome.code == 4, outcome
    (only,) = outcome.data["requests"]
    return str(only["id"])


def test_verify_supersedes_a_stranded_request_and_its_followers_then_asks_again(
    fx: Fixture,
) -> None:
    stranded = fx.claimed()
    follower = verify_signoff(fx)
    assert request(fx, follower)["blockedReason"] == FOLLOWING
    edit_description(fx)
    refused = fx.cli("request", "tool", stranded, "show_doc")
    assert (refused.code, refused.error) == (2, CHANGED)

    asked = verify_signoff(fx)

    old = request(fx, stranded)
    assert old["status"] == "SUPERSEDED" and old["claim"] is None
    assert str(old["reason"]).startswith(CHANGED) and asked in str(old["reason"])
    assert old["supersededBy"] == asked
    assert (old["execution"]["status"], old["execution"]["errorCode"]) == ("ERROR", "SUPERSEDED")
    joined = request(fx, follower)
    assert (joined["status"], joined["reason"]) == ("SUPERSEDED", old["reason"])
    new = request(fx, asked)
    assert (new["status"], new["blockedReason"]) == ("WAITING_HUMAN", WAITING)
    assert new["executionId"] != old["executionId"]
    # the new request works: claim, run the edited tool, submit GREEN
    assert fx.cli("request", "claim", asked).code == 0
    assert fx.cli("request", "tool", asked, "show_doc").code == 0
    assert fx.submit(asked, "--verdict", "GREEN", "--fields", GREEN_FIELDS).code == 0
    assert fx.cli("verify", "doc/signoff").code == 0  # reused


def test_an_unchanged_wait_is_still_followed(fx: Fixture) -> None:
    first = fx.waiting()
    follower = verify_signoff(fx)
    assert request(fx, follower)["blockedReason"] == FOLLOWING
    assert request(fx, first)["status"] == "WAITING_HUMAN"


def test_the_claimant_cancels_with_a_reason_and_followers_end_with_it(fx: Fixture) -> None:
    original = fx.claimed()
    follower = verify_signoff(fx)
    outcome = fx.cli("request", "cancel", original, "--reason", "Wrong notes attached.")
    assert outcome.code == 0, outcome
    assert outcome.data["status"] == "CANCELLED" and outcome.data["endedBy"] == "alice"
    assert outcome.data["reason"] == "Wrong notes attached."
    ended = request(fx, follower)
    assert (ended["status"], ended["endedBy"]) == ("CANCELLED", "alice")
    again = fx.cli("request", "cancel", original)
    assert (again.code, again.error) == (2, "Request is not waiting for a Human review.")
    assert request(fx, verify_signoff(fx))["status"] == "WAITING_HUMAN"  # asks again


def test_anyone_cancels_an_unclaimed_request_but_not_one_claimed_by_another(
    fx: Fixture,
) -> None:
    unclaimed = fx.waiting()
    outcome = fx.cli("request", "cancel", unclaimed, "--reviewer", "bob")
    assert outcome.code == 0, outcome
    assert (outcome.data["endedBy"], outcome.data["reason"]) == ("bob", "Cancelled by bob.")
    claimed = verify_signoff(fx)
    assert fx.cli("request", "claim", claimed).code == 0
    refused = fx.cli("request", "cancel", claimed, "--reviewer", "bob")
    assert (refused.code, refused.error) == (
        2,
        f"Request {claimed} is claimed by alice; only they can cancel it.",
    )
    assert request(fx, claimed)["status"] == "WAITING_HUMAN"


def test_cancel_refuses_a_blank_or_overlong_reason(fx: Fixture) -> None:
    from artifactize.domain.reviews.human.ending import CANCEL_REASON_MAX_CHARS

    waiting = fx.waiting()
    blank = fx.cli("request", "cancel", waiting, "--reason", "  ")
    assert (blank.code, blank.error) == (2, "--reason must not be blank.")
    long = fx.cli("request", "cancel", waiting, "--reason", "x" * (CANCEL_REASON_MAX_CHARS + 1))
    assert long.code == 2 and "at most 1000 characters, got 1001" in long.error
    assert request(fx, waiting)["status"] == "WAITING_HUMAN"
    at_limit = fx.cli("request", "cancel", waiting, "--reason", "x" * CANCEL_REASON_MAX_CHARS)
    assert at_limit.code == 0, at_limit
