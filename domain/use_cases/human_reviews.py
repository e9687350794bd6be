"""The Human review lifecycle: claim, run tools, submit a verdict (or release the claim).

``verify`` leaves a Human request ``WAITING_HUMAN``; these operations settle it, from any
process, against the open state:

- ``claim`` takes the one reviewer lock (the same reviewer again is idempotent; another is
  refused). There are no reservations, renewals or expiry timers.
- ``unclaim`` releases it without a verdict; only the claimant, only while it waits.
- ``run_human_tool`` (claimant only) reconnects to the recorded repository (changed
  declarations refuse), checks the tool is registered, rechecks the fingerprint when the
  request has a reuse key, re-checks the claim and runs the tool. Tool errors are
  correctable actions, not verdicts; tool runs are not recorded.
- ``cancel`` ends a waiting request without a verdict (CANCELLED, with who and why): the
  claimant, or anyone while it is unclaimed; followers settle with it (``ending``).
- ``tool_commands`` resolves the command tools' command lines without claiming or running.
- ``submit`` (claimant only) reconnects, bounds and validates the result without repair
  (an invalid one leaves the request waiting), rechecks the key, and settles request,
  execution, reuse history, followers and claim in one transaction.
  ``submit_and_publish`` then publishes a GREEN/RED keyed result to the team store.

An ID of a follower (a request that waits on another request's execution) resolves to
that original request. A changed fingerprint found by a recheck settles the request
ERROR (``INPUT_CHANGED``, or ``FINGERPRINT_RECHECK_FAILED``) and fails the action.

No transaction spans a tool run, a fingerprint recheck or an await: each state call is
one short transaction, and settlement re-reads what it depends on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from artifactize.domain.declarations.model import CommandHumanTool
from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.human.ending import cancellation_of, check_cancel_reason
from artifactize.domain.reviews.human.errors import (
    CLAIMED_BY_OTHER,
    NO_TOOLS,
    NOT_CLAIMANT,
    NOT_CLAIMED,
    NOT_WAITING,
    PUBLISH_FAILED,
    REQUEST_ID_NOT_FOUND,
    RESULT_NOT_JSON,
    RESULT_TOO_LARGE,
    UNKNOWN_TOOL_NAMED,
    HumanPublishError,
    HumanReviewError,
)
from artifactize.domain.reviews.human.reconnect import Reconnected, recheck_key, reconnect
from artifactize.domain.reviews.human.reviewers import ReviewerError, check_reviewer
from artifactize.domain.reviews.human.settlement import HumanOutcome, build_settlement
from artifactize.domain.reviews.remote.sync import CONTINUING, RemoteSync
from artifactize.domain.reviews.reuse.fingerprints import FingerprintScripts
from artifactize.domain.reviews.timestamps import timestamp
from artifactize.domain.reviews.verdicts import InvalidVerdict, VerdictValidator
from artifactize.domain.text import compact_json_size
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.tools.human.lines import LineSink
from artifactize.domain.tools.human.registry import HumanToolPorts, HumanToolRegistry
from artifactize.domain.tools.human.results import HumanToolResult
from artifactize.domain.tools.registry import RegistryError
from artifactize.domain.tools.results import ToolError
from artifactize.ports.callbacks import WarningSink, WorkspaceLoader
from artifactize.ports.clock import Clock
from artifactize.ports.documents import ProducerDocument
from artifactize.ports.filesystem import Filesystem
from artifactize.ports.ids import RequestId
from artifactize.ports.review_store import RemoteFailure, RemoteStore
from artifactize.ports.state import (
    ExecutionRecord,
    HumanClaim,
    HumanClaimRefused,
    HumanNotWaiting,
    RequestRecord,
    StateStore,
)
from artifactize.ports.statuses import ExecutionStatus, RequestStatus
from artifactize.ports.threads import WorkerThreads

HUMAN_RESULT_MAX_BYTES = 256_000  # compact UTF-8 JSON of a submitted result
WAITING_HUMAN = RequestStatus.WAITING_HUMAN


@dataclass(frozen=True)
class HumanReviewPorts:
    state: StateStore
    load: WorkspaceLoader[Workspace]  # read the workspace of a repository again
    tools: HumanToolPorts
    filesystem: Filesystem  # fingerprint rechecks
    clock: Clock
    producer: ProducerDocument  # saved with verdicts
    scripts: FingerprintScripts | None = None  # None: fingerprint scripts are not supported
    threads: WorkerThreads = field(kw_only=True)  # reading repositories, fingerprint rechecks


@dataclass(frozen=True)
class Submitted:
    """A settled submission: the request and execution as saved, and whether it joined the
    key's reuse history (only then is it published)."""

    request: RequestRecord
    execution: ExecutionRecord
    recorded: bool
    followers: tuple[str, ...]


