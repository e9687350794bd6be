"""The JSON documents that cross layers: Runs, requests, executions, claims, store records.

A Run, a request and an execution the state store hands over are a frozen :class:`Run`,
:class:`Request` and :class:`Execution` (their JSON goes through ``kernel.document_codec``;
``RunDocument``, ``RequestDocument`` and ``ExecutionDocument`` remain the shape of that
JSON, as ``--json`` and a team store record carry it). The others are each a ``TypedDict``: at run time a plain ``dict`` (so saved state, ``--json`` output and
store records are byte for byte what they were), to mypy a fixed set of camelCase keys with
their types, so a mistyped key or a wrong value type is a type error. A key marked
``NotRequired`` appears only once something wrote it (a summary, a Human's definition, a
mirror's ``origin``). What stays ``dict[str, Any]`` inside them is open JSON by nature: a
result shaped by the eval's own schemas, a tool's arguments, the Run's recorded
declarations.

Text read back from saved JSON is a plain ``str`` (kinds, codes), so those fields are typed
``str``; ``ports.statuses`` members are ``str`` too and are written as is. A Run's, a
request's and an execution's ``status`` is typed by its own enum: the state store turns the
saved text back into its member when it reads a document.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, Required, TypedDict

from artifactize.ports.ids import EvalId, ExecutionId, RequestId, ReuseKey, RunId, SessionId
from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus, ValidationStatus

Counters = dict[str, int]
"""Token counters of one provider attempt, by the provider's own names."""


class ProfileDocument(TypedDict, total=False):
    """An eval's reviewer profile as saved (``profile``, ``requestedProfile``)."""

    kind: Required[str]  # ProfileKind
    backend: str  # agent
    model: str
    timeoutMs: int  # agent, runtime
    reasoning: str
    maxToolCalls: int
    maxTokens: int
    command: str  # runtime
    args: list[str]
    baseUrl: str  # agent: a declared endpoint
    dependsOn: list[str]  # dependency: the Artifacts its verdict is derived from


class AgentDocument(TypedDict):
    """Who answered an Agent review (``agent``): the endpoint and where it came from, the
    model requested and the one the provider reported (a dated snapshot of it)."""

    backend: str
    baseUrl: str | None
    endpointSource: str | None
    requestedModel: str
    reportedModel: str | None


class AttemptDocument(TypedDict):
    """One provider attempt's usage (``usage[]``); ``error`` when the attempt failed."""

    turn: int
    attempt: int
    usage: Counters
    error: NotRequired[str]


class ToolCallDocument(TypedDict):
    """The audit of one tool call (``toolCalls[]``)."""

    order: int
    name: str
    arguments: Any  # the tool's own arguments: open JSON
    result: str
    isError: bool
    error: str | None


class ProducerDocument(TypedDict, total=False):
    """Who produced a result: ``user@host`` and the artifactize version (both always
    written by artifactize; a store record requires them)."""

    name: str
    version: str
    session: str | None


class ProvenanceDocument(TypedDict):
    """Where a result was produced; ``repoPath`` is empty in a mirror, absent when shared."""

    repoPath: NotRequired[str | None]
    runId: RunId
    requestId: RequestId
    evalId: EvalId
    evalDefHash: str | None
    completedAt: str
    executionPaths: NotRequired[dict[str, dict[str, str]]]  # tool -> path -> digest


class SourceDocument(TypedDict):
    """Where a reused result came from (a request's ``source``)."""

    runId: RunId
    requestId: RequestId
    kind: str  # SourceKind


class OriginDocument(TypedDict):
    """The team review store a mirrored result came from (``origin``)."""

    storeUrl: str
    publisher: str | None
    publishedAt: str | None


class ChildDocument(TypedDict):
    """How a runtime eval's process ended and what it printed (a request's ``child``)."""

    exitCode: int | None
    signal: int | None
    stdout: str
    stderr: str
    durationMs: int
    truncated: dict[str, bool]  # stdout, stderr


class ProgramDocument(TypedDict):
    """The program a runtime eval ran (a request's ``program``): the path started (argv's
    first), the file it leads to once every link is followed, and a warning when that is
    the interpreter artifactize itself runs on (docs/runtime-evals.md)."""

    path: str
    realPath: str
    warning: str | None


class ValidationDocument(TypedDict):
    """A Run's ``validation``: whether its obligations are met, by Artifact and by eval."""

    status: ValidationStatus
    scope: list[str]
    artifacts: dict[str, str]  # Artifact name -> validation status
    evals: dict[str, str]  # qualified eval ID -> state
    unmetObligations: list[str]


