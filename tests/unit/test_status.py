"""``status``, through fakes: runtime eval ``app/check`` consumes ``doc`` (Human eval
``doc/signoff``), as in tests/unit/test_verify_gates.py. Each test runs ``verify`` to put
the state somewhere, then checks that ``status`` predicts it without touching anything.

The real CLI on a real repository: tests/integration/test_status_cli.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from artifactize.domain.reviews.human.asking import FOLLOWING_HUMAN
from artifactize.domain.reviews.run.context import VerifyPorts
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.reviews.run.reuse import NOT_SELECTED
from artifactize.domain.reviews.run.selection import select_evals
from artifactize.domain.reviews.runtime.review import RuntimePorts
from artifactize.domain.use_cases.status import (
    ASK_HUMAN,
    EXECUTE_FORCED,
    Status,
    StatusOptions,
    StatusPorts,
    StatusReport,
)
from artifactize.domain.use_cases.verify import Verify
from artifactize.kernel.document_codec import (
    request_json,
    run_json,
)
from artifactize.ports.collector import CollectorPause
from artifactize.ports.process import ProcessOutcome
from tests.fakes.filesystem import MemoryFilesystem, Node, Symlink
from tests.fakes.processes import FakeClock, FakeProcessRunner, FakePrograms, FakeScratch
from tests.fakes.threads import THREADS
from tests.support.human_world import PRODUCER, HumanWorld, Table

pytestmark = pytest.mark.anyio

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


class World(HumanWorld):
    def __init__(self) -> None:
        self.doc: dict[str, Node] = {"index.artf": DOC, "notes.txt": b"v1\n"}
        self.tree: dict[str, Node] = {"doc": self.doc, "app": {"index.artf": APP}}
        clock = FakeClock()
        super().__init__(
            MemoryFilesystem({"/repo": self.tree, "/state": {"runs": {"run-abc": {}}}}),
            FakeProcessRunner(ProcessOutcome(exit_code=0), clock=clock),
            clock,
        )
        self.pause: CollectorPause | None = None  # the collector pause verify is given

    async def verify(self, selector: str | None = None, **options: Any) -> dict[str, Any]:
        runtime = RuntimePorts(
            processes=self.runner,
            scratch=FakeScratch(),
            filesystem=self.files,
            programs=FakePrograms(),
            clock=self.clock,
            environment={"PATH": "/usr/bin"},
            threads=THREADS,
        )
        ports = VerifyPorts(
            self.review_ports(),
            self.state,
            Table(),
            lambda run_id: "/state/runs/run-abc",
            PRODUCER,
            self.ids,
            sleep=self.sleep,
            runtime=runtime,
            pause_collector=self.pause,
        )
        workspace = self.workspace()
        service = Verify(ports, workspace, VerifyOptions("/repo", "/state", **options))
        refs = select_evals(workspace, selector, selector is None)
        result = await service.run(refs, service.prepare(refs))
        self.run: Any = run_json(result.run)
        return {r.eval_id: request_json(r) for r in result.requests}

    async def sign(self, verdict: str) -> None:
        (waiting,) = [r for r in self.state.all_requests() if r.status == "WAITING_HUMAN"]
        reviews = self.reviews()
        await reviews.claim(waiting.id, "alice")
        await reviews.submit(waiting.id, "alice", {"verdict": verdict})

    def status(
        self, selector: str | None = None, *, fresh: bool = False, **options: Any
    ) -> tuple[StatusReport, dict[str, Any]]:
        """The report, and its evals' JSON by eval ID; ``fresh``: no state exists."""
        workspace = self.workspace()
        ports = StatusPorts(self.files, None if fresh else self.state, threads=THREADS)
        report = Status(ports, workspace, StatusOptions(**options)).report(
            select_evals(workspace, selector, selector is None)
        )
        return report, {e["evalId"]: e for e in report.to_json()["evals"]}

    def snapshot(self) -> tuple[Any, ...]:
        state = self.state
        return (
            dict(state.runs),
            dict(state.requests),
            dict(state.executions),
            list(state.history_ids),
            list(state.touched),
        )


