"""The monitor without a terminal: its views as data, and each screen rendered on a canvas of
a fixed size (urwid's headless rendering) while keys are pressed through the app.

The state is the in-memory store (tests/fakes/state.py) behind the real ``MonitorSource``;
the hand-over to ``review`` is a recorded child instead of a process.
"""

from __future__ import annotations

import cProfile
import dataclasses
import pstats
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import pytest
import urwid

from artifactize.entrypoints.monitor_tui.app import (
    IDLE_PER_READ,
    MONITOR_PALETTE,
    PAGE_ROWS,
    REFRESH_SECONDS,
    MonitorApp,
    refresh_delay,
)
from artifactize.entrypoints.monitor_tui.screens import LIST_HINTS, NOT_WAITING, RUN_HINTS
from artifactize.entrypoints.monitor_tui.source import KEPT_RUNS, MonitorSource
from artifactize.entrypoints.monitor_tui.views import (
    NO_RUNS,
    RunRow,
    TreeNode,
    build_tree,
    counts_text,
    eval_detail,
    run_header,
    run_table,
    visible,
)
from artifactize.entrypoints.review_tui.palette import SELECTED
from artifactize.entrypoints.text_lists import NAMED_AT_MOST
from artifactize.kernel.document_codec import (
    request_from_json,
    request_json,
    run_from_json,
    run_json,
)
from artifactize.ports.ids import EvalId, RequestId, RunId
from artifactize.ports.state import HumanClaim, RequestRecord, RunHead, RunRecord, StateStore
from artifactize.ports.statuses import RequestStatus, RunStatus
from tests.fakes.state import MemoryStateStore

NOW = datetime(2026, 12, 3, 12, 0, 0, tzinfo=UTC)
REPO = "/repo/handbook"
SIZE = (120, 40)