class EvidenceDocument(TypedDict):
    """What the newest record of an eval's key says, for a scope eval the Run does not run."""

    status: RequestStatus  # the state the eval would have: its record's verdict, or UNREVIEWED
    key: ReuseKey | None
    executionId: NotRequired[ExecutionId]
    source: SourceDocument | None
    reason: str | None


class UsageSummary(TypedDict):
    """The usage accounting shared by request and Run summaries (``summaries``)."""

    attempts: int
    reportedAttempts: int
    unreportedAttempts: int
    usageState: str
    usage: Counters


class RequestSummary(UsageSummary):
    status: RequestStatus
    wallMs: int | None
    executorStarts: int
    toolCalls: dict[str, int]
    executionSource: str | None


class RunSummary(UsageSummary):
    counts: dict[str, int]
    executed: Counters
    reused: Counters
    derived: NotRequired[int]  # dependency evals: neither executed nor reused
    wallMs: int
    executorStarts: int
    toolCalls: dict[str, int]


class RunUsage(TypedDict):
    """A Run's top-level ``usage``: what it spent, what reuse saved it."""

    spent: Counters
    saved: Counters


class ArtifactDefinition(TypedDict):
    """An Artifact as a request or Run recorded it: where it is and how it is declared."""

    name: str
    kind: str  # folder | file
    path: str
    target: str | None
    children: dict[str, str]
    mounts: dict[str, str]
    tags: list[str]
    declaration: dict[str, Any]  # the whole declaration as plain JSON: open by design


class HumanDefinition(TypedDict):
    """What a Human request was recorded with (``humanDefinition``): its repository, its
    eval and every Artifact of its admitted scope; rebuilt and compared on every action."""

    repo: str
    eval: dict[str, Any]  # qualifiedId, artifact and the eval's declaration as plain JSON
    artifacts: dict[str, ArtifactDefinition]


class RunDefinitions(TypedDict):
    """A Run's ``definitions``: each selected eval and its owning Artifact."""

    evals: dict[str, dict[str, Any]]  # qualified eval ID -> the eval, as in HumanDefinition
    artifacts: dict[str, ArtifactDefinition]


class RequestDefinition(TypedDict):
    """A request's eval and owning Artifact, joined from its Run's ``definitions``."""

    eval: dict[str, Any]
    artifact: ArtifactDefinition | None


class OwnerDocument(TypedDict):
    """The process that runs a Run: its pid and start time, so a reader can tell it died."""

    pid: int
    startTime: float


class RunDocument(TypedDict):
    """A saved Run (``run show --json``); ``summary`` and ``usage`` once it ended."""

    id: RunId
    repoPath: str
    stateDir: str
    status: RunStatus
    createdAt: str
    completedAt: str | None
    selection: list[str]
    recursive: bool
    ignoreGates: bool
    force: bool
    jobs: int
    definitions: RunDefinitions
    executionsStarted: int
    waitTimeoutMs: int | None
    waitTimedOut: bool
    evidence: dict[str, EvidenceDocument]  # qualified eval ID -> evidence
    validation: ValidationDocument | None
    error: str | None
    summary: NotRequired[RunSummary]
    usage: NotRequired[RunUsage]
    owner: NotRequired[OwnerDocument | None]  # the process running it (dead owners settle)
    reuseOnly: NotRequired[list[str]]
    maxExecutions: NotRequired[int | None]
    fingerprintJobs: NotRequired[int | None]
    profileVariant: NotRequired[str | None]
    errorCode: NotRequired[str | None]  # ErrorCode: why it ended ERROR (OWNER_DIED)
    comment: NotRequired[str]  # verify --comment: why it was started


