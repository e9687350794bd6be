"""A Run's documents: the Run, its requests and executions as saved (camelCase JSON).

A document is built here whole, with every field present (``None`` until known), so a
reader never meets a missing key; the state store keeps it beside its indexed columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from artifactize.domain.declarations.model import (
    AgentProfile,
    DependencyProfile,
    HumanProfile,
    Profile,
)
from artifactize.ports.documents import (
    Execution,
    ProfileDocument,
    ProvenanceDocument,
    Request,
    Run,
    RunDefinitions,
)
from artifactize.ports.ids import ExecutionId, RequestId, RunId
from artifactize.ports.state import ExecutionRecord, RequestRecord, RunRecord
from artifactize.ports.statuses import ExecutionStatus, ProfileKind, RequestStatus, RunStatus

if TYPE_CHECKING:  # annotations only: a reader of saved Runs (`run list`) needs no workspace
    from artifactize.domain.project.workspace import EvalRef
    from artifactize.domain.reviews.reuse.keys import KeyInputs
    from artifactize.ports.sessions import ProcessIdentity


@dataclass
class RunResult:
    """The Run being verified and its requests' current documents: each change replaces the
    frozen Run or a document (``RunContext.save`` puts a request back in its slot), none is
    modified."""

    run: Run
    requests: list[Request] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.run.status)


def profile_json(profile: Profile) -> ProfileDocument:
    if isinstance(profile, AgentProfile):
        data: ProfileDocument = {
            "kind": ProfileKind.AGENT,
            "backend": profile.backend,
            "model": profile.model,
            "timeoutMs": profile.timeout_ms,
        }
        if profile.reasoning is not None:
            data["reasoning"] = profile.reasoning
        if profile.max_tool_calls is not None:
            data["maxToolCalls"] = profile.max_tool_calls
        if profile.max_tokens is not None:
            data["maxTokens"] = profile.max_tokens
        if profile.base_url is not None:
            data["baseUrl"] = profile.base_url
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
    run_id: RunId,
    repo: str,
    state_dir: str,
    created: str,
    *,
    selection: list[str],
    recursive: bool,
    ignore_gates: bool,
    force: bool,
    definitions: RunDefinitions,
    wait_timeout_ms: int | None,
    owner: ProcessIdentity | None = None,
) -> Run:
    """A RUNNING Run, before any of its requests settled. ``owner`` (the process running
    it) lets a reader settle the Run should that process die (``StateStore.settle_dead_runs``)."""
    return Run(
        id=run_id,
        repo_path=repo,
        state_dir=state_dir,
        status=RunStatus.RUNNING,
        created_at=created,
        completed_at=None,
        selection=selection,
        recursive=recursive,
        ignore_gates=ignore_gates,
        force=force,
        jobs=1,
        definitions=definitions,
        executions_started=0,
        wait_timeout_ms=wait_timeout_ms,
        wait_timed_out=False,
        evidence={},
        validation=None,
        error=None,
        owner=None if owner is None else {"pid": owner.pid, "startTime": owner.create_time},
        keys=NEW_RUN_KEYS,
    )


# The keys a new Run is saved with, in their order (each, even None or False, written).
NEW_RUN_KEYS = (
    "id",
    "repoPath",
    "stateDir",
    "status",
    "createdAt",
    "completedAt",
    "selection",
    "recursive",
    "ignoreGates",
    "force",
    "jobs",
    "definitions",
    "executionsStarted",
    "waitTimeoutMs",
    "waitTimedOut",
    "evidence",
    "validation",
    "error",
    "owner",
)


def new_request(
    run_id: RunId,
    ordinal: int,
    ref: EvalRef,
    keys: KeyInputs,
    created: str,
    *,
    selected: bool,
    force: bool,
) -> Request:
    """A QUEUED request of ``ref`` in Run ``run_id``; ``agent`` (an Agent review's endpoint
    and requested/reported model) is set once it ran."""
    item = ref.eval
    return Request(
        id=RequestId(f"{run_id}-{ordinal}"),
        run_id=run_id,
        eval_id=ref.qualified_id,
        ordinal=ordinal,
        selected=selected,  # False: run only because of --recursive
        target=ref.artifact.name,
        title=item.title,
        profile=profile_json(item.profile),
        requested_profile=profile_json(item.profile),
        eval_def_hash=keys.def_hash,
        payload=dict(item.payload),
        key=keys.key,
        fingerprints=dict(keys.fingerprints),
        file_manifest=file_manifest(keys, ref.artifact.name),
        unkeyed_reason=keys.unkeyed_reason,
        force=force,
        tool_calls=[],
        status=RequestStatus.QUEUED,
        created_at=created,
        keys=NEW_REQUEST_KEYS,
    )


# The keys a new request is saved with, in their order (each, even None, written).
NEW_REQUEST_KEYS = (
    "id",
    "runId",
    "evalId",
    "ordinal",
    "selected",
    "target",
    "title",
    "profile",
    "requestedProfile",
    "evalDefHash",
    "payload",
    "key",
    "fingerprints",
    "fileManifest",
    "unkeyedReason",
    "force",
    "executionId",
    "source",
    "provenance",
    "usage",
    "reusedUsage",
    "toolCalls",
    "status",
    "createdAt",
    "startedAt",
    "completedAt",
    "result",
    "error",
    "errorCode",
    "blockedReason",
    "blockedBy",
    "producer",
    "sessionId",
    "cwd",
    "argv",
    "child",
    "agent",
)


def file_manifest(keys: KeyInputs, artifact: str) -> dict[str, str] | None:
    """The Artifact's files and digests as its artifactsum computed them (None without one),
    saved with the request and its verdict so a reviewer can see what changed since."""
    files = (keys.manifests.get(artifact) or {}).get("files")
    return dict(files) if isinstance(files, dict) else None


def new_execution(request: Request, owner: ProcessIdentity) -> ExecutionRecord:
    """The RUNNING execution ``owner`` claims for ``request``."""
    execution_id = ExecutionId(f"execution-{request.id}")
    return ExecutionRecord(
        id=execution_id,
        key=request.key,
        eval_def_hash=request.eval_def_hash,
        status=ExecutionStatus.RUNNING,
        owner_pid=owner.pid,
        owner_start_time=owner.create_time,
        backend=request.profile.get("backend"),
        completed_at=None,
        data=Execution(id=execution_id, request_id=request.id),
    )


# The keys every execution document opens with, in their saved order: its ID, then what
# it copies from its request. What follows depends on how the execution began.
EXECUTION_LEADING_KEYS = (
    "id",
    "requestId",
    "runId",
    "evalId",
    "key",
    "evalDefHash",
    "fingerprints",
    "fileManifest",
    "profile",
)
# What an execution shares with its request, in the order its saved JSON holds them.
FROM_REQUEST_KEYS = (*EXECUTION_LEADING_KEYS, "sessionId", "startedAt")


def execution_from_request(execution_id: ExecutionId, request: Request) -> Execution:
    """What an execution shares with the request that ran it, besides how it settled."""
    return Execution(
        id=execution_id,
        request_id=request.id,
        run_id=request.run_id,
        eval_id=request.eval_id,
        key=request.key,
        eval_def_hash=request.eval_def_hash,
        fingerprints=request.fingerprints,
        file_manifest=request.file_manifest,
        profile=request.profile,
        session_id=request.session_id,
        started_at=request.started_at,
        keys=FROM_REQUEST_KEYS,
    )


def provenance_of(record: ExecutionRecord) -> ProvenanceDocument:
    """Where a settled record's result was produced; ValueError naming a record without
    one (every record of the reuse history, every mirror has it)."""
    if record.data.provenance is None:
        raise ValueError(f"Execution {record.id} records no provenance.")
    return record.data.provenance


def run_record(run: Run, repo: str) -> RunRecord:
    return RunRecord(run.id, repo, run.status, run)


def request_record(request: Request) -> RequestRecord:
    """The record of ``request`` as it is now (frozen: the store keeps what it was given)."""
    return RequestRecord(
        id=request.id,
        run_id=request.run_id,
        eval_id=request.eval_id,
        ordinal=request.ordinal,
        execution_id=request.execution_id,
        status=request.status,
        data=request,
    )


def run_status(statuses: Sequence[str], satisfied: bool) -> RunStatus:
    """Any eval ERROR ⇒ ERROR, else any RED ⇒ RED, else GREEN when every obligation of the
    required scope is met, else INCOMPLETE (``statuses``: requests' and evidence's)."""
    if RequestStatus.ERROR in statuses:
        return RunStatus.ERROR
    if RequestStatus.RED in statuses:
        return RunStatus.RED
    return RunStatus.GREEN if satisfied else RunStatus.INCOMPLETE