def stamp(seconds_ago: int) -> str:
    moment = datetime.fromtimestamp(NOW.timestamp() - seconds_ago, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000000000Z")


def definitions() -> dict[str, Any]:
    """docs (owns docs/api, mounts calc, references style) with a Human and an Agent eval;
    calc with a runtime eval; api (a child of docs) with an Agent eval."""

    def artifact(name: str, path: str, **relations: Any) -> dict[str, Any]:
        return {
            "name": name,
            "kind": "folder",
            "path": path,
            "children": relations.get("children", {}),
            "mounts": relations.get("mounts", {}),
            "tags": relations.get("tags", []),
            "declaration": {"references": relations.get("references", [])},
        }

    def evaluation(artifact_name: str, eval_id: str, kind: str) -> dict[str, Any]:
        return {
            "qualifiedId": f"{artifact_name}/{eval_id}",
            "artifact": artifact_name,
            "id": eval_id,
            "profile": {"kind": kind},
        }

    return {
        "artifacts": {
            "docs": artifact(
                "docs",
                "docs",
                children={"api": "api"},
                mounts={"impl": "calc"},
                references=[{"name": "style"}],
                tags=["type:docs"],
            ),
            "api": artifact("api", "docs/api"),
            "calc": artifact("calc", "code"),
        },
        "evals": {
            "docs/signoff": evaluation("docs", "signoff", "human"),
            "docs/accuracy": evaluation("docs", "accuracy", "agent"),
            "calc/tests": evaluation("calc", "tests", "runtime"),
            "api/review": evaluation("api", "review", "agent"),
        },
    }


def request(run_id: str, ordinal: int, eval_id: str, status: str, **extra: Any) -> RequestRecord:
    profile = {"kind": extra.pop("kind", "runtime")}
    data = {
        "id": f"{run_id}-{ordinal}",
        "runId": run_id,
        "evalId": eval_id,
        "status": status,
        "profile": profile,
        "requestedProfile": profile,
        "executionId": f"exec-{run_id}-{ordinal}",
        **extra,
    }
    return RequestRecord(
        data["id"],
        RunId(run_id),
        EvalId(eval_id),
        ordinal,
        data["executionId"],
        RequestStatus(status),
        request_from_json(data),
    )


def add_run(
    store: MemoryStateStore,
    run_id: str,
    status: str,
    requests: Sequence[RequestRecord],
    *,
    age: int = 60,
    repo: str = REPO,
    summary: dict[str, Any] | None = None,
) -> None:
    data = {
        "id": run_id,
        "repoPath": repo,
        "status": status,
        "createdAt": stamp(age),
        "completedAt": None if status == "RUNNING" else stamp(age - 5),
        "jobs": 4,
        "maxExecutions": None,
        "executionsStarted": len(requests),
        "definitions": definitions(),
        "validation": {"status": "NOT SATISFIED", "unmetObligations": ["docs"]},
        "summary": summary or {},
    }
    store.create_run(
        RunRecord(RunId(run_id), repo, RunStatus(status), run_from_json(data)), requests
    )


def the_run(run_id: str = "run-AAAAAA") -> list[RequestRecord]:
    return [
        request(run_id, 1, "calc/tests", "GREEN", result={"verdict": "GREEN", "exitCode": 0}),
        request(run_id, 2, "docs/signoff", "WAITING_HUMAN", kind="human"),
        request(
            run_id,
            3,
            "docs/accuracy",
            "ERROR",
            kind="agent",
            errorCode="TIMEOUT",
            error="The review ran out of time.",
        ),
        request(run_id, 4, "api/review", "RUNNING", kind="agent"),
    ]


class Store:
    """The fake behind a switch: ``broken`` makes every open fail like a locked file."""

    def __init__(self) -> None:
        self.memory = MemoryStateStore()
        self.broken = False
        self.opens = 0

    def open(self) -> StateStore | None:
        self.opens += 1
        if self.broken:
            raise RuntimeError("database is locked")
        return self.memory


class Child:
    def __init__(self, code: int = 0, effect: Any = None) -> None:
        self.calls: list[list[str]] = []
        self.code = code
        self.effect = effect

    def __call__(self, argv: Sequence[str]) -> int:
        self.calls.append(list(argv))
        if self.effect is not None:
            self.effect()
        return self.code


def make_app(store: Store, repo: str | None = REPO, child: Child | None = None) -> MonitorApp:
    source = MonitorSource(store.open, repo)
    app = MonitorApp(
        source,
        lambda request_id: ["artifactize", "review", request_id],
        now=lambda: NOW,
        run_child=child or Child(),
    )
    app.refresh()
    return app


def screen_text(app: MonitorApp) -> str:
    canvas = app.widget.render(SIZE, focus=True)
    return "\n".join(line.decode("utf-8").rstrip() for line in canvas.text)


def press(app: MonitorApp, *keys: str) -> None:
    for key in keys:
        app.on_key(key)


# --- views ----------------------------------------------------------------------------------


def test_counts_are_in_lifecycle_order_and_a_dash_when_empty() -> None:
    assert counts_text({"GREEN": 2, "RUNNING": 1, "WAITING_HUMAN": 1}) == (
        "RUNNING 1 · WAITING_HUMAN 1 · GREEN 2"
    )
    assert counts_text({}) == "–"


def test_the_run_table_aligns_columns_and_shows_ages() -> None:
    rows = [
        RunRow("run-AAAAAA", REPO, "RUNNING", {"RUNNING": 1}, stamp(42)),
        RunRow("run-BBBBBB", "/elsewhere", "GREEN", {"GREEN": 12}, stamp(7200)),
    ]
    header, first, second = run_table(rows, NOW)
    assert header.split() == ["RUN", "STATUS", "REQUESTS", "AGE", "REPOSITORY"]
    assert first.split() == ["run-AAAAAA", "▶", "RUNNING", "RUNNING", "1", "42s", REPO]
    assert second.split()[-2:] == ["2h", "/elsewhere"]
    assert header.index("AGE") == first.index("42s") == second.index("2h")


def test_the_header_counts_requests_as_they_stand_not_the_saved_summary() -> None:
    store = MemoryStateStore()
    stale = {"counts": {"WAITING_HUMAN": 1}}
    add_run(store, "run-AAAAAA", "RUNNING", the_run(), summary=stale)
    run = run_json(store.runs["run-AAAAAA"].data)
    requests = [r.data for r in store.list_requests(RunId("run-AAAAAA"))]
    lines = run_header(run, requests, NOW)
    assert lines[1] == "Requests: RUNNING 1 · WAITING_HUMAN 1 · GREEN 1 · ERROR 1"
    assert "Validation: NOT SATISFIED (unmet: docs)" in lines
    assert "Budgets: jobs 4 · max executions – · executions started 4" in lines
    assert "Duration: 60.0s so far" in lines
    assert "Running: api/review" in lines
    assert "Waiting for a person: docs/signoff [run-AAAAAA-2] (o: review)" in lines
    assert "Error: docs/accuracy: TIMEOUT The review ran out of time." in lines


def test_the_tree_has_families_inputs_and_eval_glyphs() -> None:
    store = MemoryStateStore()
    add_run(store, "run-AAAAAA", "RUNNING", the_run())
    forest = build_tree(run_json(store.runs["run-AAAAAA"].data), [r.data for r in the_run()])
    assert [node.key for node in forest] == ["calc", "docs"]  # api is docs' child
    docs = forest[1]
    docs.expanded = True
    labels = [node.label for node in visible(forest)]
    assert labels[0] == "calc  code"
    assert labels[1] == "docs  docs"
    assert "! accuracy  ERROR  ⇐ api, calc, style" in labels
    assert "◷ signoff  WAITING_HUMAN  ⇐ api, calc, style" in labels
    assert "⇐ child api: api" in labels
    assert "⇐ mount impl: calc" in labels
    assert "⇐ reference: style" in labels
    assert labels[-1] == "api  docs/api"  # the child family, collapsed
    assert visible(forest)[-1].expandable and not visible(forest)[-1].expanded


def test_a_cycle_is_marked_and_not_expanded_again() -> None:
    run = {"definitions": definitions()}
    run["definitions"]["artifacts"]["api"]["children"] = {"back": "docs"}
    run["definitions"]["artifacts"]["docs"]["children"] = {"api": "api"}
    forest = build_tree(run, [])
    for node in forest:
        node.expanded = True
        for child in node.children:
            child.expanded = True
    labels = [node.label for node in visible(forest)]
    assert labels[:2] == ["calc  code", "  tests  not requested"]
    assert "api  docs/api" in labels  # every Artifact shows, though each owns the other
    assert "↻ api (cycle)" in labels


def test_eval_detail_shows_source_fingerprints_claim_calls_and_profiles() -> None:
    data = request(
        "run-AAAAAA",
        1,
        "docs/accuracy",
        "GREEN",
        kind="agent",
        source={"kind": "cache", "runId": "run-OLDOLD", "requestId": "run-OLDOLD-1"},
        fingerprints={"docs": "artifactsum:abc"},
        key="k" * 64,
        toolCalls=[{"name": "read_docs", "isError": False}, {"name": "grep_docs", "isError": True}],
        requestedProfile={"kind": "agent", "model": "gpt-5.1"},
        usage=[{"usage": {"input_tokens": 10}}],
    ).data
    lines = eval_detail(request_json(data), "alice since 2026-12-03T11:00:00Z")
    assert "Claim: alice since 2026-12-03T11:00:00Z" in lines
    assert "Reused: cache run-OLDOLD run-OLDOLD-1" in lines
    assert "  docs: artifactsum:abc" in lines
    assert "Tool calls: 2" in lines and "  grep_docs (error)" in lines
    assert "Requested profile:" in lines and '    "model": "gpt-5.1"' in lines


# --- screens ----------------------------------------------------------------------------------


def test_the_run_list_shows_newest_first_with_hints() -> None:
    store = Store()
    add_run(
        store.memory,
        "run-OLDOLD",
        "GREEN",
        [request("run-OLDOLD", 1, "calc/tests", "GREEN")],
        age=600,
    )
    add_run(store.memory, "run-NEWNEW", "RUNNING", the_run("run-NEWNEW"), age=30)
    text = screen_text(make_app(store))
    assert "artifactize monitor · Runs" in text
    assert text.index("run-NEWNEW") < text.index("run-OLDOLD")
    assert "▶ run-NEWNEW" in text
    assert "30s" in text and "10m" in text
    assert LIST_HINTS in text


def test_an_empty_state_says_how_to_start_and_other_repositories_need_all() -> None:
    store = Store()
    add_run(store.memory, "run-OTHERS", "GREEN", [], repo="/elsewhere")
    assert NO_RUNS in screen_text(make_app(store))
    assert "run-OTHERS" in screen_text(make_app(store, repo=None))


def test_moving_past_the_end_pages_in_older_runs() -> None:
    store = Store()
    for index in range(PAGE_ROWS + 5):
        add_run(store.memory, f"run-{index:06d}", "GREEN", [], age=10_000 - index)
    app = make_app(store)
    assert len(app.list_screen.rows) == PAGE_ROWS
    press(app, *["j"] * (PAGE_ROWS - 1))
    assert app.list_screen.focus == PAGE_ROWS - 1
    press(app, "j")  # past the end: the next page is read and the selection moves on
    assert len(app.list_screen.rows) == PAGE_ROWS + 5
    assert app.list_screen.focus == PAGE_ROWS
    press(app, *["j"] * 10)  # the last Run: stays there
    assert app.list_screen.focus == PAGE_ROWS + 4


def test_opening_a_run_expanding_and_scrolling_the_detail() -> None:
    store = Store()
    add_run(store.memory, "run-AAAAAA", "RUNNING", the_run())
    app = make_app(store)
    press(app, "enter")
    text = screen_text(app)
    assert "artifactize monitor · run-AAAAAA" in text
    assert "Requests: RUNNING 1 · WAITING_HUMAN 1 · GREEN 1 · ERROR 1" in text
    assert "▶ ▾ calc  code" in text  # the first family opens by itself
    assert "✓ tests  GREEN" in text
    assert RUN_HINTS in text
    press(app, "j", "j")  # onto docs, collapsed
    assert "▶ ▸ docs  docs" in screen_text(app)
    press(app, "l")
    assert "◷ signoff  WAITING_HUMAN" in screen_text(app)
    press(app, "h")
    assert app.run_screen is not None
    assert not any("signoff" in node.label for node in app.run_screen.rows)
    press(app, "enter", "j")  # expand with Enter too, then onto the first eval
    text = screen_text(app)
    assert "docs/accuracy  [run-AAAAAA-3]" in text
    assert "Error: TIMEOUT The review ran out of time." in text
    press(app, "page down")
    assert "docs/accuracy  [run-AAAAAA-3]" not in screen_text(app)
    press(app, "page up")
    assert "docs/accuracy  [run-AAAAAA-3]" in screen_text(app)
    press(app, "esc")
    assert "artifactize monitor · Runs" in screen_text(app)


def test_a_refresh_follows_the_state_and_keeps_what_is_open() -> None:
    store = Store()
    add_run(store.memory, "run-AAAAAA", "RUNNING", the_run())
    app = make_app(store)
    press(app, "enter", "j", "j", "l", "j", "j")  # docs open, on signoff
    assert "docs/signoff  [run-AAAAAA-2]" in screen_text(app)
    settled = request("run-AAAAAA", 2, "docs/signoff", "GREEN", kind="human")
    store.memory.update_request(settled)
    app.refresh()
    text = screen_text(app)
    assert "✓ signoff  GREEN" in text
    assert "docs/signoff  [run-AAAAAA-2]" in text  # the same node stays selected
    assert "WAITING_HUMAN" not in text.split("Artifacts")[0]


def test_a_failed_read_keeps_the_last_data_and_says_why() -> None:
    store = Store()
    add_run(store.memory, "run-AAAAAA", "GREEN", [])
    app = make_app(store)
    store.broken = True
    app.source._store = None  # as after a failure: the next read opens the state again
    app.refresh()
    text = screen_text(app)
    assert "run-AAAAAA" in text
    assert "read failed at" in text and "database is locked" in text
    store.broken = False
    app.refresh()
    assert "read failed" not in screen_text(app)


def test_o_hands_a_waiting_human_eval_to_review_and_refreshes() -> None:
    store = Store()
    add_run(store.memory, "run-AAAAAA", "RUNNING", the_run())
    store.memory.claims["run-AAAAAA-2"] = HumanClaim(RequestId("run-AAAAAA-2"), "alice", stamp(10))

    def submit() -> None:
        store.memory.update_request(request("run-AAAAAA", 2, "docs/signoff", "GREEN", kind="human"))

    child = Child(effect=submit)
    app = make_app(store, child=child)
    press(app, "enter", "j", "j", "l", "j", "j")
    assert "Claim: alice since" in screen_text(app)
    press(app, "o")
    assert child.calls == [["artifactize", "review", "run-AAAAAA-2"]]
    assert "✓ signoff  GREEN" in screen_text(app)


def test_o_elsewhere_explains_and_a_failed_review_keeps_its_line_until_the_next_key() -> None:
    store = Store()
    add_run(store.memory, "run-AAAAAA", "RUNNING", the_run())
    child = Child(code=2)
    app = make_app(store, child=child)
    press(app, "enter", "j", "o")  # calc/tests is GREEN
    assert NOT_WAITING.format(status="GREEN") in screen_text(app)
    assert child.calls == []
    press(app, "j", "l", "j", "j", "o")
    assert "review of run-AAAAAA-2 ended with exit code 2" in screen_text(app)
    app.refresh()  # a refresh does not wipe it
    assert "review of run-AAAAAA-2 ended with exit code 2" in screen_text(app)
    press(app, "k")
    assert "ended with exit code" not in screen_text(app)


def test_q_quits_from_either_screen() -> None:
    store = Store()
    add_run(store.memory, "run-AAAAAA", "GREEN", [])
    app = make_app(store)
    with pytest.raises(urwid.ExitMainLoop):
        press(app, "q")
    press(app, "enter")
    with pytest.raises(urwid.ExitMainLoop):
        press(app, "q")


def test_monochrome_keeps_the_selection_visible() -> None:
    mono = {entry[0]: entry[3] for entry in MONITOR_PALETTE}
    assert mono[SELECTED] == "standout"
    store = Store()
    add_run(store.memory, "run-AAAAAA", "GREEN", [])
    assert "▶ run-AAAAAA" in screen_text(make_app(store))  # a mark, not only a colour


# --- at scale: what a refresh and a key cost ------------------------------------------------


class CountingStore:
    """The fake, with its Run and request reads counted."""

    def __init__(self, memory: MemoryStateStore) -> None:
        self.memory = memory
        self.reads: list[str] = []  # the Run screen's reads
        self.lists = 0  # the Run list's

    def get_run(self, run_id: RunId, *, definitions: bool = True) -> RunRecord | None:
        self.reads.append("run with definitions" if definitions else "run")
        return self.memory.get_run(run_id, definitions=definitions)

    def list_requests(self, run_id: RunId) -> list[RequestRecord]:
        self.reads.append("requests")
        return self.memory.list_requests(run_id)

    def list_run_heads(self, repo: str | None, limit: int, offset: int) -> list[RunHead]:
        self.lists += 1
        return self.memory.list_run_heads(repo, limit, offset)

    def list_runs(self, repo: str | None, limit: int, offset: int) -> list[RunRecord]:
        raise AssertionError("the Run list reads the Runs' heads, no document")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.memory, name)