class RequestDocument(TypedDict):
    """One eval of a Run as saved (``request show --json`` without its joined views).

    ``selected`` is False for an eval run only because of ``--recursive``; ``source`` is
    set when the result was reused; a Human request records ``humanDefinition`` and
    ``runDir`` when it asks, and ``reviewer`` once someone signed it off."""

    id: RequestId
    runId: RunId
    evalId: EvalId
    ordinal: int
    selected: bool
    target: str
    title: str | None
    profile: ProfileDocument
    requestedProfile: ProfileDocument
    evalDefHash: str
    payload: dict[str, Any]  # the eval's own payload: open JSON
    key: ReuseKey | None
    fingerprints: dict[str, str]
    unkeyedReason: str | None
    force: bool
    executionId: ExecutionId | None
    source: SourceDocument | None
    provenance: ProvenanceDocument | None
    usage: list[AttemptDocument] | None
    reusedUsage: list[AttemptDocument] | None
    toolCalls: list[ToolCallDocument]
    status: RequestStatus
    createdAt: str
    startedAt: str | None
    completedAt: str | None
    result: dict[str, Any] | None  # shaped by the eval's pass/fail schema: open JSON
    error: str | None
    errorCode: str | None  # ErrorCode
    blockedReason: str | None
    blockedBy: list[str] | None
    producer: ProducerDocument | None
    sessionId: SessionId | None
    cwd: str | None
    argv: list[str] | None
    child: ChildDocument | None  # runtime reviews only
    program: NotRequired[ProgramDocument | None]  # runtime reviews only, once prepared
    agent: NotRequired[AgentDocument | None]  # Agent reviews only
    reason: NotRequired[str]  # a wait that ended without a verdict: superseded or cancelled
    endedBy: NotRequired[str | None]  # who cancelled it (None: superseded by verify)
    summary: NotRequired[RequestSummary]
    origin: NotRequired[OriginDocument | None]
    reviewer: NotRequired[str | None]
    humanDefinition: NotRequired[HumanDefinition]
    runDir: NotRequired[str]
    # The eval's Artifact file by file when the Run started: owner-relative path -> digest,
    # as its artifactsum computes them; None without one (a script fingerprint, none, or
    # too many files). Absent from documents saved before it was recorded.
    fileManifest: NotRequired[dict[str, str] | None]


class RequestListed(RequestDocument):
    """What a text ``request list`` shows of a request: the saved request and who claimed
    it (for a follower: who reviews the execution it waits on)."""

    claim: HumanClaimDocument | None


class RequestView(RequestListed):
    """``request show --json``: a ``RequestListed``, its source execution, its definition
    and its own current summary."""

    execution: ExecutionDocument | None
    definition: RequestDefinition | None


class SettledFields(TypedDict, total=False):
    """What settling writes over a request and over its execution alike (``commit``, a
    Human settlement); a superseded wait writes only its status, code, error and time. The
    status is each document's own (``ExecutionDocument``, ``RequestUpdate``)."""

    result: dict[str, Any] | None  # open JSON, as in a request
    error: str | None
    errorCode: str | None
    provenance: ProvenanceDocument
    usage: list[AttemptDocument] | None
    toolCalls: list[ToolCallDocument]
    producer: ProducerDocument | None
    reviewer: str | None
    completedAt: str | None
    cwd: str | None
    argv: list[str] | None
    child: ChildDocument | None
    program: ProgramDocument | None
    agent: AgentDocument | None


class ExecutionUpdate(SettledFields, total=False):
    """Fields written over an execution document: how it settled, with its own status."""

    status: ExecutionStatus


class ExecutionDocument(ExecutionUpdate, total=False):
    """One execution as saved: at first only who runs it (``id``, ``requestId``), then what
    it shares with its request, how it settled and (a mirror) where it came from."""

    id: ExecutionId  # always set; not Required only so a document may be built up from {}
    requestId: RequestId
    runId: RunId
    evalId: EvalId
    key: ReuseKey | None
    evalDefHash: str
    fingerprints: dict[str, str]
    fileManifest: dict[str, str] | None  # the request's, kept with the verdict
    kinds: dict[str, str]  # Artifact name -> folder | file
    profile: ProfileDocument
    sessionId: SessionId | None
    startedAt: str | None
    origin: OriginDocument


class LastVerdict(TypedDict):
    """``status``: the newest verdict of an eval ID under any key (``last``)."""

    runId: str | None
    verdict: str
    fingerprint: NotRequired[str]  # the eval's target's, when the record has it


class KeyChanges(TypedDict):
    """``status``: which key inputs changed since the newest record of a definition."""

    sinceRunId: str | None
    dependencies: list[str]  # Artifact names, the target included
    summary: str


class EvalStatusDocument(TypedDict):
    """One eval in ``status --json``: its state, what ``verify`` would do, and why."""

    evalId: str
    kind: str  # ProfileKind
    state: str
    action: str
    reason: str | None
    selected: bool
    included: bool
    evalDefHash: str | None
    fingerprint: str | None
    fingerprints: dict[str, str]
    key: str | None
    last: LastVerdict | None
    changes: KeyChanges | None
    program: NotRequired[ProgramDocument]  # a runtime eval: what it would run
    programError: NotRequired[str]  # a runtime eval whose program cannot be resolved


class StatusDocument(TypedDict):
    """``status --json``: what ``verify`` would do, read-only."""

    satisfied: bool
    selection: list[str]
    scope: list[str]
    evals: list[EvalStatusDocument]
    artifacts: dict[str, str]
    unmetObligations: list[str]
    actions: dict[str, int]
    fingerprintFailures: list[str]


