"""Builders shared by the remote record tests: a realistic saved execution and its key.

Keys are computed here by hashing the documented v2 bytes by hand (not with the domain's
``reuse_key``), so a test cannot pass because both sides share a bug.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

DEF_HASH = "b" * 64
PIN = "c" * 64
REPO = "/home/alice/secret-repo"
FINGERPRINTS = {"doc": "artifactsum:" + "a" * 64, "lib": "v1.2"}
KINDS = {"doc": "folder", "lib": "file"}
STORE = "https://store.example/team/"


def key_of(def_hash: str, fingerprints: Mapping[str, str], kinds: Mapping[str, str]) -> str:
    text = f"artifactize-key-v2\neval {def_hash}\n" + "".join(
        f"artifact {name} {kinds[name]} {fingerprints[name]}\n" for name in sorted(fingerprints)
    )
    return hashlib.sha256(text.encode()).hexdigest()


def execution(**changes: Any) -> Any:
    data: dict[str, Any] = {
        "id": "execution-run-Hq2b9X-1",
        "requestId": "run-Hq2b9X-1",
        "runId": "run-Hq2b9X",
        "evalId": "doc/review",
        "key": key_of(DEF_HASH, FINGERPRINTS, KINDS),
        "evalDefHash": DEF_HASH,
        "fingerprints": dict(FINGERPRINTS),
        "profile": {"kind": "agent", "backend": "openai", "model": "m1", "timeoutMs": 240000},
        "status": "GREEN",
        "result": {"verdict": "GREEN", "notes": "fine"},
        "error": None,
        "errorCode": None,
        "provenance": {
            "repoPath": REPO,
            "runId": "run-Hq2b9X",
            "requestId": "run-Hq2b9X-1",
            "evalId": "doc/review",
            "evalDefHash": DEF_HASH,
            "completedAt": "2026-01-02T03:04:05.123456789Z",
            "executionPaths": {"lint_doc": {"bin/lint": PIN}},
        },
        "usage": [
            {"turn": 1, "attempt": 1, "usage": {}, "error": "503 upstream overloaded"},
            {"turn": 1, "attempt": 2, "usage": {"inputTokens": 5, "outputTokens": 2}},
        ],
        "toolCalls": [
            {
                "order": 1,
                "name": "read_doc",
                "arguments": {"path": "a"},
                "result": "SECRET-OUT",
                "isError": False,
                "error": None,
            }
        ],
        "producer": {"name": "alice@host", "version": "0.1.0"},
        "startedAt": "2026-01-02T03:04:00.000000000Z",
        "completedAt": "2026-01-02T03:04:05.123456789Z",
    }
    data.update(changes)
    return data
