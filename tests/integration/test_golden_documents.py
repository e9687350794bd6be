"""The stored JSON and every ``--json`` output stay byte-compatible (issue 23, item 3).

Two proofs, both against documents recorded from the code as it was before the documents
got their own types (``tests/integration/fixtures/golden/``):

- **Outputs.** One scenario runs the real CLI in this process on a copy of the handbook
  example (runtime, Agent and Human evals; the Agent reviews answered by the fake model
  provider over loopback HTTP): ``verify``, ``run show``/``list``, ``request
  list``/``show``/``claim``/``submit``, ``session show``, ``status``, ``cache list``/``show``,
  then a second ``verify`` that reuses everything. Each ``--json`` output and every document the store
  saved (Runs, requests, executions, as the ``data`` column holds them) is compared byte for
  byte with its recording, after the values that change from one run to the next (IDs,
  times, durations, paths, process IDs) are replaced by stable placeholders
  (:func:`normalize`: the same value gets the same placeholder, so the links between
  documents are compared too). Key order, spacing and every other byte are compared as
  recorded.
- **Old state opens unchanged.** The SQLite state file the recording run left behind
  (``state.sqlite``) is copied and read by today's code: ``run show``, ``request show`` and
  ``cache list`` print exactly what the recording printed from it, unnormalized.

``ARTIFACTIZE_RECORD_GOLDEN=1`` rewrites the recordings instead of comparing (only ever from
code whose outputs are meant to be the reference); the test then fails, so a recording run
can never pass for a comparison. The recordings here come from commit 0785d86 (before the
status enums, IDs and document changes of issue 23), recorded like this::

    git archive 0785d86 | tar -x -C /tmp/base
    cp tests/integration/test_golden_documents.py /tmp/base/tests/integration/
    cd /tmp/base && ARTIFACTIZE_RECORD_GOLDEN=1 $WORKTREE/.venv/bin/python -m pytest -p no:xdist \
        tests/integration/test_golden_documents.py -k outputs   # fails: "recorded"
    cp -r /tmp/base/tests/integration/fixtures/golden tests/integration/fixtures/

Main then added ``fileManifest`` to request and execution documents (the web's "changed
since the last verdict"), on purpose: the thirteen ``*.json`` recordings that hold such a
document were recorded again, the same way, from main itself and from main merged into this
branch (byte-identical; every difference from 0785d86 is that key). ``state/``,
``raw-outputs.json`` and ``root.txt`` stay 0785d86's, so the old state still opens as before.
Main's adopt (issue 24) then added ``program`` (the resolved runtime program) to requests,
executions and ``status`` entries, on purpose: the eight recordings holding it were recorded
again the same way, from main (44fa488) and from main merged here (byte-identical).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import socket
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.fake_provider import FakeProvider, anthropic_text, for_model, openai_text

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "handbook"
GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"
RECORD = os.environ.get("ARTIFACTIZE_RECORD_GOLDEN") == "1"
STATE_FILE = "state.sqlite"

AGENT_GREEN = '{"verdict": "GREEN", "checked": 3}'
CALC_GREEN = '{"verdict": "GREEN"}'
CALC_MODEL = "claude-sonnet-4-5"
DOCS_MODEL = "gpt-5.1"
HUMAN_FIELDS = '{"approved": true}'
STORED_TABLES = ("runs", "requests", "executions")
# The outputs the recorded state file must still print, byte for byte.
CACHE_LISTS = ("cache-list.json", "final-cache-list.json")
SHOWN_EVAL = "docs/signoff"  # the cache entry ``cache show`` is recorded for
OPENED = ("final-run-show", "final-request-show", "final-cache-list")

ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
SECONDS = re.compile(r"\b\d+\.\d+s\b")  # a runtime eval's test runner prints its time
# Values that change from one run to the next, wherever they appear (a request ID embeds its
# Run's, an execution ID its request's): each distinct one gets its own numbered placeholder.
VOLATILE_VALUES = {
    "RUN": re.compile(r"\brun-[A-Za-z0-9]{6}\b"),
    "UUID": re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    "HEX32": re.compile(r"\b[0-9a-f]{32}\b"),
    "PORT": re.compile(r"(?<=127\.0\.0\.1:)\d+"),
}
# Keys whose values are measured or belong to this machine and release: one placeholder each.
MEASURED_KEYS = frozenset({"wallMs", "durationMs", "elapsedMs", "startTime", "pid", "version"})


@dataclass
class Normalizer:
    """Replaces run-to-run values with ``<KIND#n>``, the same value always the same ``n``,
    so the links between documents (a request's ``runId``, a source's ``requestId``) are
    compared too."""

    root: str
    seen: dict[str, dict[str, str]] = field(default_factory=dict)

    def placeholder(self, kind: str, value: str) -> str:
        known = self.seen.setdefault(kind, {})
        return known.setdefault(value, f"<{kind}#{len(known) + 1}>")

    def text(self, value: str) -> str:
        value = value.replace(self.root, "<ROOT>").replace(f"@{socket.gethostname()}", "@<HOST>")
        value = SECONDS.sub("<SECONDS>", ISO_TIME.sub("<TIME>", value))
        for kind, pattern in VOLATILE_VALUES.items():
            value = pattern.sub(functools.partial(self.replace, kind), value)
        return value

    def replace(self, kind: str, match: re.Match[str]) -> str:
        return self.placeholder(kind, match.group(0))

    def walk(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {self.text(k): self.walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(item, key) for item in value]
        if key in MEASURED_KEYS and value is not None and not isinstance(value, bool):
            return "<MEASURED>"
        if isinstance(value, str):
            return self.text(value)
        return value


def normalize(normalizer: Normalizer, text: str) -> str:
    """``text`` (one JSON output) with its run-to-run values replaced, key order and layout
    kept: re-dumped with the layout the CLI uses (``raw_layout_holds`` checks it is)."""
    return json.dumps(normalizer.walk(json.loads(text)), indent=2, ensure_ascii=False) + "\n"


@dataclass
class Scenario:
    root: Path
    capsys: pytest.CaptureFixture[str]
    outputs: dict[str, tuple[int, str]] = field(default_factory=dict)

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    @property
    def state(self) -> Path:
        return self.root / "state"

    def cli(self, label: str, *args: str, state: Path | None = None) -> tuple[int, str]:
        line = ["--repo", str(self.repo), "--state-dir", str(state or self.state), "--json"]
        done = run_cli(*line, *args)
        code, out = done.code, done.stdout
        assert out.strip(), (label, code, "no output")
        self.outputs[label] = (code, out)
        return code, out


def run_scenario(root: Path, capsys: pytest.CaptureFixture[str], fake: FakeProvider) -> Scenario:
    shutil.copytree(EXAMPLE, root / "repo")
    scenario = Scenario(root, capsys)
    fake.enqueue(
        *for_model(CALC_MODEL, anthropic_text(CALC_GREEN)),
        *for_model(DOCS_MODEL, openai_text(AGENT_GREEN)),
    )
    code, out = scenario.cli("verify", "verify", "--recursive", "docs")
    assert code == 4, out
    run_id = json.loads(out)["id"]
    scenario.cli("run-show", "run", "show", run_id)
    scenario.cli("run-list", "run", "list")
    _, listed = scenario.cli("request-list", "request", "list")
    waiting = next(r["id"] for r in json.loads(listed) if r["status"] == "WAITING_HUMAN")
    agent = next(r["id"] for r in json.loads(out)["requests"] if r["evalId"] == "docs/accuracy")
    scenario.cli("request-show-agent", "request", "show", agent)
    scenario.cli("session-show-agent", "session", "show", agent)
    scenario.cli("request-show-human", "request", "show", waiting)
    scenario.cli("request-claim", "request", "claim", waiting, "--reviewer", "alice")
    scenario.cli(
        "request-submit",
        "request",
        "submit",
        waiting,
        "--verdict",
        "GREEN",
        "--fields",
        HUMAN_FIELDS,
        "--reviewer",
        "alice",
    )
    scenario.cli("run-show-settled", "run", "show", run_id)
    scenario.cli("status", "status", "--all")
    _, cached = scenario.cli("cache-list", "cache", "list")
    key = next(entry["key"] for entry in json.loads(cached) if entry["evalId"] == SHOWN_EVAL)
    scenario.cli("cache-show", "cache", "show", key)
    code, again = scenario.cli("verify-reused", "verify", "--recursive", "docs")
    assert code == 0, again
    # What the state file left behind must still print (test_the_recorded_state_file_...).
    scenario.cli("final-run-show", "run", "show", run_id)
    scenario.cli("final-request-show", "request", "show", waiting)
    scenario.cli("final-cache-list", "cache", "list")
    assert fake.pending == 0 and fake.exhausted == 0
    return scenario


# The part of a row's document kept once for many rows (state revision 6): its table, the
# row's column naming it, and where it goes back (None: its members over the row's nulls).
SHARED_PARTS = {
    "runs": ("run_definitions", "definitions", "definitions"),
    "requests": ("request_bodies", "body", None),
}


def stored_documents(state_dir: Path) -> dict[str, list[Any]]:
    """Every saved document, in insertion order, as the ``data`` column holds it with the
    shared part its row names put back, compact as written."""
    (database,) = state_dir.rglob(STATE_FILE)
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)

    def whole(table: str, data: str, part: str | None) -> str:
        if part is None:
            return data
        member = SHARED_PARTS[table][2]
        own, shared = json.loads(data), json.loads(part)
        document = {**own, member: shared} if member else {**shared, **own}
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))

    try:
        found: dict[str, list[Any]] = {}
        for table in STORED_TABLES:
            shared = SHARED_PARTS.get(table)
            query = f"SELECT data, NULL FROM {table} ORDER BY rowid"
            if shared is not None:
                parts, column, _ = shared
                query = (
                    f"SELECT t.data, p.data FROM {table} t LEFT JOIN {parts} p"
                    f" ON t.{column} = p.digest ORDER BY t.rowid"
                )
            found[table] = [whole(table, *row) for row in connection.execute(query)]
        return found
    finally:
        connection.close()


def normalized_outputs(scenario: Scenario) -> dict[str, str]:
    normalizer = Normalizer(str(scenario.root))
    texts: dict[str, str] = {}
    for label, (code, out) in scenario.outputs.items():
        texts[f"{label}.json"] = f"exit {code}\n" + normalize(normalizer, out)
    for table, rows in stored_documents(scenario.state).items():
        texts[f"stored-{table}.json"] = "".join(normalize(normalizer, row) for row in rows)
    return texts


def raw_layout_holds(out: str) -> None:
    """The CLI's own layout is what :func:`normalize` re-dumps with: two-space indent."""
    assert out == json.dumps(json.loads(out), indent=2, ensure_ascii=False) + "\n", out[:200]


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def provider_env(monkeypatch: pytest.MonkeyPatch, fake: FakeProvider) -> None:
    for name, value in fake.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ARTIFACTIZE_REMOTE", "off")
    monkeypatch.setenv("LOGNAME", "golden")
    monkeypatch.setenv("USER", "golden")


