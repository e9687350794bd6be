"""``verify``: a Run over selected evals, reusing every verdict whose key still holds.

The Run's obligation is its *required scope*: the selected evals' targets and every
Artifact they consume, transitively (``gates.required_scope``); each needs all of its own
evals GREEN, or ``basis``. Selected evals (with ``recursive``: every eval of the scope)
get a request; the scope's other evals are only looked up for reuse and recorded in the
Run's ``evidence`` (never executed). Every keyed selected eval first attaches the newest
GREEN/RED record of its key, before any gate resolves (a reused result starts nothing: no
pin, no backend, no tool, no session, no process).

Then ``scheduler.schedule`` dispatches READY requests in selection order, up to ``--jobs``
at once (its gate: every eval of its direct input components GREEN), again after every
result; past ``--max-executions`` a request that would start an executor settles
BUDGET_EXHAUSTED (``budget``), and with ``--reuse-only`` a miss already settled STALE
(``reuse_only``). Each request: claim
the key, wait behind a live execution of it and reuse what it produced (``joined``), or
own a new execution, run the review (``AgentReview`` or ``RuntimeReview``, by profile kind)
and commit it. A request whose gate does not open is saved WAIT_DEPENDENCY or BLOCKED.
``ignore_gates`` (or ``dependency_gates = "ignore"``) lets every eval run at once; the
obligations stay.

A Human eval runs nothing here (``human_wait``): it reuses, follows a Human execution of
its key that already waits, or asks a person (``WAITING_HUMAN``). Without ``wait`` the Run
then ends INCOMPLETE; with it, ``verify`` polls until the people submitted (the verdicts
settle this same Run) or the deadline passed (``waitTimedOut``; the requests stay open).

The parts live beside this module: ``documents`` (the Run, request and execution
documents), ``reuse`` (evidence and reused results), ``human_wait`` (asking, following,
``--wait``) and ``commit`` (settling a review and the Run); ``context`` holds the ports and
options they share.

With a team review store, keys still without a result are looked up again just before each
keyed claim and on each wait poll (``RemoteSync.refresh``, rate-limited per key), and an
Agent or runtime review first takes the key's lease in the store (``leases``), so machines
sharing the store pay for each review once.
"""

from __future__ import annotations

import dataclasses
from contextlib import AbstractContextManager, nullcontext

import anyio

from artifactize.domain.declarations.model import HumanProfile, RuntimeProfile
from artifactize.domain.project.workspace import EvalRef, Workspace
from artifactize.domain.reviews.agent.review import AgentReview, ReviewOutcome
from artifactize.domain.reviews.failures import FailureCode
from artifactize.domain.reviews.human.asking import WAITING_HUMAN
from artifactize.domain.reviews.human.recorded_declarations import run_definitions
from artifactize.domain.reviews.remote.waiting_requests import repository_name
from artifactize.domain.reviews.reuse.artifactsum import GitignoreMemo, OpenFolders
from artifactize.domain.reviews.reuse.fingerprints import ComputedFingerprint, FingerprintScripts
from artifactize.domain.reviews.reuse.keys import KeyInputs, key_inputs
from artifactize.domain.reviews.run import (
    commit,
    derived,
    fingerprint_jobs,
    human_wait,
    reuse,
    reuse_only,
)
from artifactize.domain.reviews.run import leases as run_leases
from artifactize.domain.reviews.run.context import RunContext, VerifyPorts
from artifactize.domain.reviews.run.documents import (
    RunResult,
    new_execution,
    new_request,
    new_run,
    request_record,
    run_record,
)
from artifactize.domain.reviews.run.gates import (
    UNREVIEWED,
    Gate,
    Readiness,
    ScopeShape,
    required_scope,
    scope_evals,
    scope_shape,
)
from artifactize.domain.reviews.run.policy import BUDGET_EXHAUSTED, ExecutionBudget, VerifyOptions
from artifactize.domain.reviews.run.scheduler import ScheduleActions, ScheduleInputs, schedule
from artifactize.domain.reviews.runtime.env import InvocationPool
from artifactize.domain.reviews.runtime.review import RuntimeReview
from artifactize.domain.reviews.timestamps import new_run_id
from artifactize.kernel.document_codec import request_changed, run_changed
from artifactize.kernel.transitions import request_moves
from artifactize.ports.documents import Request, Run
from artifactize.ports.filesystem import Filesystem
from artifactize.ports.ids import EvalId, RunId
from artifactize.ports.review_store import RemoteFailure, RemoteLease
from artifactize.ports.sessions import ProcessIdentity
from artifactize.ports.state import ClaimOutcome, ExecutionRecord, StateError
from artifactize.ports.statuses import ErrorCode, ExecutionStatus, RequestStatus, SourceKind

