"""``verify`` with the team review store: the real server on 127.0.0.1, two state homes.

State S1 (token ``a``: read, publish, human) reviews ``doc/review`` with a fake provider
and publishes; state S2 (token ``ci``: read only) reuses that verdict from the store without
calling the provider or starting any tool session, and the execution-path pins of the tool
session travel with the remote record.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_review_store_server import add_token, serving
from tests.integration.test_verify_cli import GREEN, REPO_ROOT, Repo, no_leftovers  # noqa: F401
from tests.support.cli import run_cli as in_process
from tests.support.fake_provider import FakeProvider, openai_text, openai_tool_call

EVAL = "doc/review"


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def run_cli(repo: Repo, state: Path, env: dict[str, str], *args: str) -> tuple[int, Any, str]:
    """``artifactize --repo R --state-dir S --json ARGS`` with exactly ``env`` on top of ours,
    minus any provider test endpoint or key of the outer environment."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ARTIFACTIZE_", "OPENAI_"))}
    command = ["--repo", str(repo.path)]
    command += ["--state-dir", str(state), "--json", *args]
    done = in_process(*command, env={**base, **env}, cwd=REPO_ROOT)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else None, done.stderr


def declare_pinned_start_and_a_runtime_eval(repo: Repo) -> None:
    """Give the session's start command an execution path, so a pin exists to travel, and
    add a runtime eval (which needs no provider) to exercise verify's write-through."""
    (repo.path / "harness.cfg").write_text("config\n", encoding="utf-8")
    text = (repo.path / "index.artf").read_text(encoding="utf-8")
    text = text.replace("start = { ", 'start = { execution_paths = ["harness.cfg"], ', 1)
    text += (
        "[evals.lint]\n"
        'title = "The notes exist"\n'
        'profile = { kind = "runtime", command = "test", args = ["-s", "notes.txt"] }\n'
        'payload.instruction = "The notes file is not empty."\n'
    )
    (repo.path / "index.artf").write_text(text, encoding="utf-8")


def remote(url: str, token: str) -> dict[str, str]:
    return {"ARTIFACTIZE_REMOTE": url, "ARTIFACTIZE_REMOTE_TOKEN": token}


def test_verdicts_travel_through_the_store_with_their_pins(
    tmp_path: Path, fake: FakeProvider
) -> None:
    repo = Repo(tmp_path)
    declare_pinned_start_and_a_runtime_eval(repo)
    store_state = tmp_path / "store"
    token_a = add_token(store_state, "a", "read,publish,human")
    token_ci = add_token(store_state, "ci", "read")
    s1, s2 = tmp_path / "s1", tmp_path / "s2"
    with serving(store_state) as running:
        # S1: an Agent review against the fake provider (local only: a test endpoint rules
        # the store out), then an explicit push.
        fake.enqueue(openai_tool_call("call_1", "act_doc", {}), openai_text(GREEN))
        code, run, err = run_cli(
            repo, s1, {**fake.env(), "ARTIFACTIZE_REMOTE": "off"}, "verify", EVAL
        )
        assert code == 4, (run, err)  # `doc/lint` is not selected yet: `doc` is unmet
        (produced,) = run["requests"]
        pins = produced["provenance"]["executionPaths"]
        assert set(pins) == {"app_doc.start"}
        code, pushed, err = run_cli(repo, s1, remote(running.url, token_a), "remote", "push")
        assert (code, pushed["pushed"]) == (0, 1), (pushed, err)

        # S1 again: the runtime eval is published by verify itself (write-through).
        code, run, err = run_cli(repo, s1, remote(running.url, token_a), "verify", "doc/lint")
        assert code == 0, (run, err)

        # S2: read-only token, no provider at all: both verdicts come from the store.
        starts = len(repo.events("start"))
        code, run, err = run_cli(repo, s2, remote(running.url, token_ci), "verify", "doc")
        assert code == 0, (run, err)
        by_eval = {r["evalId"]: r for r in run["requests"]}
        agent, lint = by_eval[EVAL], by_eval["doc/lint"]
        assert agent["source"]["kind"] == lint["source"]["kind"] == "remote"
        assert agent["source"]["requestId"] == produced["id"]
        assert agent["provenance"]["executionPaths"] == pins  # pins travel with the record
        assert agent["origin"]["publisher"] == "a"
        assert len(repo.events("start")) == starts  # a reused result starts nothing

        code, listed, _ = run_cli(repo, s2, remote(running.url, token_ci), "cache", "list")
        assert all(row["executionId"].startswith("remote-") for row in listed)
        assert len(listed) == 2