def test_outputs_and_stored_documents_match_the_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake: FakeProvider, provider_env: None
) -> None:
    scenario = run_scenario(tmp_path, capsys, fake)
    for _, out in scenario.outputs.values():
        raw_layout_holds(out)
    texts = normalized_outputs(scenario)
    if RECORD:
        shutil.rmtree(GOLDEN, ignore_errors=True)
        GOLDEN.mkdir(parents=True)
        for name, text in texts.items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
        (GOLDEN / "state").mkdir()
        (database,) = scenario.state.rglob(STATE_FILE)
        with contextlib.closing(sqlite3.connect(database)) as connection:
            connection.execute("VACUUM INTO ?", (str(GOLDEN / "state" / STATE_FILE),))
        raw = {label: scenario.outputs[label][1] for label in (*OPENED, "verify")}
        (GOLDEN / "raw-outputs.json").write_text(json.dumps(raw, indent=2), encoding="utf-8")
        (GOLDEN / "root.txt").write_text(str(tmp_path), encoding="utf-8")
        pytest.fail("recorded the golden documents; run again without ARTIFACTIZE_RECORD_GOLDEN")
    recorded = {p.name: p.read_text(encoding="utf-8") for p in GOLDEN.glob("*.json")}
    recorded.pop("raw-outputs.json")
    assert sorted(texts) == sorted(recorded)
    for name, text in texts.items():
        assert in_listed_order(name, text) == in_listed_order(name, recorded[name]), name