def test_an_unchanged_state_is_not_read_again_and_definitions_are_read_once() -> None:
    """A 10,000-Artifact Run is 14 MB of definitions and 14,000 requests: the Run screen
    reads them when the state changed only, and the definitions with its first read."""
    store = Store()
    add_run(store.memory, "run-AAAAAA", "RUNNING", the_run())
    counting = CountingStore(store.memory)
    source = MonitorSource(lambda: cast(StateStore, counting), REPO)
    app = MonitorApp(source, lambda request_id: ["review", request_id], now=lambda: NOW)
    app.refresh()
    press(app, "enter")
    assert counting.reads == ["run with definitions", "requests"]
    assert app.run_screen is not None
    shown, forest = app.run_screen.document, app.run_screen.forest
    for _ in range(3):
        app.refresh()
    assert counting.reads == ["run with definitions", "requests"]
    # a RUNNING Run's header moves with the clock; its tree, of the same read, is not rebuilt
    assert app.run_screen.document is shown and app.run_screen.forest is forest
    store.memory.update_request(request("run-AAAAAA", 1, "calc/tests", "RED"))
    app.refresh()
    assert counting.reads[2:] == ["run", "requests"]  # the definitions are kept
    text = screen_text(app)
    assert "✗ tests  RED" in text and "▾ calc  code" in text  # the tree is still whole
    store.memory.claims["run-AAAAAA-2"] = HumanClaim(RequestId("run-AAAAAA-2"), "bob", stamp(5))
    app.refresh()
    assert counting.reads[4:] == ["run", "requests"]  # a claim is a change too
    assert app.run_screen.claims["run-AAAAAA-2"] == f"bob since {stamp(5)}"


