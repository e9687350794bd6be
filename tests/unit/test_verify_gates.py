"""``verify`` with dependency gates, through fakes: reference cases 1, 5, 6 and 11
(reviews-and-store.md §8) for a runtime eval ``app/check`` whose Artifact consumes ``doc``
(Human eval ``doc/signoff``), plus ``--recursive``, ``--ignore-gates``, the root policy and
the evidence of evals that are in the required scope but not selected.

The real CLI and processes: tests/integration/test_human_reviews.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from artifactize.domain.reviews.human.asking import HUMAN_POLL_SECONDS
from artifactize.domain.reviews.run.context import VerifyPorts
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.reviews.run.reuse import NOT_SELECTED
from artifactize.domain.reviews.run.selection import select_evals
from artifactize.domain.reviews.runtime.review import RuntimePorts
from artifactize.domain.use_cases.verify import DRAIN_FAILED_NOTICE, Verify
from artifactize.kernel.document_codec import (
    request_json,
    run_json,
)
from artifactize.ports.process import ProcessOutcome
from tests.fakes.filesystem import MemoryFilesystem, Node
from tests.fakes.processes import FakeClock, FakeProcessRunner, FakePrograms, FakeScratch
from tests.fakes.threads import THREADS
from tests.support.human_world import PRODUCER, HumanWorld, Table

pytestmark = pytest.mark.anyio
RUN_DIR = "/state/runs/run-abc"

DOC = b"""name = "doc"
[evals.signoff]
title = "Signed off"
profile = { kind = "human" }
payload.instruction = "Sign off {doc}."
"""
APP = b"""name = "app"
[evals.check]
title = "Check"
profile = { kind = "runtime", command = "true", args = ["{doc}"] }
payload.instruction = "Check the app against {doc}."
"""
IGNORE_POLICY = b"""name = "root"
[review_policy]
dependency_gates = "ignore"
"""


class World(HumanWorld):
    def __init__(self, *, policy: bytes | None = None, other: bool = False) -> None:
        tree: dict[str, Node] = {"doc": {"index.artf": DOC}, "app": {"index.artf": APP}}
        if other:  # a second, unrelated Human eval: `other/signoff`
            tree["other"] = {"index.artf": DOC.replace(b"doc", b"other")}
        if policy is not None:
            tree["index.artf"] = policy
        clock = FakeClock()
        super().__init__(
            MemoryFilesystem({"/repo": tree, "/state": {"runs": {"run-abc": {}}}}),
            FakeProcessRunner(ProcessOutcome(exit_code=0), clock=clock),
            clock,
        )

    def ports(self) -> VerifyPorts:
        runtime = RuntimePorts(
            processes=self.runner,
            scratch=FakeScratch(),
            filesystem=self.files,
            programs=FakePrograms(),
            clock=self.clock,
            environment={"PATH": "/usr/bin"},
            threads=THREADS,
        )
        return VerifyPorts(
            self.review_ports(),
            self.state,
            Table(),
            lambda run_id: RUN_DIR,
            PRODUCER,
            self.ids,
            sleep=self.sleep,
            runtime=runtime,
        )

    async def verify(self, selector: str | None = None, **options: Any) -> dict[str, Any]:
        """Run ``verify`` (``--all`` without a selector); the requests by eval ID."""
        workspace = self.workspace()
        service = Verify(self.ports(), workspace, VerifyOptions("/repo", "/state", **options))
        refs = select_evals(workspace, selector, selector is None)
        result = await service.run(refs, service.prepare(refs))
        self.run: Any = run_json(result.run)
        return {r.eval_id: request_json(r) for r in result.requests}

    async def sign(self, verdict: str, eval_id: str = "doc/signoff") -> None:
        """A person claims and submits the waiting request of ``eval_id``."""
        (waiting,) = [
            r
            for r in self.state.all_requests()
            if r.status == "WAITING_HUMAN" and r.eval_id == eval_id
        ]
        reviews = self.reviews()
        await reviews.claim(waiting.id, "alice")
        await reviews.submit(waiting.id, "alice", {"verdict": verdict})


async def test_case_1_the_consumer_waits_for_the_human_input() -> None:
    world = World()
    requests = await world.verify()
    check = requests["app/check"]
    assert requests["doc/signoff"]["status"] == "WAITING_HUMAN"
    assert check["status"] == "WAIT_DEPENDENCY" and check["executionId"] is None
    assert check["blockedReason"] == "Waiting for doc (doc/signoff WAITING_HUMAN)."
    assert world.runner.specs == [] and world.run["executionsStarted"] == 0
    assert world.run["status"] == "INCOMPLETE"
    assert world.run["validation"]["unmetObligations"] == ["app", "doc"]
    assert world.state.requests[check["id"]].status == "WAIT_DEPENDENCY"  # saved parked


async def test_case_5_a_green_signoff_opens_the_gate() -> None:
    world = World()
    await world.verify()
    await world.sign("GREEN")
    requests = await world.verify()
    assert requests["doc/signoff"]["source"]["kind"] == "cache"
    assert (requests["app/check"]["status"], requests["app/check"]["source"]) == ("GREEN", None)
    assert len(world.runner.specs) == 1
    assert world.run["status"] == "GREEN"
    assert world.run["validation"]["status"] == "SATISFIED"


async def test_case_6_a_red_signoff_blocks_the_consumer() -> None:
    world = World()
    await world.verify()
    await world.sign("RED")
    requests = await world.verify()
    check = requests["app/check"]
    assert check["status"] == "BLOCKED" and check["blockedBy"] == ["doc", "doc/signoff"]
    assert check["blockedReason"] == "Blocked by doc (doc/signoff RED)."
    assert world.runner.specs == [] and world.run["status"] == "RED"
    assert world.run["validation"]["artifacts"] == {"app": "BLOCKED", "doc": "RED"}


async def test_case_11_wait_runs_the_dependent_in_the_same_run() -> None:
    world = World()
    polls = 0

    async def sign_on_second_poll() -> None:
        nonlocal polls
        polls += 1
        if polls == 2:
            await world.sign("GREEN")

    world.during_sleep = sign_on_second_poll
    requests = await world.verify(wait=True)
    assert requests["doc/signoff"]["status"] == "GREEN"
    check = requests["app/check"]
    assert (check["status"], check["source"], check["blockedReason"]) == ("GREEN", None, None)
    assert check["runId"] == requests["doc/signoff"]["runId"]
    assert len(world.runner.specs) == 1 and world.sleeps == [HUMAN_POLL_SECONDS] * 2
    assert world.run["status"] == "GREEN" and world.run["waitTimedOut"] is False


async def test_wait_runs_a_dependent_as_soon_as_its_own_input_settles() -> None:
    world = World(other=True)
    polls = 0

    async def sign_doc_only() -> None:
        nonlocal polls
        polls += 1
        if polls == 1:
            await world.sign("GREEN")

    world.during_sleep = sign_doc_only
    requests = await world.verify(wait=True, wait_timeout_ms=1000)
    assert requests["app/check"]["status"] == "GREEN"  # while `other/signoff` still waits
    assert requests["other/signoff"]["status"] == "WAITING_HUMAN"
    assert world.run["waitTimedOut"] is True and world.run["status"] == "INCOMPLETE"


async def test_wait_times_out_with_the_dependent_still_waiting() -> None:
    world = World()
    requests = await world.verify(wait=True, wait_timeout_ms=300)
    assert requests["app/check"]["status"] == "WAIT_DEPENDENCY"
    assert world.run["waitTimedOut"] is True and world.runner.specs == []


async def test_a_scope_eval_that_is_not_selected_is_only_looked_up() -> None:
    world = World()
    requests = await world.verify("app/check")
    assert list(requests) == ["app/check"]
    assert requests["app/check"]["status"] == "WAIT_DEPENDENCY"
    assert world.run["evidence"]["doc/signoff"]["status"] == "UNREVIEWED"
    assert world.run["evidence"]["doc/signoff"]["reason"] == NOT_SELECTED
    assert world.state.all_requests() and not any(
        r.status == "WAITING_HUMAN" for r in world.state.all_requests()
    )  # nobody was asked

    await world.verify("doc/signoff")
    await world.sign("GREEN")
    requests = await world.verify("app/check")
    evidence = world.run["evidence"]["doc/signoff"]
    assert (evidence["status"], evidence["source"]["kind"]) == ("GREEN", "cache")
    assert requests["app/check"]["status"] == "GREEN" and world.run["status"] == "GREEN"


async def test_recursive_runs_every_eval_of_the_scope() -> None:
    world = World()
    requests = await world.verify("app/check", recursive=True)
    assert list(requests) == ["app/check", "doc/signoff"]  # selection, then configuration
    assert requests["doc/signoff"]["selected"] is False
    assert requests["doc/signoff"]["status"] == "WAITING_HUMAN"
    assert world.run["selection"] == ["app/check"] and world.run["recursive"] is True
    assert world.run["evidence"] == {}


@pytest.mark.parametrize("how", ["option", "policy"])
async def test_ignoring_gates_runs_early_but_keeps_the_obligations(how: str) -> None:
    world = World(policy=IGNORE_POLICY if how == "policy" else None)
    requests = await world.verify(ignore_gates=how == "option")
    assert requests["app/check"]["status"] == "GREEN" and len(world.runner.specs) == 1
    assert world.run["ignoreGates"] is True
    assert world.run["status"] == "INCOMPLETE"
    assert world.run["validation"]["artifacts"] == {"app": "INCOMPLETE", "doc": "WAIT"}


async def test_a_cached_consumer_attaches_before_its_gate_resolves() -> None:
    world = World()
    await world.verify(ignore_gates=True)  # app/check GREEN is recorded under its key
    requests = await world.verify()
    assert requests["app/check"]["source"]["kind"] == "cache"
    assert len(world.runner.specs) == 1  # not run again
    assert world.run["validation"]["evals"]["app/check"] == "WAIT_DEPENDENCY"
    assert world.run["status"] == "INCOMPLETE"


async def test_a_kept_private_folder_that_cannot_be_removed_at_the_end_is_reported() -> None:
    """The Run's runtime eval gives its emptied folders back for the next one; at the Run's
    end they are removed, and one that cannot be is said to the person (not swallowed)."""
    world = World(policy=IGNORE_POLICY)
    scratch = FakeScratch(remove_fails=True)
    notices: list[str] = []
    base = world.ports()
    assert base.runtime is not None
    ports = dataclasses.replace(
        base, runtime=dataclasses.replace(base.runtime, scratch=scratch), progress=notices.append
    )
    workspace = world.workspace()
    service = Verify(ports, workspace, VerifyOptions("/repo", "/state"))
    refs = select_evals(workspace, "app/check", False)
    result = await service.run(refs, service.prepare(refs))
    assert [r.status for r in result.requests] == ["GREEN"]
    assert scratch.live, "the kept folders are still there"
    assert [n for n in notices if n.startswith("warning:")] == [
        DRAIN_FAILED_NOTICE.format(reason="Device or resource busy")
    ]


async def test_a_run_finds_its_scope_components_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scope's components and their inputs (``gates.scope_shape``) depend on the
    workspace and the scope only: the Run's scheduling and its end share one computation
    (each computed them before: two Tarjan passes over the scope per Run)."""
    from artifactize.domain.project.graph import components

    world = World()
    await world.verify()  # a first Run: the Human eval waits
    await world.sign("GREEN")
    found: list[tuple[str, ...]] = []

    def counted(workspace: Any, names: Any) -> list[list[str]]:
        names = tuple(names)
        found.append(names)
        return components(workspace, names)

    monkeypatch.setattr("artifactize.domain.reviews.run.gates.components", counted)
    requests = await world.verify()
    assert requests["app/check"]["status"] == "GREEN"  # scheduled, gate open, and ended
    assert world.run["validation"]["status"] == "SATISFIED"
    assert found == [("app", "doc")]  # once, for the whole scope