JOIN_POLL_SECONDS = 0.2
WITHDRAW_SECONDS = 5.0  # at most this long to withdraw the Run's waiting announcements
WAITING_FOR_KEY = "Waiting for the active execution of this reuse key."
STARTED_NOTICE = "Started {run_id} (follow: artifactize run show {run_id} --wait)"
UNEXPECTED = "The review failed unexpectedly"
# Request statuses still without a result: their keys are looked up again in the store.
UNRESOLVED = frozenset(
    {RequestStatus.QUEUED, RequestStatus.WAIT_DEPENDENCY, RequestStatus.BLOCKED, WAITING_HUMAN}
)


# Said when an emptied private folder kept for the next runtime eval cannot be removed at
# the Run's end (no verdict depends on it; it stays below the state home's runs/ folder).
DRAIN_FAILED_NOTICE = (
    "warning: an emptied private folder of this Run could not be removed: {reason}"
)


class Verify:
    def __init__(self, ports: VerifyPorts, workspace: Workspace, options: VerifyOptions) -> None:
        self.ports = ports
        self.workspace = workspace
        self.options = options
        self.ctx = RunContext(ports, workspace, options)
        self.owner: ProcessIdentity = ports.processes.own_identity()
        self.result: RunResult | None = None  # set once the Run exists, even if cancelled
        self._keys: dict[str, KeyInputs] = {}  # qualified eval ID -> key, from ``prepare``
        self._output_roots: dict[RunId, str] = {}  # Run ID -> its output root, once made
        self.budget = ExecutionBudget(options.policy.max_executions)
        # The Run's runtime evals hand their emptied private folders on; drained at its end.
        runtime = ports.runtime
        self.runtime = (
            None
            if runtime is None
            else dataclasses.replace(runtime, pool=InvocationPool(runtime.scratch))
        )

    def prepare(self, refs: list[EvalRef]) -> list[KeyInputs]:
        """Keys of every eval of the required scope (kept for ``run``); the selected evals'
        in order. Raises FingerprintError before any Run exists."""
        wanted = [*refs, *scope_evals(self.workspace, required_scope(self.workspace, refs))]
        missing = list(
            dict.fromkeys(r.qualified_id for r in wanted if r.qualified_id not in self._keys)
        )
        review = self.ports.review
        files, scripts = self._key_sources()
        computed: dict[str, ComputedFingerprint] = {}  # each Artifact walked once, not per eval
        gitignores: GitignoreMemo = {}  # and each folder's .gitignore read once for all
        with (
            self.paused(),  # allocation-heavy, no cycles (status does too)
            OpenFolders() as folders,  # the root and shared ancestors opened once for all
        ):
            self._keys.update(
                fingerprint_jobs.compute_scripts_apart(  # scripts on workers, the rest here
                    lambda eval_id, here: key_inputs(
                        self.workspace,
                        eval_id,
                        files,
                        scripts,
                        index=self.ports.index,
                        computed=computed,
                        gitignores=gitignores,
                        folders=folders,
                        without_scripts=here,
                    ),
                    missing,
                    self.options.policy.fingerprint_jobs or 1,
                    review.threads,
                )
            )
        if self.ports.index is not None:
            self.ports.index.save()
        return [self._key(ref) for ref in refs]

    def _key(self, ref: EvalRef) -> KeyInputs:
        found = self._keys.get(ref.qualified_id)
        if found is None:
            files, scripts = self._key_sources()
            found = key_inputs(
                self.workspace, ref.qualified_id, files, scripts, index=self.ports.index
            )
            self._keys[ref.qualified_id] = found
        return found

    def _key_sources(self) -> tuple[Filesystem, FingerprintScripts | None]:
        sources = self.ports.key_sources
        if sources is not None:
            return sources.filesystem, sources.scripts
        return self.ports.review.tools.filesystem, self.ports.review.scripts

    async def run(self, refs: list[EvalRef], keys: list[KeyInputs]) -> RunResult:
        """Create the Run, attach what can be reused, schedule the rest, finish the Run."""
        ctx, options = self.ctx, self.options
        scope = required_scope(self.workspace, refs)
        selected = {ref.qualified_id for ref in refs}
        others = [r for r in scope_evals(self.workspace, scope) if r.qualified_id not in selected]
        if options.recursive:  # the scope's other evals run too, in configuration order
            refs, keys = [*refs, *others], [*keys, *(self._key(r) for r in others)]
            others = []
        pulled = derived.pulled_in(self.workspace, refs)  # a dependency eval's targets run
        if pulled:
            ids = {r.qualified_id for r in pulled}
            refs, keys = [*refs, *pulled], [*keys, *(self._key(r) for r in pulled)]
            others = [r for r in others if r.qualified_id not in ids]
        other_keys = [self._key(ref) for ref in others]  # before the Run: may raise
        run_id = new_run_id(self.ports.ids)
        created = ctx.now()
        # The Run's documents and its reuse phase allocate a few objects per eval, all kept,
        # and make no cycles: the collector is paused there, as for the keys (it runs for
        # the Run's scheduling, where evals execute).
        with self.paused():
            run, requests = self._new_documents(run_id, created, refs, keys, others, selected)
        await self._mirror_remote([*keys, *other_keys])  # a refusal leaves no Run behind
        with self.paused():
            result = self._reuse_phase(run, requests, keys, others, other_keys)
        settle = dict(zip((r.id for r in requests), zip(refs, keys, strict=True), strict=True))
        shape = scope_shape(self.workspace, scope)  # for the scheduling and the end: once
        deadline = self.ports.review.clock.monotonic() + options.wait_timeout_ms / 1000

        async def settle_request(request: Request) -> None:
            ref, key = settle[request.id]
            await self._settle_request(ref, key, request)

        async def refresh_all() -> None:
            await self._refresh_remote(result.requests)
            await self._announce_waiting(result.requests)

        def settle_inline(request: Request) -> bool:
            return self._settle_inline(settle[request.id][0], request)

        wait = human_wait.HumanWait(ctx, result, deadline, refresh_all) if options.wait else None
        actions = ScheduleActions(
            settle_request,
            self._park,
            wait,
            settle_inline,
            self.ports.state.batch,
            lambda: ctx.held.flush_behind(self.ports.state),
        )
        try:
            await schedule(self._schedule_inputs(result, shape), actions, options.policy.jobs)
        except RemoteFailure as failure:
            result.run = run_changed(result.run, error=failure.message)
            raise
        except StateError as failure:
            # A state write failed (a full disk, a read-only or failing file system): the
            # Run ends ERROR STATE_WRITE_FAILED if the settlement below can still be
            # written; if not, the next reader settles it (its owner will have exited).
            result.run = run_changed(
                result.run, error=str(failure), error_code=ErrorCode.STATE_WRITE_FAILED
            )
            raise
        finally:
            with anyio.CancelScope(shield=True):
                if self.ports.remote is not None:  # the wait ended: no inbox lists it now
                    with anyio.move_on_after(WITHDRAW_SECONDS):
                        await self.ports.remote.withdraw_waiting()
                with self.paused():  # one summary per request, no cycles
                    commit.finish_run(ctx, result, self._schedule_inputs(result, shape))
                await self._drain_private_folders()
        return result

    def paused(self) -> AbstractContextManager[None]:
        """A block in which the cyclic collector does not run (``VerifyPorts.pause_collector``):
        for work that allocates many objects, keeps them, and makes no cycles (the keys, the
        Run's documents and reuse phase, its ending, the answer rendered from it)."""
        pause = self.ports.pause_collector
        return nullcontext() if pause is None else pause()

    def _new_documents(
        self,
        run_id: RunId,
        created: str,
        refs: list[EvalRef],
        keys: list[KeyInputs],
        others: list[EvalRef],
        selected: set[EvalId],
    ) -> tuple[Run, list[Request]]:
        """The RUNNING Run (every eval and Artifact it covers recorded) and its QUEUED
        requests, tracked by the context; nothing stored yet."""
        ctx, options = self.ctx, self.options
        run = new_run(
            run_id,
            options.repo,
            options.state_dir,
            created,
            selection=[ref.qualified_id for ref in refs if ref.qualified_id in selected],
            recursive=options.recursive,
            ignore_gates=ctx.ignore_gates,
            force=options.force,
            definitions=run_definitions([*refs, *others]),
            wait_timeout_ms=options.wait_timeout_ms if options.wait else None,
            owner=self.owner,
        )
        run = options.policy.recorded_on(run)
        if options.comment is not None:
            run = run_changed(run, comment=options.comment)
        return run, ctx.track(
            [
                new_request(
                    run_id,
                    ordinal,
                    ref,
                    key,
                    created,
                    selected=ref.qualified_id in selected,
                    force=options.force,
                )
                for ordinal, (ref, key) in enumerate(zip(refs, keys, strict=True), start=1)
            ]
        )

    def _reuse_phase(
        self,
        run: Run,
        requests: list[Request],
        keys: list[KeyInputs],
        others: list[EvalRef],
        other_keys: list[KeyInputs],
    ) -> RunResult:
        """Attach every reusable verdict and settle the reuse-only misses, then store the
        Run with its requests as they then are: one row each, in one statement."""
        ctx, options = self.ctx, self.options
        # The reuse phase, before the Run is stored: what it settles (reused verdicts,
        # reuse-only misses) is written once, by ``create_run``, with its summary, and the
        # end of the Run finds it unchanged: one row per request, not three.
        found = reuse.lookup(ctx, [*other_keys, *([] if options.force else keys)])
        run = run_changed(
            run,
            evidence={
                ref.qualified_id: reuse.evidence(key, found)
                for ref, key in zip(others, other_keys, strict=True)
            },
        )
        staged: list[str] = []

        def stage(request: Request) -> None:
            ctx.stage(request)  # settled with its summary (``request_summarized``)
            staged.append(request.id)

        for key, request in zip(keys, list(requests), strict=True):
            reuse.attach_cached(ctx, key, request, found, stage)
        reuse_only.settle_misses(requests, options.policy.reuse_only, stage)
        self.ports.state.create_run(
            run_record(run, options.repo), [request_record(r) for r in requests]
        )
        if self.ports.progress is not None:  # so another terminal can follow this Run
            self.ports.progress(STARTED_NOTICE.format(run_id=run.id))
        for request_id in staged:
            ctx.observe(ctx.current_of(request_id))
        result = self.result = RunResult(run, requests)
        return result

    async def _drain_private_folders(self) -> None:
        """Remove the private folders the Run's runtime evals left to the pool (one worker
        hop). Each was checked empty when its command ended, so no verdict depends on it;
        one that cannot be removed stays in the Run's folder, and the person is told."""
        if self.runtime is None or self.runtime.pool is None:
            return
        try:
            await self.runtime.threads.run(self.runtime.pool.drain)
        except OSError as exc:
            if self.ports.progress is not None:
                self.ports.progress(DRAIN_FAILED_NOTICE.format(reason=exc.strerror or exc))

    def _schedule_inputs(self, result: RunResult, shape: ScopeShape) -> ScheduleInputs:
        evidence = result.run.evidence
        return ScheduleInputs(
            self.workspace, shape.scope, self.ctx.ignore_gates, result.requests, evidence, shape
        )

    def _park(self, request: Request, gate: Gate) -> None:
        """Save a request whose gate is not open: WAIT_DEPENDENCY or BLOCKED, and why."""
        blocked = gate.readiness is Readiness.BLOCKED
        status = RequestStatus.BLOCKED if blocked else RequestStatus.WAIT_DEPENDENCY
        # A dependency eval names what it waits for too (its derived verdict's inputs).
        blocked_by = gate.blocked_by if blocked or derived.is_dependency(request) else None
        reason = gate.reason()
        if (request.status, request.blocked_reason, request.blocked_by) == (
            status,
            reason,
            blocked_by,
        ):
            return
        moved = request_moves(request.status, status)
        self.ctx.save(
            request_changed(request, status=moved, blocked_reason=reason, blocked_by=blocked_by)
        )

    def _settle_inline(self, ref: EvalRef, request: Request) -> bool:
        """Settle a READY request that needs no slot and no waiting; False when it does."""
        ctx = self.ctx
        reason = ctx.not_run_reason(ref.eval.profile)
        if reason is not None:
            moved = request_moves(request.status, UNREVIEWED)
            ctx.save(request_changed(request, status=moved, blocked_reason=reason))
            return True
        if derived.is_dependency(request):  # READY: every eval of its targets is GREEN
            derived.settle_derived(request, ctx.now(), ctx.save)
            return True
        return False

    async def _settle_request(self, ref: EvalRef, keys: KeyInputs, request: Request) -> None:
        """Reuse, join, follow, ask a person, or execute: whatever the key's claim allows."""
        ctx = self.ctx
        if self._settle_inline(ref, request):
            return
        human = isinstance(ref.eval.profile, HumanProfile)
        if not human and not self.budget.reserve():  # an executor start, past the limit
            exhausted = request_moves(request.status, BUDGET_EXHAUSTED)
            reason = self.budget.reason()
            ctx.save(request_changed(request, status=exhausted, blocked_reason=reason))
            return
        execution = new_execution(request, self.owner)
        holds_key = keys.key is not None and not self.options.force
        remote = run_leases.applies(ctx, ref.eval.profile, keys.key)
        lease: RemoteLease | None = None
        if holds_key:
            joined = lease_waited = False
            while True:
                if remote is None or lease_waited or not remote.grants_answer_latest:
                    # with a lease, a grant answers this lookup itself (a store that says
                    # so); a request waiting for another machine's lease polls it here
                    await self._refresh_remote([request])
                if remote is not None:
                    lease, held = await run_leases.acquire(
                        ctx, remote, request, execution.id, lease_waited
                    )
                    request = ctx.current(request)  # it may say it waits for the lease
                    if held and not run_leases.verdict_arrived(ctx, request):
                        lease_waited = True  # another machine reviews it: wait for its verdict
                        await self.ports.sleep(run_leases.LEASE_POLL_SECONDS)
                        continue
                    lease_waited = lease_waited or held
                with self.ports.state.batch():  # the claim and RUNNING: one transaction
                    claim = self.ports.state.claim(execution, self._owner_alive)
                    if claim.outcome is ClaimOutcome.OWNED and not human:
                        request = self._start(request, execution)
                if claim.outcome is ClaimOutcome.REUSED:
                    assert claim.record is not None
                    await run_leases.release(remote, lease)
                    kind = reuse.source_kind(claim.record, joined)
                    reuse.reuse(
                        ctx, request, claim.record, SourceKind.JOINED if lease_waited else kind
                    )
                    if not human:
                        self.budget.release()
                    return
                if claim.outcome is ClaimOutcome.OWNED:
                    break
                await run_leases.release(remote, lease)  # a local execution has the key
                lease = None
                assert claim.record is not None
                if human and claim.record.status == ExecutionStatus.WAITING_HUMAN:
                    if human_wait.supersede_if_stale(ctx, ref, request, claim.record):
                        continue  # the stale wait ended: claim the key again, then ask
                    human_wait.follow(ctx, request, claim.record)
                    return
                if not joined:
                    joined = True
                    request = request_changed(request, blocked_reason=WAITING_FOR_KEY)
                    ctx.save(request)
                await self.ports.sleep(JOIN_POLL_SECONDS)
        else:
            execution = dataclasses.replace(execution, key=None)
            if not human:
                with self.ports.state.batch():  # the execution and RUNNING: one transaction
                    self.ports.state.insert_execution(execution)
                    request = self._start(request, execution)
        if human:
            human_wait.ask_human(ctx, ref, keys, request, execution, holds_key=holds_key)
            return
        released = False
        try:
            released = await self._execute(ref, keys, request, execution, lease)
        finally:
            if not released:  # the store did not release it with the verdict: ask it now
                await run_leases.release(remote, lease)

    async def _mirror_remote(self, keys: list[KeyInputs]) -> None:
        """Before anything is claimed, mirror the team store's records of the Run's keys
        (fail closed: a refusal raises before the Run exists); never with ``force``."""
        remote = self.ports.remote
        if remote is None or self.options.force:
            return
        wanted = [k.key for k in keys if k.key is not None]
        await remote.mirror(
            wanted, self.ports.state, self.ports.review.clock.monotonic(), settled_at=self.ctx.now()
        )

    async def _refresh_remote(self, requests: list[Request]) -> None:
        """Ask the team store again for the keys of ``requests`` still without a result
        (rate-limited per key by ``RemoteSync.refresh``); never with ``force``."""
        remote = self.ports.remote
        if remote is None or self.options.force:
            return
        keys = [r.key for r in requests if r.key and r.status in UNRESOLVED]
        await remote.refresh(
            keys, self.ports.state, self.ports.review.clock.monotonic(), settled_at=self.ctx.now()
        )

    async def _announce_waiting(self, requests: list[Request]) -> None:
        """Tell the team store which of this Run's Human requests wait (``--wait`` polls),
        so every teammate's inbox lists them; rate-limited by ``RemoteSync``."""
        remote = self.ports.remote
        if remote is None:
            return
        await remote.announce_waiting(
            [r.id for r in requests],
            self.ports.state,
            self.ports.review.clock.monotonic(),
            repository=repository_name(self.options.repo),
            machine=self.ports.producer.get("name"),
        )

    def _owner_alive(self, pid: int, start_time: float) -> bool:
        return self.ports.processes.is_alive(ProcessIdentity(pid, start_time))

    def _start(self, request: Request, execution: ExecutionRecord) -> Request:
        """Save ``request`` RUNNING under ``execution``: called inside the batch that
        inserts the execution (the claim, committed before the command starts), the save
        held for the Run's next transaction, where the request's settlement usually
        replaces it. A crash before it is written leaves the request QUEUED and the
        execution RUNNING; the next start settles the dead owner's Run, its requests and
        every RUNNING execution of that owner."""
        ctx = self.ctx
        request = request_changed(
            request,
            status=request_moves(request.status, RequestStatus.RUNNING),
            started_at=ctx.now(),
            execution_id=execution.id,
            blocked_reason=None,
        )
        ctx.save_held(request)
        return request

    async def _execute(
        self,
        ref: EvalRef,
        keys: KeyInputs,
        request: Request,
        execution: ExecutionRecord,
        lease: RemoteLease | None = None,
    ) -> bool:
        """Run the review this request owns, saved RUNNING by ``_start`` (renewing its
        store lease, if it holds one), then commit it (also when cancelled); whether the
        store released the lease as it took the verdict."""
        ctx = self.ctx
        ctx.observe(request)  # RUNNING, shown once its claim committed (after what it wrote)
        assert self.result is not None
        started = self.result.run.executions_started + 1
        self.result.run = run_changed(self.result.run, executions_started=started)
        review = self._review(ref, keys, self._output_root(request.run_id))
        if isinstance(review, AgentReview) and self.ports.observer is not None:
            review.activity = self.ports.observer.agent(request.id)
        outcome: ReviewOutcome | None = None
        try:
            if lease is not None and self.ports.remote is not None:
                outcome = await run_leases.renewing(ctx, self.ports.remote, lease, review.run())
            else:
                outcome = await review.run()
        except Exception as exc:  # a bug must still settle the request (sessions are stopped)
            trace = review.trace if isinstance(review, AgentReview) else None
            message = f"{UNEXPECTED}: {type(exc).__name__}: {exc}"
            outcome = ReviewOutcome.failed(FailureCode.AGENT_ERROR, message, trace)
        finally:
            with anyio.CancelScope(shield=True):
                settled = outcome or review.cancelled_outcome()
                if isinstance(review, AgentReview):
                    request = commit.save_conversation(ctx, request, review, settled)
                committed, recorded = commit.commit(ctx, request, execution, settled)
        if recorded and self.ports.remote is not None:
            self.ports.state.flush()  # saved here before the team store has it
            kinds = committed.data.kinds or {}
            return await self.ports.remote.publish(committed.data, kinds, lease)
        return False

    def _output_root(self, run_id: RunId) -> str:
        """The Run's private output root, made by its first executed eval and then known:
        the next evals ask the file system nothing."""
        made = self._output_roots.get(run_id)
        if made is None:
            made = self._output_roots[run_id] = self.ports.make_output_root(run_id)
        return made

    def _review(self, ref: EvalRef, keys: KeyInputs, run_dir: str) -> AgentReview | RuntimeReview:
        """The review that executes this eval, by profile kind."""
        if isinstance(ref.eval.profile, RuntimeProfile):
            assert self.runtime is not None  # not_run_reason let it through
            return RuntimeReview(self.runtime, self.workspace, ref, keys, run_dir)
        return AgentReview(self.ports.review, self.workspace, ref, keys, run_dir)