def test_a_test_endpoint_rules_the_store_out(tmp_path: Path, fake: FakeProvider) -> None:
    repo = Repo(tmp_path)
    env = {**fake.env(), **remote("http://127.0.0.1:9/", "azt_x")}
    code, out, _ = run_cli(repo, tmp_path / "s1", env, "verify", EVAL)
    assert code == 2
    assert out["error"].startswith(
        "ARTIFACTIZE_OPENAI_BASE_URL is set, so verify will not use the remote review store; "
        "set ARTIFACTIZE_REMOTE=off."
    )
    assert "ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS=1" in out["error"]  # the other way out
    assert fake.posts() == [] and not (tmp_path / "s1" / "state.sqlite").exists()


def test_a_loopback_profile_base_url_rules_the_store_out(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    index = repo.path / "index.artf"
    index.write_text(
        index.read_text().replace(
            'backend = "openai", model = "m1"',
            'backend = "openai-chat", model = "m1", base_url = "http://localhost:11434/v1"',
        )
    )
    code, out, _ = run_cli(
        repo, tmp_path / "s1", remote("http://127.0.0.1:9/", "azt_x"), "verify", EVAL
    )
    assert code == 2
    assert out["error"].startswith(
        "The base_url of doc/review is a loopback endpoint, so verify will not use the remote "
        "review store; set ARTIFACTIZE_REMOTE=off."
    )
    assert not (tmp_path / "s1" / "state.sqlite").exists()


def test_allowing_loopback_models_lets_a_local_model_publish(
    tmp_path: Path, fake: FakeProvider
) -> None:
    repo = Repo(tmp_path)
    store_state = tmp_path / "store"
    token = add_token(store_state, "a", "read,publish")
    with serving(store_state) as running:
        fake.enqueue(openai_text(GREEN))
        env = {
            **fake.env(),
            **remote(running.url, token),
            "ARTIFACTIZE_REMOTE_ALLOW_LOOPBACK_MODELS": "1",
        }
        code, run, err = run_cli(repo, tmp_path / "s1", env, "verify", EVAL)
        assert code in (0, 4), (run, err)
        (request,) = run["requests"]
        assert request["status"] == "GREEN"
        assert request["agent"]["reportedModel"] == "m1-2025-11-13"
        # Another machine, no provider: the verdict comes from the store.
        code, again, err = run_cli(
            repo, tmp_path / "s2", remote(running.url, token), "verify", EVAL
        )
        (reused,) = again["requests"]
        assert reused["source"]["kind"] == "remote", (again, err)


def test_an_unreachable_store_fails_open(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    code, run, err = run_cli(
        repo, tmp_path / "s1", remote("http://127.0.0.1:9/", "azt_x"), "verify", EVAL
    )
    assert err.count(". Continuing without the remote review store.") == 1, err
    (request,) = run["requests"]  # the Run went on locally: here, without an API key
    assert (code, request["errorCode"]) == (2, "PREPARATION_FAILED")


def test_a_rejected_token_fails_closed_before_any_run(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    store_state = tmp_path / "store"
    add_token(store_state, "a", "read,publish")
    with serving(store_state) as running:
        code, out, _ = run_cli(
            repo, tmp_path / "s1", remote(running.url, "azt_wrong"), "verify", EVAL
        )
    assert code == 2
    assert "rejected the token" in out["error"]
    assert "azt_wrong" not in json.dumps(out)
    assert run_cli(repo, tmp_path / "s1", {}, "run", "list")[1] == []
