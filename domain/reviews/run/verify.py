"""``verify``: a Run over selected evals, reusing every verdict whose key still holds.

The Run's obligation is its *required scope*: the selected evals' targets and every
Artifact they consume, transitively (``gates.required_scope``); each needs all of its own
evals GREEN, or ``basis``. Selected evals (with ``recursive``: every eval of the scope)
get a request; the scope's other evals are only looked up for reuse and recorded in the
Run's ``evidence`` (never executed). Every keyed selected eval first attaches the newest
GREEN/RED record of its key, before any gate resolves (a reused result starts nothing: no
pin, no backend, no tool, no session, no process).

Then ``scheduler.schedule`` dispatches the first READY request in selection order (its
gate: every eval of its direct input components GREEN), again after every result: claim
the key, wait behind a live execution of it and reuse what it produced (``joined``), or
own a new execution, run the review (``AgentReview`` or ``RuntimeReview``, by profile kind)
and commit it. A request whose gate does not open is saved WAIT_DEPENDENCY or BLOCKED.
``ignore_gates`` (or ``dependency_gates = "ignore"``) lets every eval run at once; the
obligations stay.

A Human eval runs nothing here (``human_requests``): it reuses, follows a Human execution of
its key that already waits, or asks a person (``WAITING_HUMAN``). Without ``wait`` the Run
then ends INCOMPLETE; with it, ``verify`` polls until the people submitted (the verdicts
settle this same Run) or the deadline passed (``waitTimedOut``; the requests stay open).

With a team review store, keys still without a result are looked up again just before each
keyed claim and on each wait poll (``RemoteSync.refresh``, rate-limited per key).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from domain.declarations.model import AgentProfile, HumanProfile, Profile, RuntimeProfile
from domain.reviews.agent.conversations import review_event, trace_events
from domain.reviews.agent.review import AgentReview, ReviewOutcome, ReviewPorts
from domain.reviews.human.asking import (
    WAIT_TIMEOUT_DEFAULT_MS,
    WAITING_HUMAN,
    asking_fields,
    check_wait_timeout,
    following_fields,
    wait_for_humans,
    waiting_execution,
)
from domain.reviews.human.recorded_declarations import human_definition, run_definitions
from domain.reviews.remote.records import MIRROR_PREFIX
from domain.reviews.remote.sync import RemoteSync
from domain.reviews.reuse.keys import KeyInputs, key_inputs
from domain.reviews.run.failures import FailureCode
from domain.reviews.run.gates import UNREVIEWED, Gate, Readiness, required_scope, scope_evals
from domain.reviews.run.scheduler import ScheduleActions, ScheduleInputs, schedule
from domain.reviews.run.summaries import request_summary, run_summary, run_usage
from domain.reviews.runtime.review import RuntimePorts, RuntimeReview
from domain.reviews.timestamps import new_run_id, timestamp
from domain.workspace import EvalRef, UnknownName, Workspace
from ports.callbacks import OutputRoots, ProgressSink
from ports.clock import Sleeper
from ports.conversations import ConversationStore
from ports.ids import IdSource
from ports.review_store import RemoteFailure
from ports.sessions import ProcessIdentity, ProcessTable
from ports.state import ClaimOutcome, ExecutionRecord, RequestRecord, RunRecord, StateStore
from ports.statuses import VERDICTS, ErrorCode, ProfileKind, ReviewStatus, SourceKind

JOIN_POLL_SECONDS = 0.2
SESSION_ID_CHARS = 32  # lowercase hex digits: 128 random bits
_HEX_DIGITS = "0123456789abcdef"
WAITING_FOR_KEY = "Waiting for the active execution of this reuse key."
WAIT_CANCELLED = "The Run was cancelled while waiting for Human reviews."
STARTED_NOTICE = "Started {run_id} (follow: artifactize run show {run_id} --wait)"
WAITING_NOTICE = (
    "Waiting for Human reviews: {ids} (artifactize request claim/tool/submit, "
    "from another terminal)."
)
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
UNEXPECTED = "The review failed unexpectedly"
NO_RUNTIME_PORTS = "Runtime evals are not run here: no process runner is configured."
NOT_SELECTED = (
    "Not selected, and no reusable verdict of its key: select it, or verify with --recursive."
)
NOT_SELECTED_UNKEYED = (
    "Not selected, and it has no reuse key ({reason}): select it, or verify with --recursive."
)
# Request statuses still without a result: their keys are looked up again in the store.
UNRESOLVED = frozenset(
    {ReviewStatus.QUEUED, ReviewStatus.WAIT_DEPENDENCY, ReviewStatus.BLOCKED, WAITING_HUMAN}
)
IGNORE_GATES = "ignore"  # review_policy.dependency_gates that bypasses execution gates


class SelectionError(Exception):
    """A selector that names nothing, or names something unknown (exit 2)."""


@dataclass(frozen=True)
class VerifyPorts:
    review: ReviewPorts
    state: StateStore
    processes: ProcessTable
    make_output_root: OutputRoots  # Run ID -> a private output root for its tools
    producer: Mapping[str, Any]  # {"name": "user@host", "version": "..."}
    ids: IdSource  # Run and conversation IDs
    conversations: ConversationStore | None = None
    sleep: Sleeper = anyio.sleep
    runtime: RuntimePorts | None = None  # None: runtime evals stay UNREVIEWED
    remote: RemoteSync | None = None  # the team review store, when one is configured
    progress: ProgressSink | None = None  # notices for the person at the terminal


@dataclass(frozen=True)
class VerifyOptions:
    repo: str
    state_dir: str
    force: bool = False
    wait: bool = False  # poll until the Run's Human requests settle
    recursive: bool = False  # execute every eval of the required scope, not only the selected
    ignore_gates: bool = False  # run evals whose inputs are not GREEN yet (obligations stay)
    wait_timeout_ms: int = WAIT_TIMEOUT_DEFAULT_MS  # from when scheduling starts

    def __post_init__(self) -> None:
        check_wait_timeout(self.wait_timeout_ms)


@dataclass
class RunResult:
    run: dict[str, Any]
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.run["status"])


def select_evals(workspace: Workspace, selector: str | None, select_all: bool) -> list[EvalRef]:
    """``ARTIFACT`` (its evals in ID order), ``ARTIFACT/EVAL``, or every eval."""
    if select_all:
        refs = list(workspace.evals())
        if not refs:
            raise SelectionError("The workspace declares no evals.")
        return refs
    if not selector:
        raise SelectionError("Select evals: ARTIFACT, ARTIFACT/EVAL, --eval ID or --all.")
    try:
        if "/" in selector:
            return [workspace.find_eval(selector)]
        artifact = workspace.artifact(selector)
    except UnknownName as exc:
        raise SelectionError(str(exc)) from None
    if not artifact.evals:
        raise SelectionError(f"Artifact `{selector}` declares no evals.")
    return [EvalRef(artifact, item) for item in artifact.evals]


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
    return {
        "kind": ProfileKind.RUNTIME,
        "command": profile.command,
        "args": list(profile.args),
        "timeoutMs": profile.timeout_ms,
    }


class Verify:
    def __init__(self, ports: VerifyPorts, workspace: Workspace, options: VerifyOptions) -> None:
        self.ports = ports
        self.workspace = workspace
        self.options = options
        self.owner: ProcessIdentity = ports.processes.own_identity()
        self.result: RunResult | None = None  # set once the Run exists, even if cancelled
        self._keys: dict[str, KeyInputs] = {}  # qualified eval ID -> key, from ``prepare``
        self._announced: set[str] = set()  # request IDs named in a waiting notice

    def _now(self) -> str:
        return timestamp(self.ports.review.clock.now())

    def prepare(self, refs: list[EvalRef]) -> list[KeyInputs]:
        """Keys of every eval of the required scope (kept for ``run``); the selected evals'
        in order. Raises FingerprintError before any Run exists."""
        for ref in [*refs, *scope_evals(self.workspace, required_scope(self.workspace, refs))]:
            self._key(ref)
        return [self._key(ref) for ref in refs]

    def _key(self, ref: EvalRef) -> KeyInputs:
        found = self._keys.get(ref.qualified_id)
        if found is None:
            review = self.ports.review
            found = key_inputs(
                self.workspace, ref.qualified_id, review.tools.filesystem, review.scripts
            )
            self._keys[ref.qualified_id] = found
        return found

    @property
    def ignore_gates(self) -> bool:
        return self.options.ignore_gates or self.workspace.dependency_gates == IGNORE_GATES

    async def run(self, refs: list[EvalRef], keys: list[KeyInputs]) -> RunResult:
        scope = required_scope(self.workspace, refs)
        selected = {ref.qualified_id for ref in refs}
        others = [r for r in scope_evals(self.workspace, scope) if r.qualified_id not in selected]
        if self.options.recursive:  # the scope's other evals run too, in configuration order
            refs, keys = [*refs, *others], [*keys, *(self._key(r) for r in others)]
            others = []
        other_keys = [self._key(ref) for ref in others]  # before the Run: may raise
        run_id = new_run_id(self.ports.ids)
        created = self._now()
        run: dict[str, Any] = {
            "id": run_id,
            "repoPath": self.options.repo,
            "stateDir": self.options.state_dir,
            "status": ReviewStatus.RUNNING,
            "createdAt": created,
            "completedAt": None,
            "selection": [ref.qualified_id for ref in refs if ref.qualified_id in selected],
            "recursive": self.options.recursive,
            "ignoreGates": self.ignore_gates,
            "force": self.options.force,
            "jobs": 1,
            "definitions": run_definitions([*refs, *others]),
            "executionsStarted": 0,
            "waitTimeoutMs": self.options.wait_timeout_ms if self.options.wait else None,
            "waitTimedOut": False,
            "evidence": {},
            "validation": None,
            "error": None,
        }
        requests = [
            self._request(run_id, ordinal, ref, key, created, ref.qualified_id in selected)
            for ordinal, (ref, key) in enumerate(zip(refs, keys, strict=True), start=1)
        ]
        remote = self.ports.remote
        if remote is not None and not self.options.force:
            # Before anything is claimed; a refusal (fail closed) leaves no Run behind.
            wanted = [k.key for k in [*keys, *other_keys] if k.key is not None]
            await remote.mirror(
                wanted,
                self.ports.state,
                self.ports.review.clock.monotonic(),
                settled_at=self._now(),
            )
        self.ports.state.create_run(self._run_record(run), [_request_record(r) for r in requests])
        if self.ports.progress is not None:  # so another terminal can follow this Run
            self.ports.progress(STARTED_NOTICE.format(run_id=run_id))
        result = self.result = RunResult(run, requests)
        settle = dict(zip((r["id"] for r in requests), zip(refs, keys, strict=True), strict=True))
        clock = self.ports.review.clock
        deadline = clock.monotonic() + self.options.wait_timeout_ms / 1000

        async def settle_request(request: dict[str, Any]) -> None:
            ref, key = settle[request["id"]]
            await self._settle_request(ref, key, request)

        async def wait_for_human(waiting: list[dict[str, Any]]) -> bool:
            return await self._wait_for_human(result, waiting, deadline)

        actions = ScheduleActions(
            settle_request, self._park, wait_for_human if self.options.wait else None
        )
        try:
            for ref, key in zip(others, other_keys, strict=True):
                run["evidence"][ref.qualified_id] = self._evidence(key)
            for key, request in zip(keys, requests, strict=True):
                self._attach_cached(key, request)
            await schedule(self._schedule_inputs(result, scope), actions)
        except RemoteFailure as failure:
            run["error"] = failure.message
            raise
        finally:
            with anyio.CancelScope(shield=True):
                self._finish_run(result, self._schedule_inputs(result, scope))
        return result

    def _schedule_inputs(self, result: RunResult, scope: tuple[str, ...]) -> ScheduleInputs:
        evidence = result.run["evidence"]
        return ScheduleInputs(self.workspace, scope, self.ignore_gates, result.requests, evidence)

    def _evidence(self, keys: KeyInputs) -> dict[str, Any]:
        """What the newest record of an eval's key says, for an eval this Run does not run."""
        if keys.key is None:
            reason = NOT_SELECTED_UNKEYED.format(reason=keys.unkeyed_reason)
            return {"status": UNREVIEWED, "key": None, "source": None, "reason": reason}
        record = self.ports.state.latest_record(keys.key, touch=True)
        if record is None:
            return {"status": UNREVIEWED, "key": keys.key, "source": None, "reason": NOT_SELECTED}
        provenance = record.data["provenance"]
        return {
            "status": record.status,
            "key": keys.key,
            "executionId": record.id,
            "source": {
                "runId": provenance["runId"],
                "requestId": provenance["requestId"],
                "kind": _source_kind(record, joined=False),
            },
            "reason": None,
        }

    def _attach_cached(self, keys: KeyInputs, request: dict[str, Any]) -> None:
        """Reuse the newest record of a selected eval's key before any gate resolves: a
        lookup starts nothing, so it need not wait for the eval's inputs."""
        if keys.key is None or self.options.force:
            return
        if self._not_run_reason(self.workspace.find_eval(request["evalId"]).eval.profile):
            return
        record = self.ports.state.latest_record(keys.key, touch=True)
        if record is not None:
            self._reuse(request, record, _source_kind(record, joined=False))

    def _park(self, request: dict[str, Any], gate: Gate) -> None:
        """Save a request whose gate is not open: WAIT_DEPENDENCY or BLOCKED, and why."""
        blocked = gate.readiness is Readiness.BLOCKED
        status = ReviewStatus.BLOCKED if blocked else ReviewStatus.WAIT_DEPENDENCY
        blocked_by = gate.blocked_by if blocked else None
        reason = gate.reason()
        if (request["status"], request["blockedReason"], request.get("blockedBy")) == (
            status,
            reason,
            blocked_by,
        ):
            return
        request.update({"status": status, "blockedReason": reason, "blockedBy": blocked_by})
        self.ports.state.update_request(_request_record(request))

    def _request(
        self,
        run_id: str,
        ordinal: int,
        ref: EvalRef,
        keys: KeyInputs,
        created: str,
        selected: bool,
    ) -> dict[str, Any]:
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
            "force": self.options.force,
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

    def _run_record(self, run: Mapping[str, Any]) -> RunRecord:
        return RunRecord(run["id"], self.options.repo, run["status"], dict(run))

    def _not_run_reason(self, profile: Profile) -> str | None:
        """Why this ``verify`` does not review an eval of this kind, or None when it does."""
        if isinstance(profile, RuntimeProfile) and self.ports.runtime is None:
            return NO_RUNTIME_PORTS
        return None

    async def _settle_request(self, ref: EvalRef, keys: KeyInputs, request: dict[str, Any]) -> None:
        reason = self._not_run_reason(ref.eval.profile)
        if reason is not None:
            request["status"] = UNREVIEWED
            request["blockedReason"] = reason
            self.ports.state.update_request(_request_record(request))
            return
        human = isinstance(ref.eval.profile, HumanProfile)
        execution = self._execution(request)
        holds_key = keys.key is not None and not self.options.force
        if holds_key:
            joined = False
            while True:
                await self._refresh_remote([request])
                claim = self.ports.state.claim(execution, self._owner_alive)
                if claim.outcome is ClaimOutcome.REUSED:
                    assert claim.record is not None
                    self._reuse(request, claim.record, _source_kind(claim.record, joined))
                    return
                if claim.outcome is ClaimOutcome.OWNED:
                    break
                assert claim.record is not None
                if human and claim.record.status == WAITING_HUMAN:
                    self._follow(request, claim.record)
                    return
                if not joined:
                    joined = True
                    request["blockedReason"] = WAITING_FOR_KEY
                    self.ports.state.update_request(_request_record(request))
                await self.ports.sleep(JOIN_POLL_SECONDS)
        else:
            execution = dataclasses.replace(execution, key=None)
            if not human:
                self.ports.state.insert_execution(execution)
        if human:
            self._ask_human(ref, keys, request, execution, holds_key=holds_key)
            return
        await self._execute(ref, keys, request, execution)

    def _ask_human(
        self,
        ref: EvalRef,
        keys: KeyInputs,
        request: dict[str, Any],
        execution: ExecutionRecord,
        *,
        holds_key: bool,
    ) -> None:
        """Record what a person will review and wait for them; no executor start.

        An execution holding its key turns RUNNING -> WAITING_HUMAN in place (it keeps the
        key), *after* the request is saved waiting: a crash in between leaves a RUNNING
        execution of a dead owner, which the next claim of the key takes over, never a
        waiting execution nobody can claim. An unkeyed or forced one holds no key and is
        inserted waiting before the request that points at it."""
        run_dir = self.ports.make_output_root(request["runId"])
        definition = human_definition(self.workspace, self.options.repo, ref.qualified_id)
        request.update(asking_fields(execution.id, definition, run_dir, self._now()))
        kinds = {name: self.workspace.artifact(name).kind.value for name in keys.dependencies}
        waiting = waiting_execution(execution, request, kinds)
        if holds_key:
            self.ports.state.update_request(_request_record(request))
            self.ports.state.complete_execution(waiting, record=False)
        else:
            self.ports.state.insert_execution(waiting)
            self.ports.state.update_request(_request_record(request))

    def _follow(self, request: dict[str, Any], holder: ExecutionRecord) -> None:
        """Share the result of another request's waiting Human execution of this key."""
        request.update(following_fields(holder))
        request["startedAt"] = self._now()
        self.ports.state.update_request(_request_record(request))

    async def _wait_for_human(
        self, result: RunResult, waiting: list[dict[str, Any]], deadline: float
    ) -> bool:
        """Wait until one of ``waiting`` settles (True: the deadline passed first); tell the
        person at the terminal which requests wait, whenever new ones do."""
        fresh = [r["id"] for r in waiting if r["id"] not in self._announced]
        if fresh and self.ports.progress is not None:
            self.ports.progress(WAITING_NOTICE.format(ids=", ".join(fresh)))
        self._announced.update(fresh)
        try:
            timed_out = await wait_for_humans(
                self.ports.state,
                waiting,
                deadline,
                self.ports.review.clock,
                self.ports.sleep,
                first=True,
                on_poll=lambda: self._refresh_remote(result.requests),
            )
        except anyio.get_cancelled_exc_class():
            result.run["error"] = WAIT_CANCELLED
            raise
        result.run["waitTimedOut"] = timed_out
        return timed_out

    async def _refresh_remote(self, requests: list[dict[str, Any]]) -> None:
        """Ask the team store again for the keys of ``requests`` still without a result
        (rate-limited per key by ``RemoteSync.refresh``); never with ``force``."""
        remote = self.ports.remote
        if remote is None or self.options.force:
            return
        keys = [r["key"] for r in requests if r["key"] and r["status"] in UNRESOLVED]
        await remote.refresh(
            keys, self.ports.state, self.ports.review.clock.monotonic(), settled_at=self._now()
        )

    def _owner_alive(self, pid: int, start_time: float) -> bool:
        return self.ports.processes.is_alive(ProcessIdentity(pid, start_time))

    def _execution(self, request: Mapping[str, Any]) -> ExecutionRecord:
        return ExecutionRecord(
            id=f"execution-{request['id']}",
            key=request["key"],
            eval_def_hash=request["evalDefHash"],
            status=ReviewStatus.RUNNING,
            owner_pid=self.owner.pid,
            owner_start_time=self.owner.create_time,
            backend=request["profile"].get("backend"),
            completed_at=None,
            data={"id": f"execution-{request['id']}", "requestId": request["id"]},
        )

    def _reuse(self, request: dict[str, Any], record: ExecutionRecord, kind: SourceKind) -> None:
        data = record.data
        request.update(
            {
                "status": data["status"],
                "result": copy.deepcopy(data["result"]),
                "profile": data["profile"],
                "provenance": data["provenance"],
                "usage": None,
                "reusedUsage": data.get("usage"),
                "toolCalls": [],
                "producer": data.get("producer"),
                "origin": data.get("origin"),
                "reviewer": data.get("reviewer"),
                "sessionId": data.get("sessionId"),
                "executionId": record.id,
                "source": {
                    "runId": data["provenance"]["runId"],
                    "requestId": data["provenance"]["requestId"],
                    "kind": kind,
                },
                "completedAt": self._now(),
                "blockedReason": None,
            }
        )
        self.ports.state.update_request(_request_record(request))

    async def _execute(
        self,
        ref: EvalRef,
        keys: KeyInputs,
        request: dict[str, Any],
        execution: ExecutionRecord,
    ) -> None:
        request.update(
            {
                "status": ReviewStatus.RUNNING,
                "startedAt": self._now(),
                "executionId": execution.id,
                "blockedReason": None,
            }
        )
        self.ports.state.update_request(_request_record(request))
        assert self.result is not None
        self.result.run["executionsStarted"] += 1
        review = self._review(ref, keys, self.ports.make_output_root(request["runId"]))
        outcome: ReviewOutcome | None = None
        try:
            outcome = await review.run()
        except Exception as exc:  # a bug must still settle the request (sessions are stopped)
            trace = review.trace if isinstance(review, AgentReview) else None
            message = f"{UNEXPECTED}: {type(exc).__name__}: {exc}"
            outcome = ReviewOutcome.failed(FailureCode.AGENT_ERROR, message, trace)
        finally:
            with anyio.CancelScope(shield=True):
                settled = outcome or review.cancelled_outcome()
                if isinstance(review, AgentReview):
                    self._save_conversation(request, review, settled)
                committed, recorded = self._commit(request, execution, settled)
        if recorded and self.ports.remote is not None:
            await self.ports.remote.publish(committed.data, committed.data["kinds"])

    def _review(self, ref: EvalRef, keys: KeyInputs, run_dir: str) -> AgentReview | RuntimeReview:
        """The review that executes this eval, by profile kind."""
        if isinstance(ref.eval.profile, RuntimeProfile):
            assert self.ports.runtime is not None  # _not_run_reason let it through
            return RuntimeReview(self.ports.runtime, self.workspace, ref, keys, run_dir)
        return AgentReview(self.ports.review, self.workspace, ref, keys, run_dir)

    def _save_conversation(
        self, request: dict[str, Any], review: AgentReview, outcome: ReviewOutcome
    ) -> None:
        """Keep the conversation for ``session show`` and ``session send``."""
        store = self.ports.conversations
        if store is None or review.prompt is None:
            return
        session_id = self.ports.ids.choose(_HEX_DIGITS, SESSION_ID_CHARS)
        at = self._now()
        header = {
            "sessionId": session_id,
            "requestId": request["id"],
            "runId": request["runId"],
            "evalId": request["evalId"],
            "repoPath": self.options.repo,
            "backend": request["profile"].get("backend"),
            "model": request["profile"].get("model"),
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
        request["sessionId"] = session_id

    def _commit(
        self, request: dict[str, Any], execution: ExecutionRecord, outcome: ReviewOutcome
    ) -> tuple[ExecutionRecord, bool]:
        """Save the request and its execution; the settled execution and whether it joined
        the key's reuse history."""
        completed = self._now()
        provenance: dict[str, Any] = {
            "repoPath": self.options.repo,
            "runId": request["runId"],
            "requestId": request["id"],
            "evalId": request["evalId"],
            "evalDefHash": request["evalDefHash"],
            "completedAt": completed,
        }
        if outcome.execution_paths:
            provenance["executionPaths"] = {k: dict(v) for k, v in outcome.execution_paths.items()}
        settled_fields = {
            "status": outcome.status,
            "result": outcome.result,
            "error": outcome.error,
            "errorCode": outcome.error_code,
            "provenance": provenance,
            "usage": [attempt.to_json() for attempt in outcome.trace.attempts],
            "toolCalls": [call.to_json() for call in outcome.trace.tool_calls],
            "producer": dict(self.ports.producer),
            "completedAt": completed,
            "cwd": outcome.cwd,
            "argv": list(outcome.argv) if outcome.argv is not None else None,
            "child": outcome.child,
        }
        request.update(copy.deepcopy(settled_fields))
        data = {
            "id": execution.id,
            "requestId": request["id"],
            **{name: request[name] for name in EXECUTION_FIELDS_FROM_REQUEST},
            "kinds": {
                name: self.workspace.artifact(name).kind.value for name in request["fingerprints"]
            },
            **settled_fields,
        }
        verdict = outcome.status in VERDICTS
        settled = dataclasses.replace(
            execution,
            key=request["key"] if verdict else execution.key,
            status=outcome.status,
            completed_at=completed,
            data=data,
        )
        recorded = self.ports.state.complete_execution(
            settled,
            record=verdict and request["key"] is not None,
            request=_request_record(request),
        )
        return settled, recorded

    def _finish_run(self, result: RunResult, inputs: ScheduleInputs) -> None:
        run = result.run
        for request in result.requests:
            if request["status"] in (ReviewStatus.QUEUED, ReviewStatus.RUNNING):
                request.update(
                    {
                        "status": ReviewStatus.ERROR,
                        "errorCode": ErrorCode.CANCELLED,
                        "error": "The Run was cancelled before this request settled.",
                        "completedAt": self._now(),
                    }
                )
                self.ports.state.update_request(_request_record(request))
        statuses = [r["status"] for r in result.requests]
        statuses.extend(entry["status"] for entry in run["evidence"].values())
        graph = inputs.graph()  # after the cancelled requests settled ERROR
        run["validation"] = graph.to_json()
        run["status"] = (
            ReviewStatus.ERROR if run["error"] else run_status(statuses, graph.satisfied)
        )
        run["completedAt"] = self._now()
        for request in result.requests:
            request["summary"] = request_summary(request)
            if request["status"] != WAITING_HUMAN:  # a person may be settling it right now
                self.ports.state.update_request(_request_record(request))
        run["summary"] = run_summary(
            list(result.requests), run["createdAt"], run["completedAt"], run["executionsStarted"]
        )
        run["usage"] = run_usage(result.requests, run["summary"])
        self.ports.state.update_run(self._run_record(run))


def run_status(statuses: list[str], satisfied: bool) -> ReviewStatus:
    """Any eval ERROR ⇒ ERROR, else any RED ⇒ RED, else GREEN when every obligation of the
    required scope is met, else INCOMPLETE (``statuses``: requests' and evidence's)."""
    if ReviewStatus.ERROR in statuses:
        return ReviewStatus.ERROR
    if ReviewStatus.RED in statuses:
        return ReviewStatus.RED
    return ReviewStatus.GREEN if satisfied else ReviewStatus.INCOMPLETE


def _source_kind(record: ExecutionRecord, joined: bool) -> SourceKind:
    """How a reused result was found: a mirrored store record, a wait, or local history."""
    if record.id.startswith(MIRROR_PREFIX):
        return SourceKind.REMOTE
    return SourceKind.JOINED if joined else SourceKind.CACHE


def _request_record(request: Mapping[str, Any]) -> RequestRecord:
    return RequestRecord(
        id=request["id"],
        run_id=request["runId"],
        eval_id=request["evalId"],
        ordinal=request["ordinal"],
        execution_id=request["executionId"],
        status=request["status"],
        data=copy.deepcopy(dict(request)),
    )