class HumanReviews:
    def __init__(self, ports: HumanReviewPorts) -> None:
        self.ports = ports

    def _now(self) -> str:
        return timestamp(self.ports.clock.now())

    # --- resolution and authorization -------------------------------------------------

    def resolve(self, request_id: RequestId) -> RequestRecord:
        """The request, or for a follower the original request whose execution it shares."""
        state = self.ports.state
        request = state.get_request(request_id)
        if request is None:
            raise HumanReviewError(REQUEST_ID_NOT_FOUND.format(id=request_id))
        execution = state.get_execution(request.execution_id) if request.execution_id else None
        owner = execution.data.request_id if execution is not None else None
        if owner is not None and owner != request.id:
            original = state.get_request(owner)
            if original is not None:
                return original
        return request

    def originals(self, requests: Sequence[RequestRecord]) -> list[RequestRecord]:
        """``resolve`` of requests already read, in order: their executions in a few
        statements, and only a follower's original read again (a list of 909 waiting
        requests made two reads per request)."""
        state = self.ports.state
        wanted = [r.execution_id for r in requests if r.execution_id]
        executions = state.get_executions(wanted) if wanted else {}
        found = []
        for request in requests:
            execution = executions.get(request.execution_id) if request.execution_id else None
            owner = execution.data.request_id if execution is not None else None
            original = (
                state.get_request(owner) if owner is not None and owner != request.id else None
            )
            found.append(original if original is not None else request)
        return found

    def _authorized(
        self, request_id: RequestId, reviewer: str
    ) -> tuple[RequestRecord, ExecutionRecord]:
        """The waiting original request claimed by ``reviewer``, with its execution."""
        reviewer = _checked(reviewer)
        request = self.resolve(request_id)
        execution = self._waiting_execution(request)
        claim = self.ports.state.human_claim(request.id)
        if claim is None or claim.reviewer != reviewer:
            # A settlement releases the claim: one that committed between the reads above
            # means the request is no longer waiting, not that this reviewer never held it.
            self._waiting_execution(self.resolve(request_id))
            if claim is None:
                raise HumanReviewError(NOT_CLAIMED.format(id=request_id))
            raise HumanReviewError(NOT_CLAIMANT)
        return request, execution

    def _waiting_execution(self, request: RequestRecord) -> ExecutionRecord:
        execution = (
            self.ports.state.get_execution(request.execution_id) if request.execution_id else None
        )
        if request.status != WAITING_HUMAN or execution is None:
            raise HumanReviewError(NOT_WAITING)
        if execution.status != ExecutionStatus.WAITING_HUMAN:
            raise HumanReviewError(NOT_WAITING)
        return execution

    # --- claims -------------------------------------------------------------------------

    async def claim(self, request_id: RequestId, reviewer: str) -> HumanClaim:
        reviewer = _checked(reviewer)
        request = self.resolve(request_id)
        try:
            return self.ports.state.claim_human(request.id, reviewer, self._now())
        except HumanNotWaiting:
            raise HumanReviewError(NOT_WAITING) from None
        except HumanClaimRefused:
            raise HumanReviewError(NOT_CLAIMANT) from None

    async def unclaim(self, request_id: RequestId, reviewer: str) -> HumanClaim:
        reviewer = _checked(reviewer)
        request = self.resolve(request_id)
        try:
            return self.ports.state.unclaim_human(request.id, reviewer)
        except HumanNotWaiting:
            raise HumanReviewError(NOT_WAITING) from None
        except HumanClaimRefused:
            raise HumanReviewError(NOT_CLAIMANT) from None

    async def cancel(
        self, request_id: RequestId, reviewer: str, reason: str | None
    ) -> tuple[str, ...]:
        """End a waiting request without a verdict (CANCELLED, with who and why): the
        claimant, or anyone while nobody holds the claim. Followers settle with it; no
        reconnect is needed, so a request whose declarations changed can be cancelled.
        The IDs of every request it ended, the original first."""
        reviewer = _checked(reviewer)
        try:
            reason = check_cancel_reason(reason)
        except ValueError as exc:
            raise HumanReviewError(str(exc)) from None
        request = self.resolve(request_id)
        execution = self._waiting_execution(request)
        ending = cancellation_of(request, execution.id, reviewer, reason, self._now())
        try:
            return self.ports.state.end_human(ending)
        except HumanNotWaiting:
            raise HumanReviewError(NOT_WAITING) from None
        except HumanClaimRefused as refused:
            claimant = refused.claimant or "another reviewer"
            raise HumanReviewError(
                CLAIMED_BY_OTHER.format(id=request.id, claimant=claimant)
            ) from None

    async def reconnect_problem(self, request_id: RequestId) -> str | None:
        """Why Human actions on this waiting request are refused (its declarations changed,
        its repository is gone), or None when it reconnects. The terminal reviewer shows it
        and offers ``cancel``."""
        try:
            await reconnect(self.ports.load, self.resolve(request_id), self.ports.threads)
        except HumanReviewError as exc:
            return exc.message
        return None

    # --- tools --------------------------------------------------------------------------

    async def run_human_tool(
        self,
        request_id: RequestId,
        reviewer: str,
        tool: str,
        cancellation: Cancellation | None = None,
        on_line: LineSink | None = None,
    ) -> HumanToolResult:
        """Run one registered Human tool of the request for its claimant. A failing tool is
        an error *result*; a refused action raises HumanReviewError."""
        token = cancellation or Cancellation()
        request, execution = self._authorized(request_id, reviewer)
        reconnected = await reconnect(self.ports.load, request, self.ports.threads)
        registry = self._registry(reconnected)
        if registry.get(tool) is None:
            names = ", ".join(sorted(d.name for d in registry.list())) or NO_TOOLS
            raise HumanReviewError(UNKNOWN_TOOL_NAMED.format(tool=tool, names=names))
        await self._recheck(request, execution, reviewer, reconnected, token)
        self._authorized(request.id, reviewer)  # still the claimant, still waiting
        return await registry.call(tool, token, on_line)

    async def tool_commands(self, request_id: RequestId) -> dict[str, dict[str, Any]]:
        """``{toolName: {repository, program, argv, cwd} | {error}}`` for the command tools of
        the request's recorded scope; built-ins have no command line and are omitted."""
        request = self.resolve(request_id)
        reconnected = await reconnect(self.ports.load, request, self.ports.threads)
        registry = self._registry(reconnected)
        commands: dict[str, dict[str, Any]] = {}
        for definition in registry.list():
            if not isinstance(definition.declaration, CommandHumanTool):
                continue
            try:
                commands[definition.name] = registry.command(definition.name).to_json()
            except ToolError as exc:
                commands[definition.name] = {"error": exc.message}
        return commands

    def _registry(self, reconnected: Reconnected) -> HumanToolRegistry:
        try:
            return HumanToolRegistry.for_eval(
                reconnected.workspace, reconnected.ref.qualified_id, self.ports.tools
            )
        except RegistryError as exc:
            raise HumanReviewError(str(exc)) from None

    # --- submission ---------------------------------------------------------------------

    async def submit(
        self,
        request_id: RequestId,
        reviewer: str,
        result: Any,
        cancellation: Cancellation | None = None,
    ) -> Submitted:
        """Settle the request with a GREEN/RED result valid for its owner schema."""
        token = cancellation or Cancellation()
        request, execution = self._authorized(request_id, reviewer)
        reconnected = await reconnect(self.ports.load, request, self.ports.threads)
        _check_size(result)
        item = reconnected.ref.eval
        try:
            verdict = VerdictValidator(item.pass_schema, item.fail_schema).validate(result)
        except InvalidVerdict as exc:
            raise HumanReviewError(exc.message) from None
        await self._recheck(request, execution, reviewer, reconnected, token)
        outcome = HumanOutcome(ExecutionStatus(verdict["verdict"]), result=verdict)
        return self._settle(request, execution, reviewer, outcome)

    async def submit_and_publish(
        self,
        request_id: RequestId,
        reviewer: str,
        result: Any,
        remote: RemoteStore | None,
        warn: WarningSink,
        cancellation: Cancellation | None = None,
    ) -> Submitted:
        """``submit``, then publish a recorded (GREEN/RED, keyed) result to the team store
        (``warn`` gets notices such as a token without the human scope). A publishing
        failure after the local settle raises HumanPublishError; the local result stands."""
        submitted = await self.submit(request_id, reviewer, result, cancellation)
        if remote is not None and submitted.recorded:
            await publish(remote, warn, submitted.execution)
        return submitted

    async def _recheck(
        self,
        request: RequestRecord,
        execution: ExecutionRecord,
        reviewer: str,
        reconnected: Reconnected,
        token: Cancellation,
    ) -> None:
        """Only for a request with a reuse key: a changed or failed recheck settles ERROR."""
        key = request.data.key
        if not isinstance(key, str):
            return
        failed = await recheck_key(
            reconnected, key, self.ports.filesystem, token, self.ports.threads, self.ports.scripts
        )
        if failed is not None:
            self._settle(request, execution, reviewer, failed)
            assert failed.error is not None
            raise HumanReviewError(failed.error, settled=True)

    def _settle(
        self,
        request: RequestRecord,
        execution: ExecutionRecord,
        reviewer: str,
        outcome: HumanOutcome,
    ) -> Submitted:
        settlement = build_settlement(
            request, execution, reviewer, self.ports.producer, outcome, self._now()
        )
        try:
            settled = self.ports.state.settle_human(settlement)
        except HumanNotWaiting:
            raise HumanReviewError(NOT_WAITING) from None
        return Submitted(
            settlement.request, settlement.execution, settled.recorded, settled.followers
        )


