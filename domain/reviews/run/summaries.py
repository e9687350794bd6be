"""Run and request summaries: what a Run did, what it reused and what it cost.

Usage is reported per provider attempt (``{turn, attempt, usage: {counter: n}, error?}``),
and providers disagree on what the counters mean (OpenAI input tokens already include cache
reads, Anthropic input is uncached), so counters are never added across keys: each key is
summed on its own, only over the attempts that reported it. An attempt that reported
nothing stays *unreported*: its cost is unknown, which is different from a known zero, so a
counter no attempt reported is absent rather than ``0``.

Only local executions are spent by this Run. A reused request (cache, joined, remote) keeps
its source's raw attempts in ``reusedUsage``; they count as ``saved`` at Run level, and the
request's own summary reports no attempts (``usageState: "none"``). Runtime and Human
executions report no usage at all, so each counts as one unreported attempt: the Run did
work whose cost nobody measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from artifactize.domain.reviews.run.sources import other_profile
from artifactize.domain.reviews.timestamps import elapsed_ms
from artifactize.kernel.document_codec import request_changed
from artifactize.ports.documents import (
    AttemptDocument,
    Counters,
    Request,
    RequestSummary,
    RunSummary,
    RunUsage,
    UsageSummary,
)
from artifactize.ports.statuses import PROFILE_KINDS, ProfileKind, RequestStatus, SourceKind

AGENT = ProfileKind.AGENT
HUMAN = ProfileKind.HUMAN
REVIEWER_KINDS = PROFILE_KINDS
LOCAL_SOURCE = "local"
NON_AGENT_ATTEMPTS = 1  # a Runtime or Human execution: one attempt, usage unreported
LOCAL_EXECUTOR_START = 1

USAGE_NONE = "none"
USAGE_UNREPORTED = "unreported"
USAGE_REPORTED = "reported"
USAGE_PARTIAL = "partial"


def is_counter(value: object) -> bool:
    """A reported token counter: an integer (``bool`` is an ``int`` in Python but no count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def attempt_counters(attempt: AttemptDocument) -> Counters:
    """The counters one attempt reported (possibly none)."""
    usage = attempt.get("usage")
    if not isinstance(usage, Mapping):
        return {}
    return {str(key): value for key, value in usage.items() if is_counter(value)}


def add_counters(total: Counters, counters: Mapping[str, int]) -> None:
    """Add each counter to its own key: a key never reported stays absent, never 0."""
    for key, value in counters.items():
        total[key] = total.get(key, 0) + value


def usage_state(attempts: int, reported: int) -> str:
    """How complete the usage of ``attempts`` is, given how many ``reported`` any counter."""
    if attempts == 0:
        return USAGE_NONE
    if reported == attempts:
        return USAGE_REPORTED
    return USAGE_UNREPORTED if reported == 0 else USAGE_PARTIAL


def reviewer_kind(request: Request) -> str:
    """The requested reviewer kind (runtime, agent, human) the counts are grouped by."""
    return str(request.requested_profile["kind"])


def is_reused(request: Request) -> bool:
    return request.source is not None


def is_local_execution(request: Request) -> bool:
    """This Run itself executed the request (a Human one: the person already submitted)."""
    return (
        not is_reused(request)
        and request.execution_id is not None
        and request.status != RequestStatus.WAITING_HUMAN
    )


def execution_source(request: Request) -> str | None:
    """Where the result came from: the reuse kind, ``local``, or None before any."""
    source = request.source
    if isinstance(source, Mapping):
        return str(source.get("kind"))
    return LOCAL_SOURCE if is_local_execution(request) else None


def _attempt_records(request: Request) -> list[Counters | None]:
    """One entry per attempt this request's own execution made: its counters, or None when
    the attempt reported nothing."""
    if not is_local_execution(request):
        return []
    if reviewer_kind(request) != AGENT:
        return [None] * NON_AGENT_ATTEMPTS
    return [attempt_counters(a) or None for a in request.usage or []]


def _tool_counts(requests: Iterable[Request]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for request in requests:
        for call in request.tool_calls or []:
            counts[call["name"]] = counts.get(call["name"], 0) + 1
    return counts


def _usage_fields(attempts: list[Counters | None]) -> UsageSummary:
    usage: Counters = {}
    reported = 0
    for counters in attempts:
        if counters is not None:
            reported += 1
            add_counters(usage, counters)
    return {
        "attempts": len(attempts),
        "reportedAttempts": reported,
        "unreportedAttempts": len(attempts) - reported,
        "usageState": usage_state(len(attempts), reported),
        "usage": usage,
    }


def request_summary(request: Request) -> RequestSummary:
    """One request's own accounting; a reused request reports none of its source's."""
    local = is_local_execution(request)
    started = request.started_at is not None
    completed = request.completed_at
    return {
        "status": request.status,
        "wallMs": elapsed_ms(request.created_at, completed) if completed else None,
        "executorStarts": (
            LOCAL_EXECUTOR_START if local and started and reviewer_kind(request) != HUMAN else 0
        ),
        "toolCalls": _tool_counts([request] if local else []),
        **_usage_fields(_attempt_records(request)),
        "executionSource": execution_source(request),
    }


def summarized(request: Request) -> Request:
    """``request`` with its own summary. A settled request is saved with it once (reused,
    settled STALE by ``--reuse-only``, derived, committed), so the Run's end finds it
    unchanged and writes its row no second time. A request just settled takes it with
    its settlement, one document built: ``request_summarized(request, request_summary,
    **settlement)``."""
    return request_changed(request, summary=request_summary(request))


def run_summary(
    requests: list[Request], created: str, completed: str, executor_starts: int
) -> RunSummary:
    """The Run's totals over its local executions (each counted once) and what it reused."""
    counts: dict[str, int] = {}
    executed: Counters = {"total": 0, **dict.fromkeys(REVIEWER_KINDS, 0)}
    reused: Counters = {"total": 0, **dict.fromkeys(REVIEWER_KINDS, 0), "otherProfile": 0}
    local: list[Request] = []
    seen: set[str] = set()
    derived = 0
    for request in requests:
        counts[request.status] = counts.get(request.status, 0) + 1
        kind = reviewer_kind(request)
        if execution_source(request) == SourceKind.DERIVED:
            derived += 1  # a dependency eval: neither executed nor reused
        elif is_reused(request):
            reused["total"] += 1
            reused[kind] += 1
            if other_profile(request.profile, request.requested_profile):
                reused["otherProfile"] += 1
        elif is_local_execution(request) and request.execution_id not in seen:
            seen.add(str(request.execution_id))
            executed["total"] += 1
            executed[kind] += 1
            local.append(request)
    attempts = [counters for request in local for counters in _attempt_records(request)]
    return {
        "counts": counts,
        "executed": executed,
        "reused": reused,
        "derived": derived,
        "wallMs": elapsed_ms(created, completed),
        "executorStarts": executor_starts,
        **_usage_fields(attempts),
        "toolCalls": _tool_counts(local),
    }


def saved_usage(requests: Iterable[Request]) -> Counters:
    """The original counters of every reused request's source execution."""
    saved: Counters = {}
    for request in requests:
        if is_reused(request):
            for attempt in request.reused_usage or []:
                add_counters(saved, attempt_counters(attempt))
    return saved


def run_usage(requests: Iterable[Request], summary: RunSummary) -> RunUsage:
    """Top-level Run ``usage``: what this Run spent and what reuse saved it."""
    return {"spent": dict(summary["usage"]), "saved": saved_usage(requests)}


def usage_text(usage: RunUsage | Mapping[str, Counters]) -> str | None:
    """``Usage: spent …; saved …``, or None when nothing reported any usage (so unknown
    cost never prints as zero)."""
    spent, saved = usage.get("spent") or {}, usage.get("saved") or {}
    if not spent and not saved:
        return None
    return f"Usage: spent {_counters_text(spent)}; saved {_counters_text(saved)}"


def _counters_text(counters: Mapping[str, int]) -> str:
    if not counters:
        return "none reported"
    return ", ".join(f"{key} {value}" for key, value in sorted(counters.items()))
