"""The text forms of ``verify``, ``run show``, ``run list`` and ``cache list``: a Run with
its requests, one line per eval, then the summary, usage, validation and the execution's
status; their ``--json`` forms are the documents themselves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from artifactize.ports.statuses import ProfileKind, RequestStatus

if TYPE_CHECKING:
    from artifactize.domain.reviews.run.documents import RunResult
    from artifactize.ports.documents import ValidationDocument

WAIT_TIMED_OUT_TEXT = (
    "Human wait timed out after {ms} ms; the requests stay open (artifactize request list)."
)


def _other_profile_text(count: int) -> str:
    """The Summary line's note on reused results another profile produced (none: empty)."""
    return f"; {count} produced by another profile" if count else ""


def _exit_detail(request: Mapping[str, Any]) -> str | None:
    """``exit N`` for a RED runtime request, executed or reused (its result keeps the code)."""
    if (
        request["status"] != RequestStatus.RED
        or request["profile"].get("kind") != ProfileKind.RUNTIME
    ):
        return None
    code = (request.get("result") or {}).get("exitCode")
    return f"exit {code}" if code is not None else None


def validation_lines(validation: ValidationDocument | None) -> list[str]:
    """``Validation: SATISFIED | NOT SATISFIED`` and one line per unmet obligation."""
    if not validation:
        return []  # a Run saved before validation existed, or cancelled before it
    unmet = validation.get("unmetObligations") or []
    lines = [f"Validation: {'NOT SATISFIED' if unmet else 'SATISFIED'}"]
    lines.extend(f"  Unmet obligation: {name}" for name in unmet)
    return lines


def run_text(result: RunResult) -> str:
    """The Run as ``verify`` prints it without ``--json``."""
    from artifactize.kernel.document_codec import request_json, run_json

    return _run_text(run_json(result.run), [request_json(r) for r in result.requests])


def _run_text(run: Mapping[str, Any], requests: Sequence[Mapping[str, Any]]) -> str:
    """The text of a Run's JSON document (as ``--json`` prints it) and its requests."""
    from artifactize.domain.reviews.run.sources import source_text
    from artifactize.domain.reviews.run.summaries import usage_text

    lines = [f"Run: {run['id']}"]
    if run.get("comment"):
        lines.append(f"Comment: {run['comment']}")
    for request in requests:
        line = f"  {request['evalId']} [{request['id']}]: {request['status']}"
        source = source_text(request)
        if source:
            line += f" ({source})"
        detail = request.get("error") or request.get("blockedReason") or _exit_detail(request)
        if detail:
            line += f" — {detail}"
        lines.append(line)
        program = request.get("program")
        if program is not None and program["warning"]:
            lines.append(f"    warning: {program['warning']}")
    summary: Mapping[str, Any] = run.get("summary") or {}
    executed = summary.get("executed", {})
    reused = summary.get("reused", {})
    lines.append(
        f"Summary: executed {executed.get('total', 0)} (runtime {executed.get('runtime', 0)}, "
        f"agent {executed.get('agent', 0)}, human {executed.get('human', 0)}), "
        f"reused {reused.get('total', 0)} (runtime {reused.get('runtime', 0)}, "
        f"agent {reused.get('agent', 0)}, human {reused.get('human', 0)})"
        + _other_profile_text(reused.get("otherProfile", 0))
    )
    if summary.get("derived"):
        lines.append(f"Derived: {summary['derived']} dependency evals (no execution).")
    usage = usage_text(run.get("usage") or {})
    if usage is not None:
        lines.append(usage)
    lines.extend(validation_lines(run.get("validation")))
    error = run.get("error")
    lines.append(f"Execution: {run['status']}" + (f" — {error}" if error else ""))
    if run.get("waitTimedOut"):
        lines.append(WAIT_TIMED_OUT_TEXT.format(ms=run.get("waitTimeoutMs")))
    return "\n".join(lines)


def run_show_text(view: Mapping[str, Any]) -> str:
    """``run show`` without ``--json``: the Run as ``verify`` prints it, from the document
    ``--json`` prints (the Run with its requests)."""
    return _run_text(view, list(view["requests"]))


def run_list_header(rows: list[dict[str, Any]]) -> str | None:
    """The header row naming ``run list``'s columns (none for no rows)."""
    if not rows:
        return None
    width = len(str(rows[0]["id"]))
    return f"{'RUN':<{width}}  {'STATUS':<10} {'CREATED':<30}  COUNTS"


def run_list_line(row: dict[str, Any]) -> str:
    counts = ", ".join(f"{k} {v}" for k, v in sorted(row["counts"].items()))
    return f"{row['id']}  {row['status']:<10} {row['createdAt']}  {counts}"


def cache_list_line(row: dict[str, Any]) -> str:
    return (
        f"{row['key']}  {row['verdict']:<5} {row['evalId']}  {row['completedAt']}  "
        f"{row['runId']}  records {row['records']}"
    )