def test_the_header_names_at_most_its_limit_then_counts_the_rest() -> None:
    def header(waiting: int, errors: int) -> list[str]:
        requests = [
            request("run-AAAAAA", i, f"m{i}/signoff", "WAITING_HUMAN", kind="human").data
            for i in range(waiting)
        ] + [
            request("run-AAAAAA", 1000 + i, f"m{i}/tests", "ERROR", errorCode="TIMEOUT").data
            for i in range(errors)
        ]
        run = run_json(run_from_json({"createdAt": stamp(60), "completedAt": stamp(1)}))
        return run_header(run, requests, NOW)

    at_limit = header(NAMED_AT_MOST, NAMED_AT_MOST)
    (waiting,) = [line for line in at_limit if line.startswith("Waiting for a person:")]
    assert "more" not in waiting and waiting.count("/signoff") == NAMED_AT_MOST
    assert sum(line.startswith("Error: ") for line in at_limit) == NAMED_AT_MOST
    assert not any(line.startswith("Errors:") for line in at_limit)
    past = header(NAMED_AT_MOST + 1, NAMED_AT_MOST + 1)
    (waiting,) = [line for line in past if line.startswith("Waiting for a person:")]
    assert waiting.endswith("(+1 more) (o: review)")
    assert waiting.count("/signoff") == NAMED_AT_MOST
    assert sum(line.startswith("Error: ") for line in past) == NAMED_AT_MOST
    assert "Errors: 1 more (select their evals below)" in past


