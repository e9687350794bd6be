"""Two CI machines, one store: two real ``verify`` processes with two state directories and
one real ``server run`` (leases of 2 s, ``--lease-seconds``) racing on one Agent eval against
the fake provider. Exactly one provider conversation happens, and the other machine reuses
its verdict as a join; when the lease holder is killed with SIGKILL, the other takes over
once the lease lapses. ``remote status`` shows the leases held.

The CLI runs through ``tests.support.provider_as_default`` (the fake provider as the OpenAI
backend's default URL): a test endpoint variable would rule the store out.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.integration.test_review_store_server import add_token, bearer, client, server_process
from tests.integration.test_verify_cli import GREEN, REPO_ROOT, Repo, no_leftovers  # noqa: F401
from tests.support.cli import run_cli
from tests.support.fake_provider import FAKE_OPENAI_KEY, FakeProvider, delayed, hang, openai_text

EVAL = "doc/review"
LEASE_SECONDS = 2
# Longer than a lease: the holder must renew it, or the other machine would take over.
REVIEW_SECONDS = 2.5 * LEASE_SECONDS
RUN_SECONDS = 60


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def verify(
    repo: Repo, state: Path, url: str, token: str, fake: FakeProvider
) -> subprocess.Popen[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ARTIFACTIZE_", "OPENAI_"))}
    env = {
        **base,
        "OPENAI_API_KEY": FAKE_OPENAI_KEY,
        "ARTIFACTIZE_REMOTE": url,
        "ARTIFACTIZE_REMOTE_TOKEN": token,
    }
    command = [sys.executable, "-m", "tests.support.provider_as_default", fake.base_url]
    command += ["--repo", str(repo.path), "--state-dir", str(state), "--json", "verify", EVAL]
    return subprocess.Popen(
        command,
        env=env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finished(process: subprocess.Popen[str]) -> tuple[int, Any, str]:
    out, err = process.communicate(timeout=RUN_SECONDS)
    return process.returncode, json.loads(out) if out.strip() else None, err


def only_request(run: Any) -> dict[str, Any]:
    (request,) = run["requests"]
    assert isinstance(request, dict)
    return request


@pytest.mark.process  # two machines: two real processes at once
def test_two_machines_racing_on_one_agent_eval_pay_for_one_review(
    tmp_path: Path, fake: FakeProvider
) -> None:
    repo = Repo(tmp_path)
    token = add_token(tmp_path / "store", "ci", "read,publish")
    fake.enqueue(delayed(REVIEW_SECONDS, openai_text(GREEN)))
    extra = ("--lease-seconds", str(LEASE_SECONDS))
    with server_process(tmp_path / "store", extra=extra) as store:
        first = verify(repo, tmp_path / "s1", store.url, token, fake)
        second = verify(repo, tmp_path / "s2", store.url, token, fake)
        results = [finished(first), finished(second)]
    for code, run, err in results:
        assert code == 0, (run, err)
    requests = [only_request(run) for _code, run, _err in results]
    assert len(fake.posts("/responses")) == 1 and fake.exhausted == 0
    kinds = sorted((r["source"] or {}).get("kind") or "executed" for r in requests)
    assert kinds == ["executed", "joined"]
    assert {r["status"] for r in requests} == {"GREEN"}
    assert sum(run["executionsStarted"] for _c, run, _e in results) == 1
    leases = [json.loads(line) for line in store.stderr if '"/v1/leases/{key}"' in line]
    assert len({line["key"] for line in leases}) == 1  # both asked for the same key
    # The holder renewed while the provider took longer than a lease.
    assert sum(line["status"] == 200 for line in leases) >= 3


@pytest.mark.process  # kill -9
def test_a_killed_holder_s_lease_lapses_and_the_other_takes_over(
    tmp_path: Path, fake: FakeProvider
) -> None:
    repo = Repo(tmp_path)
    token = add_token(tmp_path / "store", "ci", "read,publish")
    fake.enqueue(hang(), openai_text(GREEN))
    extra = ("--lease-seconds", str(LEASE_SECONDS))
    with server_process(tmp_path / "store", extra=extra) as store:
        holder = verify(repo, tmp_path / "s1", store.url, token, fake)
        fake.wait_for_requests(1, timeout=RUN_SECONDS)  # the holder's conversation began
        wait_until(lambda: len(live_leases(store.url, token)) == 1)
        waiter = verify(repo, tmp_path / "s2", store.url, token, fake)
        wait_until(lambda: waiting_for_lease(tmp_path / "s2"))
        killed_at = time.monotonic()
        os.killpg(holder.pid, signal.SIGKILL)
        holder.communicate(timeout=RUN_SECONDS)
        code, run, err = finished(waiter)
        took = time.monotonic() - killed_at
    assert holder.returncode == -signal.SIGKILL
    assert code == 0, (run, err)
    request = only_request(run)
    assert request["status"] == "GREEN" and request["source"] is None  # reviewed here
    assert run["executionsStarted"] == 1
    assert len(fake.posts("/responses")) == 2
    assert took < LEASE_SECONDS + 10  # lapsed within the lease term (plus polling)
    assert not psutil.pid_exists(holder.pid) or psutil.Process(holder.pid).status() == "zombie"


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + RUN_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def live_leases(url: str, token: str) -> list[Any]:
    with client(url) as http:
        leases = http.get("/v1/leases", headers=bearer(token)).json()["leases"]
    assert isinstance(leases, list)
    return leases


def waiting_for_lease(state: Path) -> bool:
    """Whether the Run in ``state`` saved its request as waiting for another's lease."""
    database = state / "state.sqlite"
    if not database.exists():
        return False
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as raw:
            rows = raw.execute("SELECT data FROM requests").fetchall()
    except sqlite3.Error:
        return False
    reasons = [json.loads(data).get("blockedReason") or "" for (data,) in rows]
    return any(reason.startswith("Waiting for ci's review") for reason in reasons)


@pytest.mark.process  # a real store server process
def test_remote_status_shows_the_leases_held(tmp_path: Path) -> None:
    token = add_token(tmp_path / "store", "ci", "read,publish")
    key = "ab" * 32
    with server_process(tmp_path / "store") as store:
        with client(store.url) as http:
            took = http.post(f"/v1/leases/{key}", json={"holder": "m1"}, headers=bearer(token))
            assert took.json()["granted"] is True
        env = {"ARTIFACTIZE_REMOTE": store.url, "ARTIFACTIZE_REMOTE_TOKEN": token}
        base = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
        command = ["--state-dir", str(tmp_path / "s1"), "--json", "remote", "status"]
        done = run_cli(*command, env={**base, **env}, cwd=REPO_ROOT)
        text = run_cli(*[c for c in command if c != "--json"], env={**base, **env}, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    (lease,) = json.loads(done.stdout)["leases"]
    assert (lease["key"], lease["principal"], lease["holder"]) == (key, "ci", "m1")
    assert "Leases held: 1" in text.stdout
    assert f"{key} by ci until {lease['expiresAt']}" in text.stdout
    assert token not in done.stdout + text.stdout
