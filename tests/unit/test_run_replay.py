"""``domain.reviews.run.replay``: a Run's plan made, written as text and read back, and the
Run written again with another identity, through the fake state store.

The Runs are real ``Verify`` Runs over the fakes of ``test_verify`` (an Agent review, then
its reuse)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifactize.domain.reviews.run import replay
from artifactize.domain.reviews.run.documents import RunResult, request_record, run_record
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.reviews.run.selection import select_evals
from artifactize.domain.reviews.timestamps import elapsed_ms
from artifactize.domain.use_cases.verify import Verify
from artifactize.kernel.document_codec import request_json, run_json
from artifactize.ports.state import RunRows
from artifactize.ports.statuses import RequestStatus
from tests.fakes.ids import CountingIds
from tests.fakes.model import verdict_reply
from tests.fakes.processes import TickingClock
from tests.integration.test_sqlite_state import execution
from tests.unit.test_verify import Setup, backends

pytestmark = pytest.mark.anyio
OWN = ("id", "runId", "createdAt", "completedAt", "wallMs", "owner", "requestId")


CLOCK = TickingClock()  # each Run's times its own, as a real clock's


async def _run(setup: Setup, *replies: Any) -> RunResult:
    workspace = setup.workspace()
    ports = setup.ports(backends(*replies))
    ports = dataclasses.replace(ports, review=dataclasses.replace(ports.review, clock=CLOCK))
    service = Verify(ports, workspace, VerifyOptions("/repo", "/s"))
    refs = select_evals(workspace, "doc/review", False)
    return await service.run(refs, service.prepare(refs))


def _set_aside(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _set_aside(v) for k, v in value.items() if k not in OWN}
    if isinstance(value, list):
        return [_set_aside(v) for v in value]
    return value


def _plan(setup: Setup, result: RunResult, stamp: str) -> replay.RunPlan:
    placeholders = replay.RunIdentity.placeholders(CountingIds())
    shown = replay.with_identity(result, placeholders)
    rows = setup.state.run_rows(
        run_record(shown.run, "/repo"), [request_record(r) for r in shown.requests]
    )
    line = f"doc/review [{result.run.id}-1]: GREEN (reused (cache))"
    progress = replay.progress_lines(
        [(False, "Started"), (True, line)], result.run.id, shown.run.id
    )
    answer = f"Run: {shown.run.id} é\n".encode()
    return replay.RunPlan(stamp, placeholders, rows, replay.touched(result), progress, answer, 1)


async def test_a_reused_run_is_written_again_with_another_identity() -> None:
    setup = Setup()
    first = await _run(setup, verdict_reply())
    assert not replay.replayable(first)  # it ran a review
    stamp = setup.state.history_stamp()
    reused = await _run(setup)
    assert replay.replayable(reused) and setup.state.history_stamp() == stamp
    plan = _plan(setup, reused, stamp)
    assert plan.holds_no_trace_of(reused)
    assert plan.touched == (reused.requests[0].execution_id,)
    data = plan.to_data()
    assert data is not None
    read = replay.RunPlan.from_data(memoryview(data), 1)
    assert read is not None and read.answer_hits == ((5, 0),)  # "Run: " then the Run ID
    assert dataclasses.replace(read, answer_hits=None) == plan

    identity = replay.RunIdentity(
        "run-Replay", "2026-12-07T10:00:00.000001000Z", "2026-12-07T10:00:01.500000000Z", 7, 8.5
    )
    assert setup.state.replay_run(
        read.filled_rows(replay.filler(read.placeholders, identity)), stamp, read.touched
    )
    again = setup.state.get_run("run-Replay")  # type: ignore[arg-type]
    assert again is not None
    document = run_json(again.data)
    assert document["createdAt"] == identity.created
    assert document["completedAt"] == identity.completed
    assert document["owner"] == {"pid": 7, "startTime": 8.5}
    assert document["summary"]["wallMs"] == 1499
    requests = [request_json(r.data) for r in setup.state.list_requests(again.id)]
    assert [r["id"] for r in requests] == ["run-Replay-1"]
    assert requests[0]["summary"]["wallMs"] == 1499
    assert _set_aside(document) == _set_aside(run_json(reused.run))
    assert _set_aside(requests) == _set_aside([request_json(r) for r in reused.requests])
    pieces = read.answer_pieces(identity)
    assert [bytes(piece) for piece in pieces] == [b"Run: ", b"run-Replay", " é\n".encode()]
    assert pieces[0].obj is pieces[2].obj  # views of the plan's bytes, not copies
    progress = [replay.filler(read.placeholders, identity)(t) for _, t in read.progress]
    assert progress[1] == "doc/review [run-Replay-1]: GREEN (reused (cache))"


async def test_a_moved_history_is_never_replayed_over() -> None:
    setup = Setup()
    await _run(setup, verdict_reply())
    stamp = setup.state.history_stamp()
    plan = _plan(setup, await _run(setup), stamp)
    setup.state.insert_execution(execution("another", "k" * 64))
    assert setup.state.history_stamp() != stamp
    before = len(setup.state.runs)
    identity = replay.RunIdentity(
        "run-Late", plan.placeholders.created, plan.placeholders.completed, 1, 1.0
    )
    assert not setup.state.replay_run(
        plan.filled_rows(replay.filler(plan.placeholders, identity)), stamp, ()
    )
    assert len(setup.state.runs) == before


def test_placeholders_are_times_and_numbers_nothing_else_holds() -> None:
    ids = CountingIds()
    ids.issued = 123_456
    p = replay.RunIdentity.placeholders(ids)
    assert p.created.startswith("1971-") and p.completed.startswith("1999-")
    assert elapsed_ms(p.created, p.completed) == p.wall_ms and len(str(p.wall_ms)) == 12
    assert len(p.run_id) == len("run-") + 24
    texts = p.texts()
    assert len(set(texts)) == len(texts)
    assert not any(a in b for a in texts for b in texts if a is not b)


PLACEHOLDERS = replay.RunIdentity.placeholders(CountingIds())
VALUES = replay.RunIdentity(
    "run-Value1", "2026-12-07T12:00:00.000001000Z", "2026-12-07T12:00:01.500000000Z", 4242, 17.5
)


@settings(max_examples=300)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(PLACEHOLDERS.texts()), st.text(alphabet="run-0179.:TZ", max_size=8)
        )
    )
)
def test_a_fill_is_each_placeholder_replaced_in_turn(chunks: list[str]) -> None:
    """One copy of the text, what one ``str.replace`` per placeholder gives (the chunks
    beside the placeholders hold their pieces: a near miss is left as it is)."""
    text = "".join(chunks)
    expected = text
    for old, new in zip(PLACEHOLDERS.texts(), VALUES.texts(), strict=True):
        expected = expected.replace(old, new)
    assert replay.filler(PLACEHOLDERS, VALUES)(text) == expected


@pytest.mark.parametrize(
    "hits",
    [None, ((4, 0),), ((5, 1),), ((5, 6),), ((5, 0), (6, 0))],
    ids=["none", "off its placeholder", "another placeholder", "no such placeholder", "overlap"],
)
def test_answer_hits_that_do_not_stand_on_their_placeholders_are_searched_again(
    hits: tuple[tuple[int, int], ...] | None,
) -> None:
    """A plan is a file: an answer whose hits are missing or wrong is searched again."""
    answer = f"Run: {PLACEHOLDERS.run_id} at {PLACEHOLDERS.created}\n".encode()
    plan = replay.RunPlan("s", PLACEHOLDERS, RunRows(("r",) * 6, ()), (), (), answer, 0, hits)
    expected = f"Run: {VALUES.run_id} at {VALUES.created}\n".encode()
    assert b"".join(plan.answer_pieces(VALUES)) == expected


def test_a_plan_finds_every_placeholder_in_its_answer() -> None:
    answer = f"{PLACEHOLDERS.pid} {PLACEHOLDERS.run_id}-1 {PLACEHOLDERS.run_id}-2".encode()
    olds = [text.encode() for text in PLACEHOLDERS.texts()]
    hits = tuple(replay.placeholder_hits(answer, olds))
    assert [which for _, which in hits] == [4, 0, 0]
    plan = replay.RunPlan("s", PLACEHOLDERS, RunRows(("r",) * 6, ()), (), (), answer, 0, hits)
    assert [bytes(piece) for piece in plan.answer_pieces(VALUES)] == [
        b"",
        b"4242",
        b" ",
        VALUES.run_id.encode(),
        b"-1 ",
        VALUES.run_id.encode(),
        b"-2",
    ]


def test_placeholders_that_overlap_are_replaced_in_turn() -> None:
    """Never made (``test_placeholders_are_times_and_numbers_nothing_else_holds``), but
    a plan is a file: the pid ``777`` inside the Run ID ``run-777`` is filled as the
    replacements in turn fill it."""
    odd = dataclasses.replace(PLACEHOLDERS, run_id="run-77", pid=777)
    text = "a 777 b run-77 c run-777"
    expected = text
    for old, new in zip(odd.texts(), VALUES.texts(), strict=True):
        expected = expected.replace(old, new)
    assert replay.filler(odd, VALUES)(text) == expected
    plan = replay.RunPlan("s", odd, RunRows(("r",) * 6, ()), (), (), text.encode(), 0)
    assert b"".join(plan.answer_pieces(VALUES)) == expected.encode()


async def test_a_plan_still_naming_its_run_is_not_kept() -> None:
    setup = Setup()
    await _run(setup, verdict_reply())
    reused = await _run(setup)
    plan = _plan(setup, reused, setup.state.history_stamp())
    leaked = dataclasses.replace(plan, answer=f"Run: {reused.run.id}\n".encode())
    assert not leaked.holds_no_trace_of(reused)
    dated = dataclasses.replace(plan, answer=f"at {reused.run.created_at}\n".encode())
    assert not dated.holds_no_trace_of(reused)


async def test_a_run_that_did_anything_is_not_replayable() -> None:
    setup = Setup()
    await _run(setup, verdict_reply())
    reused = await _run(setup)
    started = dataclasses.replace(reused.run, executions_started=1)
    assert not replay.replayable(RunResult(started, reused.requests))
    waiting = dataclasses.replace(reused.requests[0], status=RequestStatus.RUNNING)
    assert not replay.replayable(RunResult(reused.run, [waiting]))
    running = dataclasses.replace(reused.requests[0], started_at=reused.run.created_at)
    assert not replay.replayable(RunResult(reused.run, [running]))
    assert not replay.replayable(RunResult(reused.run, []))


async def test_a_plan_text_is_read_back_only_whole() -> None:
    setup = Setup()
    await _run(setup, verdict_reply())
    reused = await _run(setup)
    plan = _plan(setup, reused, setup.state.history_stamp())
    data = plan.to_data()
    assert data is not None
    head, _, rest = data.partition(b"\n")
    size = f'"answerBytes": {len(plan.answer)}'.encode()
    assert size in head
    for damaged in (
        b"",
        b"not json\n" + rest,
        head.replace(
            f'"format": {replay.PLAN_FORMAT}'.encode(),
            f'"format": {replay.PLAN_FORMAT + 1}'.encode(),
        )
        + b"\n"
        + rest,
        data[: data.rindex(b"\t")],  # the last request cut short
        head + b"\n" + rest.replace(b"\t", b" ", 1),  # a row with too few columns
        head.replace(size, size + b"0") + b"\n" + rest,  # an answer longer than the plan
        head.replace(size, b'"answerBytes": -1') + b"\n" + rest,
        head.replace(size, b'"answerBytes": "9"') + b"\n" + rest,
        head.replace(size, size[:-1]) + b"\n" + rest,  # the answer does not start at a row
        data[:-1],  # the answer cut short: the rows run into it
    ):
        assert replay.RunPlan.from_data(damaged, 1) is None, damaged[-80:]
    run_id = plan.rows.run[0]
    other = (f"{run_id}-9", *plan.rows.requests[0][1:])
    moved = dataclasses.replace(plan, rows=dataclasses.replace(plan.rows, requests=(other,)))
    assert moved.to_data() is None  # its ID is not its Run's and ordinal's


def test_an_answer_is_printed_as_its_strict_utf8_or_keeps_no_plan() -> None:
    assert replay.printed_bytes("Run: é 한\n") == "Run: é 한\n".encode()
    assert replay.printed_bytes("name-\udcff.txt\n") is None  # an undecodable byte
