"""``domain.tools.serving`` through fakes: what is served, the budget, the audit, and the
MCP content mapping (``entrypoints.mcp.content``) of every block kind."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.domain.project.workspace import Workspace
from artifactize.domain.tools.cancellation import CANCELLED_MESSAGE
from artifactize.domain.tools.registry import ToolPorts
from artifactize.domain.tools.results import AUDIT_SUMMARY_MAX_CHARS, ToolResult
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.domain.use_cases.serving import (
    AUDIT_FAILED,
    BUDGET_SPENT,
    MAX_TOOL_CALLS_MIN,
    ServedScope,
    ServeRefused,
    ServeSelection,
    ServingPorts,
    ServingRun,
    prepare_scope,
)
from artifactize.entrypoints.mcp.content import call_tool_result
from artifactize.ports.statuses import ErrorCode
from tests.fakes.filesystem import MemoryFilesystem
from tests.fakes.ids import CountingIds
from tests.fakes.mcp_audit import MemoryMcpAudit
from tests.fakes.processes import (
    FakeClock,
    FakeProcessRunner,
    FakePrograms,
    FakeScratch,
    hang_forever,
)
from tests.fakes.threads import THREADS

pytestmark = pytest.mark.anyio

DOC = b"""name = "doc"
[views.agent_tools]
read = { builtin = "read" }
[views.agent_tools.slow]
description = "Slow."
protocol = "plain"
command = "sleep"
args = ["60"]
[views.agent_tools.pinned]
description = "Pinned."
protocol = "plain"
command = "cat"
args = ["notes.txt"]
execution_paths = ["doc/notes.txt"]
[evals.review]
title = "Review"
profile = { kind = "agent", backend = "openai", model = "m1", max_tool_calls = 3 }
payload.instruction = "Review {doc}."
[evals.open]
title = "Open"
profile = { kind = "agent", backend = "openai", model = "m1" }
payload.instruction = "Look at {doc}."
[evals.signoff]
title = "Sign"
profile = { kind = "human" }
payload.instruction = "Sign {doc}."
[evals.check]
title = "Check"
profile = { kind = "runtime", command = "true", args = [] }
payload.instruction = "Run."
"""
BROKEN = b"""name = "broken"
[views.agent_tools.run]
description = "Run."
protocol = "plain"
command = "cat"
args = ["x"]
execution_paths = ["broken/missing.sh"]
[evals.review]
title = "Broken"
profile = { kind = "agent", backend = "openai", model = "m1" }
payload.instruction = "Review {broken}."
"""


def world(runner: FakeProcessRunner | None = None) -> tuple[Workspace, ToolPorts]:
    tree: dict[str, Any] = {
        "doc": {"index.artf": DOC, "notes.txt": b"hello\n"},
        "broken": {"index.artf": BROKEN},
    }
    filesystem = MemoryFilesystem({"/repo": tree})
    ports = ToolPorts(
        filesystem,
        RyRegexEngine(),
        runner or FakeProcessRunner(),
        {"PATH": "/usr/bin"},
        programs=FakePrograms(),
        scratch=FakeScratch(),
        threads=THREADS,
    )
    return ConfigService(filesystem).load("/repo"), ports


def served(selection: ServeSelection, runner: FakeProcessRunner | None = None) -> ServedScope:
    workspace, ports = world(runner)
    return prepare_scope(workspace, selection, ports)


def serving(scope: ServedScope, audit: MemoryMcpAudit | None = None) -> ServingRun:
    ports = ServingPorts(
        audit=audit or MemoryMcpAudit(),
        sessions=None,  # type: ignore[arg-type]  # no session-bound tool here
        clock=FakeClock(),
        ids=CountingIds(),
    )
    return ServingRun(scope, ports, "/repo")


# --- what is served ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (ServeSelection(), "Give exactly one of --eval"),
        (ServeSelection(eval_id="doc/review", artifact="doc"), "Give exactly one of --eval"),
        (ServeSelection(eval_id="doc/nope"), "Unknown eval: doc/nope"),
        (ServeSelection(artifact="nope"), "nope"),
        (ServeSelection(eval_id="doc/signoff"), "doc/signoff is a Human eval"),
        (ServeSelection(eval_id="doc/check"), "doc/check is a runtime eval"),
        (ServeSelection(eval_id="doc/review", max_tool_calls=0), "at least 1, got 0"),
        (ServeSelection(artifact="doc", max_tool_calls=-1), "at least 1, got -1"),
    ],
)
def test_refusals(selection: ServeSelection, message: str) -> None:
    with pytest.raises(ServeRefused) as refused:
        served(selection)
    assert message in refused.value.message
    assert refused.value.code is None


def test_an_eval_serves_its_registry_pins_budget_and_prompt() -> None:
    scope = served(ServeSelection(eval_id="doc/review"))
    assert [t.name for t in scope.tools] == ["pinned_doc", "read_doc", "slow_doc"]
    assert set(scope.pins) == {"pinned_doc"}
    assert scope.max_tool_calls == 3  # the eval's maxToolCalls
    assert scope.prompt is not None and scope.prompt.name == "review_doc_review"
    assert "Review" in scope.prompt.text and "read_doc" in scope.prompt.text
    assert served(ServeSelection(eval_id="doc/open")).max_tool_calls is None
    assert served(ServeSelection(eval_id="doc/review", max_tool_calls=7)).max_tool_calls == 7


def test_an_artifact_serves_its_tools_without_a_prompt() -> None:
    scope = served(ServeSelection(artifact="doc", max_tool_calls=MAX_TOOL_CALLS_MIN))
    assert scope.prompt is None and scope.max_tool_calls == MAX_TOOL_CALLS_MIN
    assert scope.to_json()["artifactId"] == "doc"


def test_a_path_that_cannot_be_pinned_is_preparation_failed() -> None:
    with pytest.raises(ServeRefused) as refused:
        served(ServeSelection(eval_id="broken/review"))
    assert refused.value.code is ErrorCode.PREPARATION_FAILED
    assert "broken/missing.sh" in refused.value.message


# --- calls, budget, audit ---------------------------------------------------------------------


async def test_calls_are_audited_in_order_and_refused_past_the_budget() -> None:
    audit = MemoryMcpAudit()
    run = serving(served(ServeSelection(eval_id="doc/review", max_tool_calls=2)), audit)
    await run.start()
    ok = await run.call("read_doc", {"path": "notes.txt"})
    unknown = await run.call("nope_doc", {"a": "b"})
    refused = await run.call("read_doc", {"path": "notes.txt"})
    assert not ok.is_error and unknown.is_error
    assert refused.error_text == BUDGET_SPENT.format(limit=2)
    assert await run.close() == []
    calls = audit.calls(run.session_id)
    assert [(c.ordinal, c.tool, c.is_error) for c in calls] == [
        (1, "read_doc", False),
        (2, "nope_doc", True),
        (3, "read_doc", True),
    ]
    assert calls[1].argument_bytes == len('{"a":"b"}')
    assert json.loads(calls[0].summary or "")["content"][0]["type"] == "json"
    record = audit.records[run.session_id]
    assert record.ended_at is not None and record.data["maxToolCalls"] == 2
    assert record.data["transport"] == "stdio"


async def test_an_audit_entry_that_cannot_be_written_refuses_the_call() -> None:
    runner = FakeProcessRunner()
    audit = MemoryMcpAudit(fail_start_call=True)
    run = serving(served(ServeSelection(artifact="doc"), runner), audit)
    await run.start()
    result = await run.call("pinned_doc", {})
    assert result.error_text == AUDIT_FAILED.format(detail="database is locked")
    assert runner.specs == []  # nothing ran
    await run.close()


async def test_a_cancelled_call_is_audited_before_the_cancellation_goes_on() -> None:
    audit = MemoryMcpAudit()
    run = serving(served(ServeSelection(artifact="doc"), FakeProcessRunner(hang_forever)), audit)
    await run.start()
    with anyio.move_on_after(0.2):
        await run.call("slow_doc", {})
    (entry,) = audit.calls(run.session_id)
    assert entry.is_error is True and entry.completed_at is not None
    assert CANCELLED_MESSAGE in (entry.summary or "")
    await run.close()


async def test_deferred_completions_wait_for_the_flush_and_the_close() -> None:
    """With ``defer_completions`` (stdio) the entry is written before the call runs and its
    completion once the transport flushes (after the answer is written), oldest first; a
    cancelled call is completed at once; ``close`` flushes what is left before the end."""
    audit = MemoryMcpAudit()
    run = serving(served(ServeSelection(artifact="doc"), FakeProcessRunner(hang_forever)), audit)
    run.defer_completions = True
    await run.start()
    await run.call("read_doc", {"path": "notes.txt"})
    await run.call("nope_doc", {})
    pending = audit.calls(run.session_id)
    assert [(c.ordinal, c.completed_at) for c in pending] == [(1, None), (2, None)]
    run.flush_completions()
    flushed = audit.calls(run.session_id)
    assert [(c.ordinal, c.is_error) for c in flushed] == [(1, False), (2, True)]
    assert all(c.completed_at and c.summary for c in flushed)
    with anyio.move_on_after(0.2):
        await run.call("slow_doc", {})
    assert audit.calls(run.session_id)[2].completed_at is not None  # not deferred
    await run.call("read_doc", {"path": "notes.txt"})
    assert audit.calls(run.session_id)[3].completed_at is None
    assert await run.close() == []
    assert audit.calls(run.session_id)[3].completed_at is not None
    assert audit.records[run.session_id].ended_at is not None


async def test_a_completion_that_fails_to_flush_is_a_problem_of_the_run() -> None:
    audit = MemoryMcpAudit()
    run = serving(served(ServeSelection(artifact="doc")), audit)
    run.defer_completions = True
    await run.start()
    await run.call("read_doc", {"path": "notes.txt"})
    audit.entries.clear()  # the completion has no entry left to update: the fake raises
    run.flush_completions()  # never raises
    assert run.problems and "audit entry 1 not completed" in run.problems[0]
    await run.close()


def test_result_summaries_stop_at_the_limit() -> None:
    overhead = len(ToolResult.text("").audit_summary())
    at_limit = ToolResult.text("x" * (AUDIT_SUMMARY_MAX_CHARS - overhead))
    past_limit = ToolResult.text("x" * (AUDIT_SUMMARY_MAX_CHARS - overhead + 1))
    assert len(at_limit.audit_summary()) == AUDIT_SUMMARY_MAX_CHARS
    assert not at_limit.audit_summary().endswith("…")
    cut = past_limit.audit_summary()
    assert len(cut) == AUDIT_SUMMARY_MAX_CHARS and cut.endswith("…")


# --- content mapping --------------------------------------------------------------------------


def test_every_block_kind_maps_to_mcp_content() -> None:
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    result = ToolResult(
        ({"type": "text", "text": "t"}, {"type": "json", "data": {"a": [1]}}, image)
    )
    mapped = call_tool_result(result, LATEST_MODERN_VERSION)
    assert [b.type for b in mapped.content] == ["text", "text", "image"]
    assert mapped.content[1].text == '{"a":[1]}'  # type: ignore[union-attr]
    assert mapped.content[2].data == "aGk=" and mapped.content[2].mime_type == "image/png"  # type: ignore[union-attr]
    assert mapped.structured_content is None and not mapped.is_error


def test_a_single_json_block_is_structured_content_too() -> None:
    as_object = call_tool_result(ToolResult.json({"a": 1}), LATEST_HANDSHAKE_VERSION)
    assert as_object.structured_content == {"a": 1}
    as_list_modern = call_tool_result(ToolResult.json([1]), LATEST_MODERN_VERSION)
    as_list_handshake = call_tool_result(ToolResult.json([1]), LATEST_HANDSHAKE_VERSION)
    assert as_list_modern.structured_content == [1]
    assert as_list_handshake.structured_content is None  # an object only, before 2026-07-28


def test_errors_set_is_error_with_their_text() -> None:
    mapped = call_tool_result(ToolResult.error("bad"), LATEST_MODERN_VERSION)
    assert mapped.is_error and mapped.content[0].text == "bad"  # type: ignore[union-attr]
    assert mapped.structured_content is None
