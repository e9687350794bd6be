"""Settling a Run: an outcome committed with its execution, the conversation kept, the end.

A request and its execution are saved in one state transaction; a GREEN or RED outcome of
a keyed eval also joins the key's reuse history. A settled outcome is held for a group
commit (``HeldCompletions``): written at the start of the Run's next transaction, usually
the next eval's claim, so an executed eval costs one commit. When the Run ends, every request still
QUEUED or RUNNING (a cancellation) settles ERROR, and the Run gets its validation, status,
summary and usage.
"""

from __future__ import annotations

import dataclasses

from artifactize.domain.reviews.agent.conversations import review_event, trace_events
from artifactize.domain.reviews.agent.review import AgentReview, ReviewOutcome
from artifactize.domain.reviews.human.asking import WAITING_HUMAN
from artifactize.domain.reviews.run.context import RunContext
from artifactize.domain.reviews.run.documents import (
    RunResult,
    execution_from_request,
    request_record,
    run_record,
    run_status,
)
from artifactize.domain.reviews.run.scheduler import ScheduleInputs
from artifactize.domain.reviews.run.summaries import (
    request_summary,
    run_summary,
    run_usage,
    summarized,
)
from artifactize.kernel.document_codec import (
    execution_changed,
    json_copy,
    request_changed,
    request_holds,
    request_merged,
    run_changed,
)
from artifactize.kernel.transitions import execution_moves, request_moves, run_moves
from artifactize.ports.documents import (
    ProvenanceDocument,
    Request,
    SettledFields,
)
from artifactize.ports.ids import SessionId
from artifactize.ports.state import ExecutionRecord
from artifactize.ports.statuses import VERDICT_STATUSES, ErrorCode, RequestStatus, RunStatus

SESSION_ID_CHARS = 32  # lowercase hex digits: 128 random bits
_HEX_DIGITS = "0123456789abcdef"
CANCELLED_BEFORE_SETTLED = "The Run was cancelled before this request settled."


def save_conversation(
    ctx: RunContext, request: Request, review: AgentReview, outcome: ReviewOutcome
) -> Request:
    """Keep the conversation for ``session show`` and ``session send``; the request with its
    ``sessionId`` (``request`` itself when nothing was kept), to be committed."""
    store = ctx.ports.conversations
    if store is None or review.prompt is None:
        return request
    session_id = SessionId(ctx.ports.ids.choose(_HEX_DIGITS, SESSION_ID_CHARS))
    at = ctx.now()
    header = {
        "sessionId": session_id,
        "requestId": request.id,
        "runId": request.run_id,
        "evalId": request.eval_id,
        "repoPath": ctx.options.repo,
        "backend": request.profile.get("backend"),
        "model": request.profile.get("model"),
    }
    events = [review_event(header, review.prompt.instructions, review.tool_specs, at)]
    events.extend(trace_events(outcome.trace, 0, at))
    events.append(
        {
            "kind": "end",
            "at": at,
            "status": outcome.status,
            "errorCode": outcome.error_code,
            "error": outcome.error,
        }
    )
    store.append(session_id, events)
    return request_changed(request, session_id=session_id)