def test_a_slow_refresh_stretches_the_wait_before_the_next() -> None:
    assert refresh_delay(0.0) == REFRESH_SECONDS
    assert refresh_delay(REFRESH_SECONDS / IDLE_PER_READ) == REFRESH_SECONDS
    assert refresh_delay(2.0) == 2.0 * IDLE_PER_READ


def wide_run(artifacts: int) -> tuple[dict[str, Any], list[Any]]:
    """A Run of ``artifacts`` Artifacts with an eval and a request each."""
    names = [f"m{i:05d}" for i in range(artifacts)]
    run = {
        "definitions": {
            "artifacts": {n: {"name": n, "path": f"mods/{n}"} for n in names},
            "evals": {f"{n}/tests": {"artifact": n, "id": "tests"} for n in names},
        }
    }
    requests = [request("run-A", i, f"{n}/tests", "GREEN").data for i, n in enumerate(names)]
    return run, requests


def calls_of(action: Any) -> int:
    profile = cProfile.Profile()
    profile.runcall(action)
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def test_the_tree_is_built_in_steps_linear_in_the_run() -> None:
    """Each Artifact's evals were found by a scan of every eval: 10,000 × 14,000 steps at
    10,000 Artifacts, minutes a refresh. Counted calls, not time: 10× the Run, about 10×
    the calls (12× allowed, as ``test_scale_counts``; the scan made 60× here)."""
    run_small, run_large = wide_run(100), wide_run(1000)
    small = calls_of(lambda: build_tree(*run_small))
    large = calls_of(lambda: build_tree(*run_large))
    assert 8 * small <= large <= 12 * small


