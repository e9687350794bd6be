"""A Run as it stands now, not as it was when ``verify`` returned.

A Run that ended INCOMPLETE because a person had not submitted yet keeps living: a later
submission settles its request (and the followers of that execution, in other Runs). So:

- **Summaries are computed when read.** ``run show``, ``run list`` and ``verify --json``
  compute each request's ``summary`` and the Run's ``summary`` and ``usage`` from the
  requests as they stand (``current_run``); the saved ones are only what was true at the end.
- **The status settles with the last waiting request.** ``settle_run`` is called by the
  state store inside the transaction that writes a Human settlement, for every ended Run a
  settled request belongs to: once none of its requests waits any more, its validation is
  recomputed from the Run's saved validation with the requests' current statuses (a
  request's eval state is its status; an eval the Run only looked up keeps its evidence)
  and its status moves from INCOMPLETE to GREEN, RED or ERROR when the rules say so
  (``documents.run_status``). A Run that is still RUNNING is left to its ``verify``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from artifactize.domain.reviews.run.documents import run_status
from artifactize.domain.reviews.run.summaries import request_summary, run_summary, run_usage
from artifactize.kernel.document_codec import request_json, run_changed, run_json
from artifactize.kernel.transitions import run_moves
from artifactize.ports.documents import Request, Run
from artifactize.ports.state import RequestRecord, RunRecord
from artifactize.ports.statuses import RequestStatus, RunStatus, ValidationStatus

# Request statuses that may still change without a new Run.
UNSETTLED = frozenset({RequestStatus.QUEUED, RequestStatus.RUNNING, RequestStatus.WAITING_HUMAN})
SATISFIED_ARTIFACT = frozenset({RequestStatus.GREEN, "BASIS"})
# The same as the columns hold them (a set of enum members matches plain text by hash only
# while every member's name is its value).
_UNSETTLED_TEXT = frozenset(str(status) for status in UNSETTLED)


def current_run(run: Run, requests: Sequence[Request]) -> dict[str, Any]:
    """The Run's JSON document (``run show --json``) with ``summary``, ``usage`` and each
    request's ``summary`` computed from ``requests`` as they stand; ``requests`` included
    (each its saved JSON with its ``summary``)."""
    data = run_json(_summarized(run, requests))
    data["requests"] = [{**request_json(r), "summary": request_summary(r)} for r in requests]
    return data


def _summarized(run: Run, requests: Sequence[Request]) -> Run:
    """``run`` with its ``summary`` and ``usage`` computed from ``requests``; a Run still
    RUNNING keeps what its verify saved so far."""
    completed = run.completed_at
    if not completed:
        return run
    summary = run_summary(
        list(requests), run.created_at, completed, int(run.executions_started or 0)
    )
    return run_changed(run, summary=summary, usage=run_usage(requests, summary))


def run_may_settle(status: str, request_statuses: frozenset[str]) -> bool:
    """Whether ``settle_run`` may settle a Run of ``status`` whose requests have these
    statuses: only an ended INCOMPLETE Run none of whose requests may still change. The
    store asks it from columns before it decodes a Run's requests for ``settle_run``."""
    return status == RunStatus.INCOMPLETE and request_statuses.isdisjoint(_UNSETTLED_TEXT)


def settle_run(run: RunRecord, requests: Sequence[RequestRecord]) -> RunRecord | None:
    """``run`` with its status, validation and summary settled by its requests' current
    statuses, or None when nothing changes (still RUNNING, or a request still waits)."""
    data = run.data
    if not data.completed_at or not run_may_settle(
        run.status, frozenset(r.status for r in requests)
    ):
        return None
    validation = data.validation
    if not isinstance(validation, Mapping):
        return None
    states = dict(validation.get("evals") or {})
    for request in requests:
        states[request.eval_id] = request.status
    artifacts = _artifact_states(validation, states)
    unmet = [name for name, status in artifacts.items() if status not in SATISFIED_ARTIFACT]
    statuses = [str(s) for s in states.values()]
    status = run_status(statuses, not unmet)
    if status == run.status:
        return None
    settled = run_changed(
        _summarized(data, [r.data for r in requests]),
        status=run_moves(run.status, status),
        validation={
            **validation,
            "status": ValidationStatus.NOT_SATISFIED if unmet else ValidationStatus.SATISFIED,
            "artifacts": artifacts,
            "evals": states,
            "unmetObligations": unmet,
        },
    )
    return RunRecord(run.id, run.repo, status, settled)


def _artifact_states(validation: Mapping[str, Any], states: Mapping[str, str]) -> dict[str, str]:
    """An Artifact with evals is GREEN when all of them are; one without keeps its saved
    status (BASIS, or UNREVIEWED: unmet for good)."""
    saved: Mapping[str, str] = validation.get("artifacts") or {}
    own: dict[str, list[str]] = {}
    for eval_id, state in states.items():
        own.setdefault(eval_id.split("/", 1)[0], []).append(state)
    result = {}
    for name, status in saved.items():
        if name not in own:
            result[name] = status
        elif all(state == RequestStatus.GREEN for state in own[name]):
            result[name] = RequestStatus.GREEN
        else:
            worst = next(
                (s for s in ("ERROR", "RED", "BLOCKED", "WAIT_DEPENDENCY") if s in own[name]),
                "INCOMPLETE",
            )
            result[name] = "WAIT" if worst == "WAIT_DEPENDENCY" else worst
    return result
