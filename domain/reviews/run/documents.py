"""A Run's documents: the Run, its requests and executions as saved (camelCase JSON).

A document is built here whole, with every field present (``None`` until known), so a
reader never meets a missing key; the state store keeps it beside its indexed columns.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from domain.declarations.model import AgentProfile, DependencyProfile, HumanProfile, Profile
from domain.reviews.reuse.keys import KeyInputs
from domain.workspace import EvalRef
from ports.sessions import ProcessIdentity
from ports.state import ExecutionRecord, RequestRecord, RunRecord
from ports.statuses import ProfileKind, ReviewStatus

# What an execution shares with the request that ran it, besides how it settled.
EXECUTION_FIELDS_FROM_REQUEST = (
    "runId",
    "evalId",
    "key",
    "evalDefHash",
    "fingerprints",
    "profile",
    "sessionId",
    "startedAt",
)


@dataclass
class RunResult:
    run: dict[str, Any]
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.run["status"])


def profile_json(profile: Profile) -> dict[str, Any]:
    if isinstance(profile, AgentProfile):
        data: dict[str, Any] = {
            "kind": ProfileKind.AGENT,
            "backend": profile.backend,
            "model": profile.model,
            "timeoutMs": profile.timeout_ms,
        }
        for key, value in (
            ("reasoning", profile.reasoning),
            ("maxToolCalls", profile.max_tool_calls),
            ("maxTokens", profile.max_tokens),
        ):
            if value is not None:
                data[key] = value
        return data
    if isinstance(profile, HumanProfile):
        return {"kind": ProfileKind.HUMAN}
    if isinstance(profile, DependencyProfile):
        return {"kind": ProfileKind.DEPENDENCY, "dependsOn": list(profile.depends_on)}
    return {
        "kind": ProfileKind.RUNTIME,
        "command": profile.command,
        "args": list(profile.args),
        "timeoutMs": profile.timeout_ms,
    }


def new_run(
    run_id: str,
    repo: str,
    state_dir: str,
    created: str,
    *,
    selection: list[str],
    recursive: bool,
    ignore_gates: bool,
    force: bool,
    definitions: dict[str, Any],
    wait_timeout_ms: int | None,
) -> dict[str, Any]:
    """A RUNNING Run, before any of its requests settled."""
    return {
        "id": run_id,
        "repoPath": repo,
        "stateDir": state_dir,
        "status": ReviewStatus.RUNNING,
        "createdAt": created,
        "completedAt": None,
        "selection": selection,
        "recursive": recursive,
        "ignoreGates": ignore_gates,
        "force": force,
        "jobs": 1,
        "definitions": definitions,
        "executionsStarted": 0,
        "waitTimeoutMs": wait_timeout_ms,
        "waitTimedOut": False,
        "evidence": {},
        "validation": None,
        "error": None,
    }


def new_request(
    run_id: str,
    ordinal: int,
    ref: EvalRef,
    keys: KeyInputs,
    created: str,
    *,
    selected: bool,
    force: bool,
) -> dict[str, Any]:
    """A QUEUED request of ``ref`` in Run ``run_id``."""
    item = ref.eval
    return {
        "id": f"{run_id}-{ordinal}",
        "runId": run_id,
        "evalId": ref.qualified_id,
        "ordinal": ordinal,
        "selected": selected,  # False: run only because of --recursive
        "target": ref.artifact.name,
        "title": item.title,
        "profile": profile_json(item.profile),
        "requestedProfile": profile_json(item.profile),
        "evalDefHash": keys.def_hash,
        "payload": dict(item.payload),
        "key": keys.key,
        "fingerprints": dict(keys.fingerprints),
        "unkeyedReason": keys.unkeyed_reason,
        "force": force,
        "executionId": None,
        "source": None,
        "provenance": None,
        "usage": None,
        "reusedUsage": None,
        "toolCalls": [],
        "status": ReviewStatus.QUEUED,
        "createdAt": created,
        "startedAt": None,
        "completedAt": None,
        "result": None,
        "error": None,
        "errorCode": None,
        "blockedReason": None,
        "blockedBy": None,
        "producer": None,
        "sessionId": None,
        "cwd": None,
        "argv": None,
        "child": None,
    }


def new_execution(request: Mapping[str, Any], owner: ProcessIdentity) -> ExecutionRecord:
    """The RUNNING execution ``owner`` claims for ``request``."""
    return ExecutionRecord(
        id=f"execution-{request['id']}",
        key=request["key"],
        eval_def_hash=request["evalDefHash"],
        status=ReviewStatus.RUNNING,
        owner_pid=owner.pid,
        owner_start_time=owner.create_time,
        backend=request["profile"].get("backend"),
        completed_at=None,
        data={"id": f"execution-{request['id']}", "requestId": request["id"]},
    )


def run_record(run: Mapping[str, Any], repo: str) -> RunRecord:
    return RunRecord(run["id"], repo, run["status"], dict(run))


def request_record(request: Mapping[str, Any]) -> RequestRecord:
    return RequestRecord(
        id=request["id"],
        run_id=request["runId"],
        eval_id=request["evalId"],
        ordinal=request["ordinal"],
        execution_id=request["executionId"],
        status=request["status"],
        data=copy.deepcopy(dict(request)),
    )


def run_status(statuses: list[str], satisfied: bool) -> ReviewStatus:
    """Any eval ERROR ⇒ ERROR, else any RED ⇒ RED, else GREEN when every obligation of the
    required scope is met, else INCOMPLETE (``statuses``: requests' and evidence's)."""
    if ReviewStatus.ERROR in statuses:
        return ReviewStatus.ERROR
    if ReviewStatus.RED in statuses:
        return ReviewStatus.RED
    return ReviewStatus.GREEN if satisfied else ReviewStatus.INCOMPLETE