def test_a_key_builds_only_the_rows_shown() -> None:
    """The tree's rows are widgets only when the list box shows them: a key in a Run of
    2,000 Artifacts builds a screenful, not 2,000."""
    store = Store()
    run, requests = wide_run(2000)
    data = {"createdAt": stamp(60), "completedAt": stamp(1), **run}
    store.memory.create_run(
        RunRecord(RunId("run-A"), REPO, RunStatus.GREEN, run_from_json(data)),
        [
            RequestRecord(r.id, RunId("run-A"), r.eval_id, i, None, RequestStatus.GREEN, r)
            for i, r in enumerate(requests)
        ],
    )
    app = make_app(store)
    press(app, "enter")
    screen_text(app)
    texts: list[str] = []
    real = TreeNode.text

    def counted(node: TreeNode) -> str:
        texts.append(node.label)
        return real(node)

    TreeNode.text = counted  # type: ignore[method-assign, assignment]
    try:
        press(app, "j", "j")
        screen_text(app)
    finally:
        TreeNode.text = real  # type: ignore[method-assign]
    assert 0 < len(texts) <= 3 * SIZE[1]
    text = screen_text(app)
    assert "▶ ▸ m00001  mods/m00001" in text  # m00000 opened by itself, then its eval row


@pytest.mark.parametrize("shown", [KEPT_RUNS, KEPT_RUNS + 1])
def test_a_few_runs_shown_by_turns_are_each_read_once(shown: int) -> None:
    """A web server's Run pages poll by turns through one source: up to ``KEPT_RUNS`` Runs
    keep their last read; one more, and the oldest is read again at its turn."""
    store = Store()
    run_ids = [f"run-{index:06d}" for index in range(shown)]
    for run_id in run_ids:
        add_run(store.memory, run_id, "GREEN", [])
    counting = CountingStore(store.memory)
    source = MonitorSource(lambda: cast(StateStore, counting), REPO)
    for _ in range(3):
        for run_id in run_ids:
            assert source.run(run_id) is not None
    whole = counting.reads.count("run with definitions")
    if shown <= KEPT_RUNS:
        assert counting.reads == ["run with definitions", "requests"] * shown
    else:  # each turn reads each Run again: the one read longest ago was dropped
        assert len(counting.reads) == 3 * 2 * shown and whole == 3 * shown