def commit(
    ctx: RunContext, request: Request, execution: ExecutionRecord, outcome: ReviewOutcome
) -> tuple[ExecutionRecord, bool]:
    """Save the request and its execution; the settled execution and whether it joined the
    key's reuse history."""
    completed = ctx.now()
    provenance: ProvenanceDocument = {
        "repoPath": ctx.options.repo,
        "runId": request.run_id,
        "requestId": request.id,
        "evalId": request.eval_id,
        "evalDefHash": request.eval_def_hash,
        "completedAt": completed,
    }
    if outcome.execution_paths:
        provenance["executionPaths"] = {k: dict(v) for k, v in outcome.execution_paths.items()}
    settled_fields: SettledFields = {
        "result": outcome.result,
        "error": outcome.error,
        "errorCode": outcome.error_code,
        "provenance": provenance,
        "usage": [attempt.to_json() for attempt in outcome.trace.attempts],
        "toolCalls": [call.to_json() for call in outcome.trace.tool_calls],
        "producer": ctx.ports.producer.copy(),
        "completedAt": completed,
        "cwd": outcome.cwd,
        "argv": list(outcome.argv) if outcome.argv is not None else None,
        "child": outcome.child,
        "agent": outcome.agent,
    }
    if outcome.program is not None:  # runtime reviews only, once the program was found
        settled_fields["program"] = outcome.program
    status = request_moves(request.status, RequestStatus(outcome.status))
    running = request
    request = request_merged(request, {"status": status, **json_copy(settled_fields)})
    execution_status = execution_moves(execution.status, outcome.status)
    kinds = {name: ctx.workspace.artifact(name).kind.value for name in request.fingerprints}
    data = execution_changed(
        execution_from_request(execution.id, request),
        {"kinds": kinds, "status": execution_status, **settled_fields},
    )
    verdict = outcome.status in VERDICT_STATUSES
    settled = dataclasses.replace(
        execution,
        key=request.key if verdict else execution.key,
        status=execution_status,
        completed_at=completed,
        data=data,
    )
    if status == WAITING_HUMAN:  # handed to a person: written at once
        recorded = ctx.ports.state.complete_execution(
            settled, record=False, request=request_record(request)
        )
        ctx.keep(request)
        return settled, recorded
    # Settled: saved with the summary ``finish_run`` would add, and held for the Run's
    # next transaction (a group commit); shown once written.
    request = summarized(request)
    recorded = ctx.ports.state.complete_execution(
        settled,
        record=verdict and request.key is not None,
        request=request_record(request),
        held=ctx.held.hold(ctx, request, running),
    )
    return settled, recorded


def finish_run(ctx: RunContext, result: RunResult, inputs: ScheduleInputs) -> None:
    """Settle what the Run left unsettled, then save its validation, status and summary."""
    with ctx.ports.state.batch():  # the Run's last phase: one transaction
        _finish_run(ctx, result, inputs)


def _finish_run(ctx: RunContext, result: RunResult, inputs: ScheduleInputs) -> None:
    run = result.run
    # A Run that a failed state write ended settles its open requests with that code.
    write_failed = run.error_code == ErrorCode.STATE_WRITE_FAILED
    for request in list(result.requests):
        if request.status in (RequestStatus.QUEUED, RequestStatus.RUNNING):
            cancelled = request_changed(
                request,
                status=request_moves(request.status, RequestStatus.ERROR),
                error_code=ErrorCode.STATE_WRITE_FAILED if write_failed else ErrorCode.CANCELLED,
                error=run.error if write_failed else CANCELLED_BEFORE_SETTLED,
                completed_at=ctx.now(),
            )
            ctx.save(cancelled)
    statuses: list[str] = [r.status for r in result.requests]
    statuses.extend(entry["status"] for entry in run.evidence.values())
    graph = inputs.graph()  # after the cancelled requests settled ERROR
    ended = RunStatus.ERROR if run.error else run_status(statuses, graph.satisfied)
    completed = ctx.now()
    run = run_changed(
        run,
        validation=graph.to_json(),
        status=run_moves(run.status, ended),
        completed_at=completed,
    )
    for index, request in enumerate(list(result.requests)):
        own = request_summary(request)
        if request_holds(request, summary=own):  # saved with it already (reused at the
            continue  # start): no document built, nothing written
        with_summary = request_changed(request, summary=own)
        if request.status != WAITING_HUMAN:  # a person may be settling it right now
            ctx.save(with_summary)
        else:
            result.requests[index] = with_summary
    summary = run_summary(list(result.requests), run.created_at, completed, run.executions_started)
    run = run_changed(run, summary=summary, usage=run_usage(result.requests, summary))
    result.run = run
    ctx.ports.state.update_run(run_record(run, ctx.options.repo))