class HumanClaimDocument(TypedDict):
    """The cooperative reviewer lock on a waiting Human request (``claim``)."""

    requestId: RequestId
    reviewer: str
    claimedAt: str


class RecordProfile(TypedDict):
    kind: str  # ProfileKind


class StoreRecord(TypedDict):
    """A remote review record, schema 2 (``domain/reviews/remote/record_format``).

    ``options`` holds the profile's backend settings, never a runtime command; ``result``
    is an Agent/Human result as is, a runtime one reduced to its verdict and exit facts;
    ``execution`` (a full share) is the execution document without ``provenance.repoPath``.
    """

    schema: int
    key: str
    evalDefHash: str
    fingerprints: dict[str, str]
    kinds: dict[str, str]
    verdict: str  # GREEN | RED
    evalId: str
    runId: str
    requestId: str
    executionId: str
    profile: RecordProfile
    options: dict[str, str | int]
    result: dict[str, Any]  # open JSON, as in a request
    usage: list[AttemptDocument]  # turn, attempt and usage only: error texts stay local
    startedAt: str | None
    completedAt: str
    reviewer: NotRequired[str | None]
    producer: NotRequired[ProducerDocument | None]
    executionPaths: NotRequired[dict[str, dict[str, str]]]
    execution: NotRequired[ExecutionDocument | None]
    publisher: NotRequired[str | None]
    publishedAt: NotRequired[str | None]


class RequestUpdate(SettledFields, total=False):
    """Fields written over a request document: a settlement's, and what asking a person,
    following a waiting execution or receiving another request's result adds."""

    status: RequestStatus
    profile: ProfileDocument
    reusedUsage: list[AttemptDocument] | None
    origin: OriginDocument | None
    executionId: ExecutionId | None
    source: SourceDocument | None
    blockedReason: str | None
    startedAt: str | None
    humanDefinition: HumanDefinition
    runDir: str


class EndedFields(TypedDict, total=False):
    """What ending a Human wait without a verdict adds to its requests and its execution
    (``HumanEnding``): why, by whom, and, for a supersession, the request that asked again."""

    reason: str
    endedBy: str | None
    supersededBy: str


class RequestEnding(RequestUpdate, EndedFields, total=False):
    """Fields written over every request of a Human wait that ends without a verdict."""


class ExecutionEnding(ExecutionUpdate, EndedFields, total=False):
    """Fields written over the execution of a Human wait that ends without a verdict."""


