"""Races between real processes over one Human request: exactly one winner, every time.

Eight reviewers claim the same waiting request at once (one gets it, seven are refused), and
two submit opposite verdicts at once (one settles it, the other is refused; one record).
Each is repeated (ten times as often under ``make soak``); every race counts as one trial
and any round without exactly one winner as a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_human_reviews import GREEN_FIELDS, NOT_CLAIMANT, NOT_WAITING, Fixture
from tests.support.hostile import record_counts, scaled

CLAIMERS = 8
SUBMITTERS = 2
ROUNDS = 1
RACE_SECONDS = 120


@pytest.fixture
def fx(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Fixture:
    for key in [k for k in os.environ if k.startswith("ARTIFACTIZE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ARTIFACTIZE_REMOTE", "off")
    monkeypatch.setenv("USER", "alice")
    return Fixture(tmp_path, capsys)


def race(racers: list[subprocess.Popen[str]]) -> list[tuple[int, object]]:
    results = []
    for racer in racers:
        out, err = racer.communicate(timeout=RACE_SECONDS)
        assert "Traceback" not in err, err
        results.append((racer.returncode, json.loads(out)))
    return results


def test_eight_racing_claims_have_one_winner(fx: Fixture) -> None:
    rounds, failures = scaled(ROUNDS), 0
    for _ in range(rounds):
        request_id = fx.waiting()
        racers = [
            fx.spawn("request", "claim", request_id, "--reviewer", f"reviewer-{n}")
            for n in range(CLAIMERS)
        ]
        results = race(racers)
        winners = [data for code, data in results if code == 0]
        losers = [data for code, data in results if code != 0]
        if len(winners) != 1 or any(data != {"error": NOT_CLAIMANT} for data in losers):
            failures += 1
        claim = fx.cli("request", "show", request_id).data["claim"]
        if len(winners) == 1 and claim["reviewer"] != winners[0]["reviewer"]:  # type: ignore[index]
            failures += 1
        fx.cli("request", "unclaim", request_id, "--reviewer", claim["reviewer"])
        fx.cli("request", "submit", request_id, "--verdict", "GREEN", "--fields", GREEN_FIELDS)
        (fx.repo / "doc" / "notes.txt").write_text(f"round {_}\n", encoding="utf-8")
    record_counts(f"{CLAIMERS} racing claims (failures: not exactly one winner)", rounds, failures)
    assert failures == 0


def test_two_racing_submits_have_one_winner(fx: Fixture) -> None:
    rounds, failures = scaled(ROUNDS), 0
    seen: list[object] = []
    for round_number in range(rounds):
        request_id = fx.claimed()
        racers = [
            fx.spawn("request", "submit", request_id, "--verdict", verdict, "--fields", fields)
            for verdict, fields in (("GREEN", GREEN_FIELDS), ("RED", '{"reason":"no"}'))
        ]
        results = race(racers)
        codes = sorted(code for code, _ in results)
        loser = [data for code, data in results if code == 2]
        winner = [data for code, data in results if code == 0]
        if codes != [0, 2] or loser != [{"error": NOT_WAITING}]:
            failures += 1
            seen.append(results)
        else:
            key = winner[0]["key"]  # type: ignore[index]
            history = fx.cli("cache", "show", key, "--history").data
            if len(history) != 1:
                failures += 1  # a lost or doubled write
                seen.append(history)
        (fx.repo / "doc" / "notes.txt").write_text(f"round {round_number}\n", encoding="utf-8")
    record_counts(
        f"{SUBMITTERS} racing submits (failures: not one winner, one record)", rounds, failures
    )
    assert failures == 0