def test_a_reopened_state_is_read_again() -> None:
    """After a failed read the state is opened again: its change marks compare to none
    taken before."""
    store = Store()
    add_run(store.memory, "run-AAAAAA", "GREEN", [])
    counting = CountingStore(store.memory)
    source = MonitorSource(lambda: cast(StateStore, counting), REPO)
    first = source.run("run-AAAAAA")
    source._store = None  # as after a failure
    again = source.run("run-AAAAAA")
    assert again is not first and again == first
    assert counting.reads == ["run with definitions", "requests", "run", "requests"]


def test_the_run_list_is_read_again_only_when_the_state_changed() -> None:
    """The web's Runs page polls the list ten times a second (0.15 s a read at 10,000
    Artifacts): it is read again only after a change, or for more rows."""
    store = Store()
    add_run(store.memory, "run-AAAAAA", "RUNNING", the_run())
    counting = CountingStore(store.memory)
    source = MonitorSource(lambda: cast(StateStore, counting), REPO)
    first = source.runs(PAGE_ROWS)
    assert source.runs(PAGE_ROWS) is first and counting.lists == 1
    assert source.runs(2 * PAGE_ROWS) == first and counting.lists == 2
    store.memory.update_request(request("run-AAAAAA", 4, "api/review", "GREEN", kind="agent"))
    (row,) = source.runs(2 * PAGE_ROWS)
    assert counting.lists == 3 and row.counts["GREEN"] == 2