def brief(evals: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {eval_id: (e["state"], e["action"]) for eval_id, e in evals.items()}


async def test_nothing_reviewed_yet() -> None:
    world = World()
    report, evals = world.status(fresh=True)
    assert brief(evals) == {
        "app/check": ("WAIT_DEPENDENCY", "wait"),
        "doc/signoff": ("UNREVIEWED", "execute"),
    }
    assert evals["doc/signoff"]["reason"] == ASK_HUMAN
    assert evals["app/check"]["reason"] == "Waiting for doc (doc/signoff UNREVIEWED)."
    assert report.artifacts == {"app": "WAIT_DEPENDENCY", "doc": "UNREVIEWED"}
    assert report.unmet == ("app", "doc") and not report.satisfied
    assert report.action_counts() == {"execute": 1, "reuse": 0, "wait": 1, "blocked": 0}
    check = evals["app/check"]
    assert check["selected"] and check["included"]
    assert len(check["key"]) == 64 and len(check["evalDefHash"]) == 64
    assert set(check["fingerprints"]) == {"app", "doc"}
    assert check["fingerprint"] == check["fingerprints"]["app"]
    assert check["last"] is None and check["changes"] is None


async def test_a_waiting_human_review_is_reported_and_nothing_is_written() -> None:
    world = World()
    requests = await world.verify()
    before = world.snapshot()
    report, evals = world.status()
    assert world.snapshot() == before
    signoff = evals["doc/signoff"]
    assert (signoff["state"], signoff["action"]) == ("WAITING_HUMAN", "wait")
    assert signoff["reason"] == f"{FOLLOWING_HUMAN} ({requests['doc/signoff']['id']})"
    assert signoff["key"] == requests["doc/signoff"]["key"]
    assert evals["app/check"]["key"] == requests["app/check"]["key"]
    assert report.artifacts == {"app": "WAIT_DEPENDENCY", "doc": "WAIT_DEPENDENCY"}


async def test_after_green_everything_is_reused_without_touching_records() -> None:
    world = World()
    await world.verify()
    await world.sign("GREEN")
    await world.verify()
    before = world.snapshot()
    report, evals = world.status()
    assert world.snapshot() == before  # `touched` included: no access time changed
    assert brief(evals) == {"app/check": ("PASS", "reuse"), "doc/signoff": ("PASS", "reuse")}
    assert report.satisfied and report.artifacts == {"app": "PASS", "doc": "PASS"}
    assert report.action_counts()["reuse"] == 2


async def test_a_red_input_blocks_its_consumer() -> None:
    world = World()
    await world.verify()
    await world.sign("RED")
    report, evals = world.status()
    assert brief(evals) == {"app/check": ("BLOCKED", "blocked"), "doc/signoff": ("RED", "reuse")}
    assert evals["app/check"]["reason"] == "Blocked by doc (doc/signoff RED)."
    assert report.artifacts == {"app": "BLOCKED", "doc": "RED"}


async def test_status_agrees_with_the_validation_verify_saves() -> None:
    world = World()
    await world.verify()
    await world.sign("RED")
    await world.verify()
    report, evals = world.status()
    validation = world.run["validation"]
    renamed = {"GREEN": "PASS", "WAIT": "WAIT_DEPENDENCY"}
    assert report.artifacts == {k: renamed.get(v, v) for k, v in validation["artifacts"].items()}
    assert {k: e["state"] for k, e in evals.items()} == {
        k: renamed.get(v, v) for k, v in validation["evals"].items()
    }
    assert list(report.unmet) == validation["unmetObligations"]


async def test_an_edit_makes_the_verdict_stale_and_names_what_changed() -> None:
    world = World()
    await world.verify()
    await world.sign("GREEN")
    requests = await world.verify()
    old = requests["doc/signoff"]
    world.doc["notes.txt"] = b"v2\n"
    report, evals = world.status()
    signoff = evals["doc/signoff"]
    assert (signoff["state"], signoff["action"]) == ("STALE", "execute")
    assert signoff["key"] != old["key"]
    assert signoff["last"] == {
        "runId": old["provenance"]["runId"],
        "verdict": "GREEN",
        "fingerprint": old["fingerprints"]["doc"],
    }
    assert signoff["changes"]["dependencies"] == ["doc"]
    assert signoff["changes"]["summary"] == (
        f"Fingerprint changed since Run {old['provenance']['runId']}: Artifact doc changed"
    )
    check = evals["app/check"]  # its key covers `doc` too, and its gate closed again
    assert (check["state"], check["action"]) == ("WAIT_DEPENDENCY", "wait")
    assert check["changes"]["summary"].endswith("dependency doc changed")
    assert report.artifacts == {"app": "WAIT_DEPENDENCY", "doc": "STALE"}


async def test_a_scope_eval_that_is_not_selected_waits_for_a_selection() -> None:
    world = World()
    _, evals = world.status("app/check", fresh=True)
    signoff = evals["doc/signoff"]
    assert (signoff["selected"], signoff["included"]) == (False, False)
    assert (signoff["action"], signoff["reason"]) == ("wait", NOT_SELECTED)
    assert list(evals) == ["app/check", "doc/signoff"]

    _, evals = world.status("app/check", fresh=True, recursive=True)
    signoff = evals["doc/signoff"]
    assert (signoff["selected"], signoff["included"], signoff["action"]) == (
        False,
        True,
        "execute",
    )


async def test_ignoring_gates_executes_early_and_keeps_the_obligations() -> None:
    world = World()
    report, evals = world.status(fresh=True, ignore_gates=True)
    assert brief(evals)["app/check"] == ("UNREVIEWED", "execute")
    assert report.unmet == ("app", "doc")
    await world.verify(ignore_gates=True)
    report, evals = world.status(ignore_gates=True)
    assert brief(evals)["app/check"] == ("PASS", "reuse")
    assert report.artifacts == {"app": "INCOMPLETE", "doc": "WAIT_DEPENDENCY"}


async def test_force_executes_what_would_be_reused() -> None:
    world = World()
    await world.verify(ignore_gates=True)  # app/check GREEN under its key
    _, evals = world.status("app/check", force=True, ignore_gates=True)
    assert (evals["app/check"]["action"], evals["app/check"]["reason"]) == (
        "execute",
        EXECUTE_FORCED,
    )
    _, evals = world.status("app/check", ignore_gates=True)
    assert evals["app/check"]["action"] == "reuse"


async def test_a_fingerprint_failure_is_an_error_of_every_eval_it_keys() -> None:
    world = World()
    world.doc["link"] = Symlink("notes.txt")
    report, evals = world.status(fresh=True)
    assert brief(evals) == {  # the gate decides the state first, as in verify
        "app/check": ("WAIT_DEPENDENCY", "blocked"),
        "doc/signoff": ("ERROR", "blocked"),
    }
    assert "symbolic link" in evals["doc/signoff"]["reason"]
    assert evals["doc/signoff"]["key"] is None
    assert report.fingerprint_failures == ("app/check", "doc/signoff")
    assert report.artifacts == {"app": "WAIT_DEPENDENCY", "doc": "ERROR"}


def _counting_pause(world: World, opened: list[int]) -> CollectorPause:
    """A fake collector pause: the files opened when it starts and when it ends."""

    @contextmanager
    def pause() -> Iterator[None]:
        opened.append(world.files.open_file_calls)
        yield
        opened.append(world.files.open_file_calls)

    return pause


async def test_the_report_runs_with_the_collector_paused() -> None:
    """The whole report, its fingerprints included, is computed inside one collector pause."""
    world = World()
    await world.verify()
    opened: list[int] = []
    pause = _counting_pause(world, opened)
    workspace = world.workspace()
    ports = StatusPorts(world.files, world.state, threads=THREADS, pause_collector=pause)
    report = Status(ports, workspace, StatusOptions()).report(select_evals(workspace, None, True))
    before, after = opened
    assert after == world.files.open_file_calls > before  # every file hashed while paused
    assert report.evals


async def test_verify_pauses_the_collector_around_its_keys_and_its_documents_only() -> None:
    """Paused: the keys, the Run's documents, its reuse phase and its ending (allocations
    kept, no cycles); not paused: the scheduling, where evals execute."""
    world = World()
    blocks: list[tuple[int, int]] = []  # (files opened, processes run) at each edge

    @contextmanager
    def pause() -> Iterator[None]:
        blocks.append((world.files.open_file_calls, len(world.runner.specs)))
        yield
        blocks.append((world.files.open_file_calls, len(world.runner.specs)))

    world.pause = pause
    await world.verify(ignore_gates=True)  # app/check runs before doc's sign-off
    edges = list(zip(blocks[::2], blocks[1::2], strict=True))
    assert len(edges) == 4  # keys, documents, reuse phase, ending
    (keys_before, _), (keys_after, _) = edges[0]
    assert keys_after > keys_before  # every file hashed while paused
    assert world.runner.specs  # an eval ran, and never inside a pause
    assert all(before[1] == after[1] for before, after in edges)


async def test_each_eval_is_built_once_as_the_document_it_prints() -> None:
    """The report holds each eval's status as its ``--json`` document (plain data, built
    once): the answer lists those very documents, converting none, and the text form reads
    them too; what a waiting eval waits for is kept beside them."""
    world = World()
    report, _ = world.status(fresh=True)
    listed = report.to_json()["evals"]
    assert len(listed) == len(report.evals) == 2
    assert all(shown is held for shown, held in zip(listed, report.evals, strict=True))
    assert all(type(held) is dict for held in report.evals)
    assert report.waits_for == {"app/check": ("doc",)}


def _answer_inputs(world: World, selector: str | None = None, **options: Any) -> str:
    workspace = world.workspace()
    ports = StatusPorts(world.files, None, threads=THREADS)
    status = Status(ports, workspace, StatusOptions(**options))
    return status.answer_inputs(status.keys(select_evals(workspace, selector, selector is None)))


def test_answer_inputs_hold_while_nothing_changes_and_move_with_each_input() -> None:
    """What a stored ``status`` answer is keyed by (besides the state, the environment and
    the code): equal for the same workspace, files and options, and different when a
    file a key covers, a declaration, the selection or an option changes."""
    world = World()
    first = _answer_inputs(world)
    assert _answer_inputs(world) == first
    seen = {first}
    for other in (
        _answer_inputs(world, "app"),
        _answer_inputs(world, force=True),
        _answer_inputs(world, recursive=True),
        _answer_inputs(world, ignore_gates=True),
    ):
        assert other not in seen
        seen.add(other)
    world.doc["notes.txt"] = b"v2\n"  # a file the keys cover
    edited = _answer_inputs(world)
    assert edited not in seen
    seen.add(edited)
    world.doc["index.artf"] = DOC.replace(b"Signed off", b"Signed")  # a declaration
    assert _answer_inputs(world) not in seen


async def test_status_in_two_halves_is_status_in_one() -> None:
    """``keys`` then ``report_of`` with the state attached in between (as a stored answer's
    lookup runs it) reports what ``report`` does."""
    world = World()
    await world.verify()
    world.doc["notes.txt"] = b"v2\n"  # one eval stale, one reused
    workspace = world.workspace()
    refs = select_evals(workspace, None, True)
    whole = Status(
        StatusPorts(world.files, world.state, threads=THREADS), workspace, StatusOptions()
    )
    halves = Status(StatusPorts(world.files, None, threads=THREADS), workspace, StatusOptions())
    computed = halves.keys(refs)
    halves.attach_state(world.state)
    assert halves.report_of(computed) == whole.report(refs)
