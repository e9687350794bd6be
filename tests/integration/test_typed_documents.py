"""The typed documents of ``ports/documents.py``: mypy refuses a mistyped key (and the
NewType IDs of ``ports/ids.py``: a request ID where a Run ID belongs).

The shapes only pay off if a typo in a key is a type error, so this runs mypy (on a small
module written for the test) the way ``make lint`` does: in a child process, because mypy
raises the interpreter's recursion limit for good and other tests of the same worker
(``test_graph``) check that limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process  # mypy in a child process (see above)

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
from artifactize.ports.documents import ExecutionDocument, RequestDocument, StoreRecord
from artifactize.ports.state import RequestRecord, StateStore


def key_of(request: RequestDocument) -> str | None:
    return request["key"]


def run_of(execution: ExecutionDocument) -> str:
    return execution["runId"]


def verdict_of(record: StoreRecord) -> str:
    return record["verdict"]


def mistyped(request: RequestDocument) -> object:
    return request["evalID"]


def wrong_type(request: RequestDocument) -> None:
    request["ordinal"] = "first"


def run_of_request(store: StateStore, request: RequestRecord) -> object:
    return store.list_requests(request.id)
"""


@pytest.fixture
def mypy_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    monkeypatch.setenv("MYPYPATH", os.fspath(ROOT))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            os.fspath(tmp_path / "cache"),
            str(probe),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.stderr == ""
    return [line for line in done.stdout.splitlines() if ": error: " in line]


def test_mypy_refuses_a_mistyped_key_a_wrong_value_and_a_crossed_id_and_nothing_else(
    mypy_errors: list[str],
) -> None:
    lines = PROBE.splitlines()
    mistyped = lines.index('    return request["evalID"]') + 1
    wrong = lines.index('    request["ordinal"] = "first"') + 1
    crossed = lines.index("    return store.list_requests(request.id)") + 1
    assert len(mypy_errors) == 3, mypy_errors
    assert f"probe.py:{mistyped}: error:" in mypy_errors[0]
    assert 'has no key "evalID"' in mypy_errors[0]
    assert f"probe.py:{wrong}: error:" in mypy_errors[1]
    assert '"ordinal"' in mypy_errors[1]
    # IDs are types of their own: a request ID is not a Run ID
    assert f"probe.py:{crossed}: error:" in mypy_errors[2]
    assert '"RequestId"; expected "RunId"' in mypy_errors[2]