def test_a_running_run_whose_owner_died_reads_as_settled_without_a_write() -> None:
    """A killed ``verify`` commits nothing, and the monitor cannot write its settlement: its
    Run (list and screen) reads ERROR / OWNER_DIED, its queued and running requests ERROR,
    as the next writer will save them. The owner is read once per Run."""
    store = Store()
    add_run(store.memory, "run-AAAAAA", "RUNNING", the_run())
    saved = store.memory.runs[RunId("run-AAAAAA")]
    owner = {"pid": 7, "startTime": 1.5}
    store.memory.runs[RunId("run-AAAAAA")] = dataclasses.replace(
        saved, data=run_from_json({**run_json(saved.data), "owner": owner})
    )
    counting = CountingStore(store.memory)
    alive = {(7, 1.5): True}
    noticed = iter(["2026-03-01T10:00:00.000000000Z", "2026-03-01T10:00:09.000000000Z"])
    source = MonitorSource(
        lambda: cast(StateStore, counting),
        REPO,
        lambda pid, start: alive[(pid, start)],
        lambda: next(noticed),
    )
    (row,) = source.runs(10)
    document = source.run("run-AAAAAA")
    assert row.status == "RUNNING" and document is not None
    assert document.run["status"] == "RUNNING"
    alive[(7, 1.5)] = False  # killed: nothing written, the change mark stays
    (row,) = source.runs(10)
    assert (row.status, row.counts.get("RUNNING"), row.counts.get("ERROR")) == ("ERROR", None, 2)
    document = source.run("run-AAAAAA")
    assert document is not None
    assert (document.run["status"], document.run["errorCode"]) == ("ERROR", "OWNER_DIED")
    # its duration ends when the death was noticed, as a writer's settlement would end it
    assert document.run["completedAt"] == "2026-03-01T10:00:00.000000000Z"
    statuses = {str(r.eval_id): str(r.status) for r in document.requests}
    assert statuses == {
        "calc/tests": "GREEN",
        "docs/signoff": "WAITING_HUMAN",  # a person's wait outlives the Run's owner
        "docs/accuracy": "ERROR",
        "api/review": "ERROR",
    }
    assert counting.reads == [
        "run",  # its owner, once
        *("run with definitions", "requests"),  # the first read
        *("run", "requests", "run"),  # read again settled (the view checks the Run once)
    ]
    assert source.run("run-AAAAAA") is document and source.runs(10) == [row]  # then kept
    assert len(counting.reads) == 6


def test_without_a_process_table_a_running_run_reads_as_saved() -> None:
    store = Store()
    add_run(store.memory, "run-AAAAAA", "RUNNING", the_run())
    source = MonitorSource(store.open, REPO)
    (row,) = source.runs(10)
    assert row.status == "RUNNING"