async def publish(store: RemoteStore, warn: WarningSink, execution: ExecutionRecord) -> None:
    """Publish a settled Human execution with ``RemoteSync``'s rules (scopes, record shape).

    A person who submits is told when publishing failed, so a store failure that ``verify``
    would only warn about (fail open: unreachable) is an error here too: HumanPublishError.
    """
    failures: list[str] = []
    fail_open = CONTINUING.format(reason="")

    def notice(message: str) -> None:
        if message.endswith(fail_open):
            failures.append(message.removesuffix(fail_open))
        else:
            warn(message)

    try:
        await RemoteSync(store, notice).publish(execution.data, execution.data.kinds or {})
    except RemoteFailure as failure:
        raise HumanPublishError(PUBLISH_FAILED.format(reason=failure.message)) from None
    if failures:
        raise HumanPublishError(PUBLISH_FAILED.format(reason=failures[0]))


def _checked(reviewer: str) -> str:
    try:
        return check_reviewer(reviewer)
    except ReviewerError as exc:
        raise HumanReviewError(exc.message) from None


def _check_size(result: Any) -> None:
    try:
        size = compact_json_size(result)
    except (TypeError, ValueError, RecursionError):
        raise HumanReviewError(RESULT_NOT_JSON) from None
    if size > HUMAN_RESULT_MAX_BYTES:
        raise HumanReviewError(RESULT_TOO_LARGE.format(limit=HUMAN_RESULT_MAX_BYTES))