@dataclass(frozen=True, slots=True)
class Execution:
    """One execution as the domain holds it: frozen, typed, changed only by
    ``dataclasses.replace`` (``kernel.document_codec`` reads and writes its saved JSON).

    Every field stands for the camelCase key of the same name (``request_id`` for
    ``requestId``). ``keys`` are the JSON keys the document holds, in their saved order: a
    field listed there is written even when None (``"error": null``); a field not listed is
    written, after them, only once it holds a value. ``extra`` keeps the keys this version
    does not model (a mirror of a newer artifactize's execution), so nothing read is lost.
    """

    id: ExecutionId | None = None  # always set; None only in a hand-made or foreign document
    request_id: RequestId | None = None
    run_id: RunId | None = None
    eval_id: EvalId | None = None
    key: ReuseKey | None = None
    eval_def_hash: str | None = None
    fingerprints: dict[str, str] | None = None
    file_manifest: dict[str, str] | None = None  # the request's, kept with the verdict
    kinds: dict[str, str] | None = None  # Artifact name -> folder | file
    profile: ProfileDocument | None = None
    session_id: SessionId | None = None
    started_at: str | None = None
    status: ExecutionStatus | None = None  # None: a RUNNING execution just claimed
    result: dict[str, Any] | None = None  # open JSON, as in a request
    error: str | None = None
    error_code: str | None = None  # ErrorCode
    provenance: ProvenanceDocument | None = None
    usage: list[AttemptDocument] | None = None
    tool_calls: list[ToolCallDocument] | None = None
    producer: ProducerDocument | None = None
    reviewer: str | None = None
    completed_at: str | None = None
    cwd: str | None = None
    argv: list[str] | None = None
    child: ChildDocument | None = None
    program: ProgramDocument | None = None
    agent: AgentDocument | None = None
    origin: OriginDocument | None = None
    reason: str | None = None  # a Human wait ended without a verdict: why
    ended_by: str | None = None  # who cancelled it (None: superseded)
    extra: Mapping[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = ()


_NO_RUN_ID = RunId("")  # a hand-made document's: every saved Run has its ID


def _no_definitions() -> RunDefinitions:
    return {"evals": {}, "artifacts": {}}


@dataclass(frozen=True, slots=True)
class Run:
    """A Run as the domain holds it: frozen, typed, changed only by ``dataclasses.replace``
    (``kernel.document_codec`` reads and writes its saved JSON, ``RunDocument``'s shape).

    Every field stands for the camelCase key of the same name (``repo_path`` for
    ``repoPath``). ``keys`` are the JSON keys the document holds, in their saved order: a
    field listed there is written even when it holds its default (``"error": null``); a
    field not listed is written, after them, only once it holds something else. ``extra``
    keeps the keys this version does not model, so nothing read is lost. A key a document
    lacks reads as its field's default (a store test's document holds a few fields only)."""

    id: RunId = _NO_RUN_ID
    repo_path: str = ""
    state_dir: str = ""
    status: RunStatus = RunStatus.RUNNING
    created_at: str = ""
    completed_at: str | None = None
    selection: list[str] = field(default_factory=list)
    recursive: bool = False
    ignore_gates: bool = False
    force: bool = False
    jobs: int = 1
    definitions: RunDefinitions = field(default_factory=_no_definitions)
    executions_started: int = 0
    wait_timeout_ms: int | None = None
    wait_timed_out: bool = False
    evidence: dict[str, EvidenceDocument] = field(default_factory=dict)
    validation: ValidationDocument | None = None
    error: str | None = None
    summary: RunSummary | None = None  # once it ended
    usage: RunUsage | None = None  # once it ended
    owner: OwnerDocument | None = None  # the process running it (dead owners settle)
    reuse_only: list[str] | None = None
    max_executions: int | None = None
    fingerprint_jobs: int | None = None
    profile_variant: str | None = None
    error_code: str | None = None  # ErrorCode: why it ended ERROR (OWNER_DIED)
    comment: str | None = None  # verify --comment: why it was started
    extra: Mapping[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = ()


_NO_REQUEST_ID = RequestId("")  # a hand-made document's: every saved request has its ID
_NO_EVAL_ID = EvalId("")


def _no_profile() -> ProfileDocument:
    return {"kind": ""}


@dataclass(frozen=True, slots=True)
class Request:
    """One eval of a Run as the domain holds it: frozen, typed, changed only by
    ``dataclasses.replace`` (``kernel.document_codec`` reads and writes its saved JSON,
    ``RequestDocument``'s shape), keyed and defaulted as :class:`Run` is."""

    id: RequestId = _NO_REQUEST_ID
    run_id: RunId = _NO_RUN_ID
    eval_id: EvalId = _NO_EVAL_ID
    ordinal: int = 0
    selected: bool = True  # False: run only because of --recursive
    target: str = ""
    title: str | None = None
    profile: ProfileDocument = field(default_factory=_no_profile)
    requested_profile: ProfileDocument = field(default_factory=_no_profile)
    eval_def_hash: str = ""
    payload: dict[str, Any] = field(default_factory=dict)  # the eval's own payload
    key: ReuseKey | None = None
    fingerprints: dict[str, str] = field(default_factory=dict)
    unkeyed_reason: str | None = None
    force: bool = False
    execution_id: ExecutionId | None = None
    source: SourceDocument | None = None
    provenance: ProvenanceDocument | None = None
    usage: list[AttemptDocument] | None = None
    reused_usage: list[AttemptDocument] | None = None
    tool_calls: list[ToolCallDocument] = field(default_factory=list)
    status: RequestStatus = RequestStatus.QUEUED
    created_at: str = ""
    started_at: str | None = None
    completed_at: str | None = None
    result: dict[str, Any] | None = None  # shaped by the eval's pass/fail schema
    error: str | None = None
    error_code: str | None = None  # ErrorCode
    blocked_reason: str | None = None
    blocked_by: list[str] | None = None
    producer: ProducerDocument | None = None
    session_id: SessionId | None = None
    cwd: str | None = None
    argv: list[str] | None = None
    child: ChildDocument | None = None  # runtime reviews only
    program: ProgramDocument | None = None  # runtime reviews only, once prepared
    agent: AgentDocument | None = None  # Agent reviews only
    reason: str | None = None  # a wait that ended without a verdict: superseded or cancelled
    ended_by: str | None = None  # who cancelled it (None: superseded by verify)
    summary: RequestSummary | None = None
    origin: OriginDocument | None = None
    reviewer: str | None = None
    human_definition: HumanDefinition | None = None
    run_dir: str | None = None
    file_manifest: dict[str, str] | None = None  # the eval's Artifact file by file
    extra: Mapping[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = ()
