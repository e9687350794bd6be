"""The pure parts of ``verify`` in CI: policy limits, selections, reuse-only reasons, output
tails, JUnit and GitHub renderers, late Run settlement, the execution budget, reuse source
text, and the concurrent scheduler (driven through fakes, no process)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from artifactize.domain.reviews.run.current import current_run, settle_run
from artifactize.domain.reviews.run.fingerprint_jobs import compute_all
from artifactize.domain.reviews.run.policy import (
    FINGERPRINT_JOBS_MAX,
    JOBS_MAX,
    MAX_EXECUTIONS_MAX,
    ExecutionBudget,
    PolicyError,
    RunPolicy,
    parse_reuse_only,
)
from artifactize.domain.reviews.run.reuse_only import miss_reason, settle_misses
from artifactize.domain.reviews.run.selection import LIST_MAX, Selection, SelectionError, split_list
from artifactize.domain.reviews.run.sources import other_profile, source_text
from artifactize.entrypoints.cli.render import reports
from artifactize.kernel.document_codec import (
    request_changed,
    request_from_json,
    run_from_json,
    run_json,
)
from artifactize.ports.documents import Request
from artifactize.ports.ids import EvalId, ExecutionId, RunId
from artifactize.ports.state import RequestRecord, RunRecord
from artifactize.ports.statuses import PROFILE_KINDS, ProfileKind, RequestStatus, RunStatus
from tests.fakes.threads import THREADS
from tests.support.documents import opaque

# --- policy -----------------------------------------------------------------------------


def test_reuse_only_kinds() -> None:
    assert parse_reuse_only(None) == frozenset()
    assert parse_reuse_only(" agent , human ") == {ProfileKind.AGENT, ProfileKind.HUMAN}
    assert parse_reuse_only("runtime,agent,human,agent") == set(PROFILE_KINDS)
    with pytest.raises(PolicyError, match="unknown kind 'robot'"):
        parse_reuse_only("agent,robot")
    with pytest.raises(PolicyError, match="empty list"):
        parse_reuse_only(" , ")


@pytest.mark.parametrize(
    ("field", "low", "high"),
    [
        ("jobs", 1, JOBS_MAX),
        ("max_executions", 0, MAX_EXECUTIONS_MAX),
        ("fingerprint_jobs", 1, FINGERPRINT_JOBS_MAX),
    ],
)
def test_policy_limits_at_and_past(field: str, low: int, high: int) -> None:
    def policy(value: int) -> RunPolicy:
        options: dict[str, Any] = {field: value}
        return RunPolicy(**options)

    assert getattr(policy(low), field) == low
    assert getattr(policy(high), field) == high
    flag = "--" + field.replace("_", "-")
    for value in (low - 1, high + 1):
        with pytest.raises(PolicyError, match=f"{flag} must be between {low} and {high}"):
            policy(value)


def test_a_run_records_its_policy() -> None:
    policy = RunPolicy(frozenset({ProfileKind.HUMAN, ProfileKind.AGENT}), 2, 5, 3, "quick")
    recorded = run_json(policy.recorded_on(run_from_json({"id": "run-x", "jobs": 1})))
    assert json.dumps(recorded) == json.dumps(
        {
            "id": "run-x",
            "jobs": 2,
            "reuseOnly": ["agent", "human"],
            "maxExecutions": 5,
            "fingerprintJobs": 3,
            "profileVariant": "quick",
        }
    )


# --- selections -------------------------------------------------------------------------


def test_list_limit_at_and_past() -> None:
    assert len(split_list("--evals", ",".join(["a/b"] * LIST_MAX))) == LIST_MAX
    with pytest.raises(SelectionError, match=f"at most {LIST_MAX} IDs, got {LIST_MAX + 1}"):
        split_list("--evals", ",".join(["a/b"] * (LIST_MAX + 1)))


def test_exactly_one_selector() -> None:
    assert Selection().check(default_all=True) == Selection(select_all=True)
    with pytest.raises(SelectionError, match="Select evals"):
        Selection().check()
    with pytest.raises(SelectionError, match="exactly one selector"):
        Selection(evals="a/b", artifacts="a").check()
    with pytest.raises(SelectionError, match="qualified eval IDs"):
        Selection(evals="a").check()


# --- reuse-only -------------------------------------------------------------------------


def request(eval_id: str, kind: str, status: str = "QUEUED", **extra: Any) -> dict[str, Any]:
    return {
        "id": f"run-x-{eval_id}",
        "evalId": eval_id,
        "status": status,
        "requestedProfile": {"kind": kind},
        "profile": {"kind": kind},
        "blockedReason": None,
        "unkeyedReason": None,
        **extra,
    }


def typed(document: dict[str, Any]) -> Request:
    """``document`` as the state store hands it to the domain."""
    return request_from_json(document)


def test_reuse_only_settles_only_queued_requests_of_its_kinds() -> None:
    saved: list[str] = []
    queued_agent = typed(request("d/review", "agent"))
    reused_agent = typed(request("d/other", "agent", "GREEN"))
    runtime = typed(request("c/tests", "runtime"))
    human = typed(request("d/signoff", "human", unkeyedReason="`d` declares fingerprint = false"))
    settled = settle_misses(
        [queued_agent, reused_agent, runtime, human],
        frozenset({ProfileKind.AGENT, ProfileKind.HUMAN}),
        lambda r: saved.append(r.id),
    )
    stale_agent, stale_human = settled
    assert saved == [queued_agent.id, human.id] == [stale_agent.id, stale_human.id]
    assert stale_agent.status == RequestStatus.STALE and runtime.status == "QUEUED"
    assert stale_agent.blocked_reason == miss_reason("agent", "d/review")
    assert "with a model key" in str(stale_agent.blocked_reason)
    no_key = "it has no reuse key (`d` declares fingerprint = false)"
    assert no_key in str(stale_human.blocked_reason)
    # new documents: the ones passed in are never modified
    assert queued_agent.status == "QUEUED" and queued_agent.blocked_reason is None


# --- output tails -----------------------------------------------------------------------


def red_runtime(stdout: str, stderr: str = "") -> dict[str, Any]:
    return request(
        "c/t",
        "runtime",
        "RED",
        result={"verdict": "RED", "exitCode": 1},
        child={"stdout": stdout, "stderr": stderr},
    )


def numbered(count: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {n}\n" for n in range(1, count + 1))


def test_tail_lines_at_and_past_the_limit() -> None:
    at = reports.output_tail(red_runtime(numbered(reports.TAIL_MAX_LINES)))
    assert at[0] == f"stdout (last {reports.TAIL_MAX_LINES} lines):"
    assert at[1:] == [f"  line {n}" for n in range(1, reports.TAIL_MAX_LINES + 1)]
    past = reports.output_tail(red_runtime(numbered(reports.TAIL_MAX_LINES + 1)))
    assert past[1:] == [f"  line {n}" for n in range(2, reports.TAIL_MAX_LINES + 2)]


def test_tail_bytes_at_and_past_the_limit_stderr_first() -> None:
    at = "x" * reports.TAIL_MAX_BYTES
    lines = reports.output_tail(red_runtime("ignored", at))
    assert lines == ["stderr (last 1 lines):", "  " + at]  # the budget is spent on stderr
    lines = reports.output_tail(red_runtime("", "é" + at))
    assert lines[1] == "  " + reports.TAIL_TRUNCATED.format(bytes=2)
    assert lines[2] == "  " + at


def test_no_tail_for_green_agent_or_reused_requests() -> None:
    assert reports.output_tail({**red_runtime("x"), "status": "GREEN"}) == []
    assert reports.output_tail({**red_runtime("x"), "profile": {"kind": "agent"}}) == []
    assert reports.output_tail({**red_runtime("x"), "child": None}) == []


# --- JUnit and GitHub -------------------------------------------------------------------


def test_junit_escapes_and_counts() -> None:
    run = {"id": "run-x", "status": "RED", "createdAt": "2026-01-01T00:00:00.000000000Z"}
    red = red_runtime("<&>\n")
    red.update(createdAt="2026-01-01T00:00:00.000000000Z")
    red.update(completedAt="2026-01-01T00:00:01.500000000Z", startedAt=None)
    stale = request("d/r", "agent", "STALE", blockedReason="--reuse-only agent: none")
    text = reports.junit_xml(run, [red, stale])
    assert 'tests="2" failures="1" errors="0" skipped="1" time="1.500"' in text
    assert "&lt;&amp;&gt;" in text and 'message="STALE: --reuse-only agent: none"' in text


def test_github_annotation_escapes_its_properties_and_message() -> None:
    red = request("a/e", "agent", "RED", result={"verdict": "RED", "why": "50%\nbad"})
    (line,) = reports.github_annotations(None, [red])
    assert line == '::error title=a/e RED::RED: 50%25%0Abad%0A{"why": "50%25\\nbad"}'


# --- late settlement and summaries ------------------------------------------------------


def saved_run(status: str = "INCOMPLETE") -> RunRecord:
    data = {
        "id": "run-x",
        "status": status,
        "createdAt": "2026-01-01T00:00:00.000000000Z",
        "completedAt": "2026-01-01T00:00:01.000000000Z",
        "executionsStarted": 0,
        "validation": {
            "status": "NOT_SATISFIED",
            "scope": ["doc", "base"],
            "artifacts": {"doc": "WAIT", "base": "BASIS"},
            "evals": {"doc/signoff": "WAITING_HUMAN"},
            "unmetObligations": ["doc"],
        },
        "summary": {"counts": {"WAITING_HUMAN": 1}},
    }
    return RunRecord(RunId("run-x"), "/repo", RunStatus(status), run_from_json(data))


def record(status: str) -> RequestRecord:
    data = {
        **request("doc/signoff", "human", status),
        "runId": "run-x",
        "createdAt": "2026-01-01T00:00:00.000000000Z",
        "completedAt": "2026-01-01T00:00:02.000000000Z",
        "executionId": "execution-1",
        "source": None,
    }
    return RequestRecord(
        data["id"],
        RunId("run-x"),
        EvalId("doc/signoff"),
        1,
        ExecutionId("execution-1"),
        RequestStatus(status),
        request_from_json(data),
    )


def test_the_last_settled_request_settles_the_run() -> None:
    settled = settle_run(saved_run(), [record("GREEN")])
    assert settled is not None and settled.status == "GREEN"
    validation = settled.data.validation
    assert validation is not None
    assert validation["unmetObligations"] == []
    assert validation["artifacts"] == {"doc": "GREEN", "base": "BASIS"}
    assert settled.data.summary is not None and settled.data.summary["counts"] == {"GREEN": 1}
    red = settle_run(saved_run(), [record("RED")])
    assert red is not None and red.status == "RED"
    assert settle_run(saved_run(), [record("WAITING_HUMAN")]) is None
    assert settle_run(saved_run("RUNNING"), [record("GREEN")]) is None  # its verify settles it


def test_summaries_are_computed_when_read() -> None:
    shown = current_run(saved_run().data, [record("GREEN").data])
    assert shown["summary"]["counts"] == {"GREEN": 1}
    assert shown["requests"][0]["summary"]["status"] == "GREEN"


def test_budget_reserves_and_releases() -> None:
    budget = ExecutionBudget(1)
    assert budget.reserve() and not budget.reserve()
    budget.release()
    assert budget.reserve()
    unlimited = ExecutionBudget(None)
    assert all(unlimited.reserve() for _ in range(100))


def test_reuse_source_text_and_profiles_that_matter() -> None:
    reused = request("a/e", "agent", "GREEN", source={"runId": "run-k", "kind": "remote"})
    reused["producer"] = {"name": "bob@ci"}
    reused["origin"] = {"publisher": "team"}
    assert source_text(reused) == "reused: team store, run-k by bob@ci"
    assert source_text({**reused, "reviewer": "alice"}) == "reused: team store, run-k by alice"
    assert source_text({**reused, "source": None}) is None
    requested = {"kind": "agent", "backend": "openai", "model": "m1", "timeoutMs": 1}
    assert not other_profile({"kind": "agent", "backend": "openai", "model": "m1"}, requested)
    assert other_profile({"kind": "agent", "backend": "openai", "model": "m2"}, requested)
    runtime = {"kind": "runtime", "command": "a", "args": [], "timeoutMs": 1}
    assert not other_profile({"kind": "runtime"}, runtime)  # a store record keeps no command
    assert other_profile({"kind": "runtime", "command": "b", "args": []}, runtime)


def test_fingerprint_jobs_compute_each_once_and_raise_the_first_failure() -> None:
    names = [f"e{n}" for n in range(8)]
    assert compute_all(str.upper, names, 4, THREADS) == {n: n.upper() for n in names}

    def failing(name: str) -> str:
        raise ValueError(name)

    with pytest.raises(ValueError):  # as itself, not in an exception group
        compute_all(failing, names, 4, THREADS)


# --- the scheduler ----------------------------------------------------------------------


class _FakeGates:
    """Gates that make ``b/x`` wait for ``a/y``; counts the evidence ``update`` was fed."""

    def __init__(self, requests: list[Request]) -> None:
        from artifactize.domain.reviews.run.gates import READY_GATE, Gate, Readiness

        self.gates: dict[str, Gate] = {r.eval_id: READY_GATE for r in requests}
        self.gates["b/x"] = Gate(Readiness.WAIT, ())
        self.fed = 0

    def update(self, evidence: dict[str, Any]) -> set[str]:
        from artifactize.domain.reviews.run.gates import READY_GATE, Evidence

        self.fed += len(evidence)
        if evidence.get("a/y") is Evidence.GREEN and self.gates["b/x"] is not READY_GATE:
            self.gates["b/x"] = READY_GATE
            return {"b/x"}
        return set()


def _settled_green(requests: list[Request], item: Request) -> None:
    """What ``RunContext.save`` does with a settled request: a new one in its slot."""
    requests[requests.index(item)] = request_changed(item, status=RequestStatus.GREEN)


class _Inputs:
    def __init__(self, requests: list[Request]) -> None:
        self.requests = requests
        self.gates = _FakeGates(requests)

    def live(self) -> _FakeGates:
        return self.gates


def test_the_scheduler_runs_up_to_jobs_at_once() -> None:
    from artifactize.domain.reviews.run.scheduler import ScheduleActions, schedule

    requests = [typed(request(f"a/e{n}", "runtime")) for n in range(6)]
    busy = {"now": 0, "most": 0}

    async def settle(item: Request) -> None:
        busy["now"] += 1
        busy["most"] = max(busy["most"], busy["now"])
        await anyio.sleep(0.01)
        busy["now"] -= 1
        _settled_green(requests, item)

    actions = ScheduleActions(opaque(settle), lambda r, g: None, None)
    anyio.run(schedule, _Inputs(requests), actions, 4)  # type: ignore[arg-type]
    assert busy["most"] == 4 and all(r.status == "GREEN" for r in requests)


def _run_counting(leaves: int) -> tuple[_Inputs, list[str]]:
    """``b/x`` waits for ``a/y``, ``leaves`` other requests are READY; every park noted."""
    from artifactize.domain.reviews.run.scheduler import ScheduleActions, schedule

    requests = [typed(request("b/x", "runtime")), typed(request("a/y", "runtime"))]
    requests += [typed(request(f"c{n}/z", "runtime")) for n in range(leaves)]
    order: list[str] = []
    parked: list[str] = []

    async def settle(item: Request) -> None:
        await anyio.sleep(0)
        order.append(item.eval_id)
        _settled_green(requests, item)

    inputs = _Inputs(requests)
    actions = ScheduleActions(opaque(settle), lambda r, g: parked.append(r.eval_id), None)
    anyio.run(schedule, inputs, actions, 1)  # type: ignore[arg-type]
    assert all(r.status == "GREEN" for r in requests)
    assert order.index("b/x") > order.index("a/y")
    return inputs, parked


def test_a_waiting_request_is_parked_once_however_many_results_come_in() -> None:
    """Each pass looks only at the requests whose gate moved: ``b/x`` is parked once (its
    gate never changes until ``a/y`` settles), whatever the number of other results, and
    each result is fed to the gates once."""
    few, few_parked = _run_counting(leaves=5)
    many, many_parked = _run_counting(leaves=50)
    assert few_parked == many_parked == ["b/x"]
    assert few.gates.fed == 5 + 2
    assert many.gates.fed == 50 + 2
