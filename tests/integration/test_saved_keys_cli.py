"""``artifactize login`` / ``logout`` as a user runs them, on a machine without a usable OS
keyring (keyring's fail backend, as on a headless Linux): the key goes to the state home's
0600 file, ``doctor`` and ``models`` use it against the fake provider, the environment
variable still wins, and the key string appears in no output and no other file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_provider import FAKE_OPENAI_KEY, FakeProvider

REPO_ROOT = Path(__file__).resolve().parents[2]
NO_KEYRING = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
AGENT_EVAL = """name = "doc"
[evals.review]
title = "T"
profile = { kind = "agent", backend = "openai", model = "gpt-5.1" }
payload.instruction = "Look."
"""


pytestmark = pytest.mark.process


def run(tmp_path: Path, env: dict[str, str], *args: str, stdin: str = "") -> tuple[int, str, str]:
    """A real process each time: keyring picks its backend once per process (from
    ``PYTHON_KEYRING_BACKEND``), so the in-process harness cannot give each call its own."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ARTIFACTIZE_", "OPENAI_", "ANTHROPIC_", "PYTHON_KEYRING"))
        and "proxy" not in k.lower()
    }
    line = [sys.executable, "-m", "artifactize.entrypoints.cli.app", "--repo"]
    line += [str(tmp_path / "repo"), "--state-dir", str(tmp_path / "state"), *args]
    done = subprocess.run(
        line,
        input=stdin,
        capture_output=True,
        text=True,
        env={**base, **NO_KEYRING, **env},
        cwd=REPO_ROOT,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def test_login_file_store_doctor_models_env_wins_logout(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "index.artf").write_text(AGENT_EVAL, encoding="utf-8")
    outputs: list[str] = []
    with FakeProvider() as fake:
        env = {"ARTIFACTIZE_OPENAI_BASE_URL": fake.base_url}
        login = ("login", "openai", "--base-url", fake.base_url)
        code, out, err = run(tmp_path, env, "--json", *login, stdin=FAKE_OPENAI_KEY + "\n")
        outputs += [out, err]
        assert code == 0, err
        assert json.loads(out) == {
            "backend": "openai",
            "baseUrl": fake.base_url,
            "store": "file",
            "changed": True,
        }
        key_file = tmp_path / "state" / "api-keys.json"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

        code, out, err = run(tmp_path, env, "--json", "doctor")
        outputs += [out, err]
        (backend,) = json.loads(out)["backends"]
        assert (code, backend["keySource"], backend["key"]["set"]) == (0, "file", True)
        code, out, err = run(tmp_path, env, "doctor")
        outputs += [out, err]
        assert "saved in the state home's key file" in out

        code, out, err = run(tmp_path, env, "models", "openai")  # the saved key is sent
        outputs += [out, err]
        assert code == 0 and "gpt-fake" in out, err
        assert fake.requests[-1].header("authorization") == f"Bearer {FAKE_OPENAI_KEY}"

        wrong = {**env, "OPENAI_API_KEY": "sk-wrong-0123456789"}  # the variable wins
        code, out, err = run(tmp_path, wrong, "--json", "doctor")
        outputs += [out, err]
        assert json.loads(out)["backends"][0]["keySource"] == "env"
        code, out, err = run(tmp_path, wrong, "models", "openai")
        outputs += [out, err]
        assert fake.requests[-1].header("authorization") == "Bearer sk-wrong-0123456789"

        code, out, err = run(tmp_path, env, *("logout", "openai", "--base-url", fake.base_url))
        outputs += [out, err]
        assert code == 0 and "Removed the openai key" in out and "file store" in out
        code, out, err = run(tmp_path, env, "--json", "doctor")
        outputs += [out, err]
        assert json.loads(out)["backends"][0]["keySource"] is None
    assert all(FAKE_OPENAI_KEY not in text for text in outputs)
    leaked = [
        path
        for path in (tmp_path / "state").rglob("*")
        if path.is_file() and FAKE_OPENAI_KEY.encode() in path.read_bytes()
    ]
    assert leaked == []  # logged out: not even the key file holds it now


def test_a_key_saved_for_one_endpoint_is_not_sent_to_another(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    with FakeProvider() as fake:
        env = {"ARTIFACTIZE_OPENAI_BASE_URL": fake.base_url}
        code, _, err = run(tmp_path, {}, "login", "openai", stdin=FAKE_OPENAI_KEY)  # default
        assert code == 0, err
        code, _, err = run(tmp_path, env, "models", "openai")
        assert fake.requests, err
        assert all(r.header("authorization") is None for r in fake.requests)


@pytest.mark.parametrize("stdin", ["", "  \n", "sk bad key"])
def test_login_refuses_an_empty_or_unsendable_key(tmp_path: Path, stdin: str) -> None:
    code, out, _ = run(tmp_path, {}, "--json", "login", "openai", stdin=stdin)
    assert code == 2
    assert "API key on stdin" in json.loads(out)["error"]
    assert not (tmp_path / "state" / "api-keys.json").exists()


def test_login_refuses_an_unknown_backend_and_a_key_argument(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, {}, "login", "gemini", stdin="sk-1")
    assert code == 2 and "Unknown Agent backend: gemini" in err
    code, out, err = run(tmp_path, {}, "login", "openai", "sk-secret-1", stdin="sk-secret-1")
    assert code == 2 and "from stdin, never from an argument" in err
    assert "sk-secret-1" not in out + err
    assert not (tmp_path / "state" / "api-keys.json").exists()