def in_listed_order(name: str, text: str) -> str:
    """A cache listing in one order: two verdicts that completed in the same scenario step
    (the runtime and the Agent eval run side by side) are listed newest first, so their order
    is the machine's; every other document compares byte for byte."""
    if name not in CACHE_LISTS:
        return text
    status, _, document = text.partition("\n")
    entries = sorted(json.loads(document), key=lambda entry: (entry["evalId"], entry["key"]))
    return status + "\n" + json.dumps(entries, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("label", OPENED)
def test_the_recorded_state_file_opens_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str
) -> None:
    if RECORD:
        pytest.skip("recording")
    raw: dict[str, str] = json.loads((GOLDEN / "raw-outputs.json").read_text(encoding="utf-8"))
    old_root = (GOLDEN / "root.txt").read_text(encoding="utf-8")
    state = tmp_path / "state"
    shutil.copytree(GOLDEN / "state", state)
    recorded = raw[label]
    scenario = Scenario(Path(old_root), capsys)
    arguments = {
        "final-run-show": ["run", "show", json.loads(raw["verify"])["id"]],
        "final-request-show": ["request", "show", json.loads(raw["final-request-show"])["id"]],
        "final-cache-list": ["cache", "list"],
    }[label]
    _, out = scenario.cli(label, *arguments, state=state)
    assert out == recorded
