"""Reconnecting a recorded Human request to its repository, and the fingerprint recheck.

Every Human action after ``verify`` happens in another process, maybe much later. Before a
tool runs or a verdict is accepted, the recorded repository is read again and the eval's
declarations and admitted scope must be exactly what the request was recorded with
(``human_definition``); otherwise the action is refused and the request keeps waiting,
rather than running an updated declaration. For a request with a reuse key the
fingerprints are then computed again: a different key means the reviewed input changed
while the person looked at it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from artifactize.domain.declarations.diagnostics import ConfigError
from artifactize.domain.project.workspace import EvalRef, Workspace
from artifactize.domain.reviews.failures import FailureCode
from artifactize.domain.reviews.human.errors import (
    CANCELLED,
    FINGERPRINT_CHANGED,
    NOT_RECORDED,
    REPOSITORY_UNREADABLE,
    HumanReviewError,
)
from artifactize.domain.reviews.human.recorded_declarations import (
    DEFINITION_CHANGED,
    DefinitionMismatch,
    check_definition,
)
from artifactize.domain.reviews.human.settlement import HumanOutcome
from artifactize.domain.reviews.reuse.errors import FingerprintError
from artifactize.domain.reviews.reuse.fingerprints import FingerprintScripts
from artifactize.domain.reviews.reuse.keys import key_inputs
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.ports.callbacks import WorkspaceLoader
from artifactize.ports.filesystem import Filesystem, FilesystemError
from artifactize.ports.state import RequestRecord
from artifactize.ports.statuses import ExecutionStatus
from artifactize.ports.threads import WorkerThreads


@dataclass(frozen=True)
class Reconnected:
    """The repository as it is now, which still declares what the request recorded."""

    workspace: Workspace
    ref: EvalRef


async def reconnect(
    load: WorkspaceLoader[Workspace], request: RequestRecord, threads: WorkerThreads
) -> Reconnected:
    """Reopen the request's recorded repository; raises HumanReviewError when it cannot be
    read or no longer declares exactly the recorded eval and scope."""
    recorded = request.data.human_definition
    if not isinstance(recorded, Mapping) or not isinstance(recorded.get("repo"), str):
        raise HumanReviewError(NOT_RECORDED)
    repo = recorded["repo"]
    try:
        workspace = await threads.run(load, repo)
    except ConfigError as exc:  # declarations that no longer load changed too
        raise HumanReviewError(f"{DEFINITION_CHANGED}\n{exc}") from None
    except FilesystemError as exc:
        raise HumanReviewError(REPOSITORY_UNREADABLE.format(repo=repo, reason=exc)) from None
    try:
        ref = check_definition(workspace, recorded)
    except DefinitionMismatch as exc:
        raise HumanReviewError(exc.message) from None
    return Reconnected(workspace, ref)


async def recheck_key(
    reconnected: Reconnected,
    recorded_key: str,
    filesystem: Filesystem,
    cancellation: Cancellation,
    threads: WorkerThreads,
    scripts: FingerprintScripts | None = None,
) -> HumanOutcome | None:
    """None when the fingerprints still give ``recorded_key``; otherwise the ERROR outcome to
    settle (INPUT_CHANGED, or FINGERPRINT_RECHECK_FAILED). A cancellation before or during
    the recheck raises HumanReviewError(CANCELLED) and settles nothing."""
    if cancellation.cancelled:
        raise HumanReviewError(CANCELLED)
    try:
        again = await threads.run(
            key_inputs,
            reconnected.workspace,
            reconnected.ref.qualified_id,
            filesystem,
            scripts,
            abandon_on_cancel=True,
        )
    except FingerprintError as exc:
        if cancellation.cancelled:
            raise HumanReviewError(CANCELLED) from None
        code = FailureCode.FINGERPRINT_RECHECK_FAILED
        return HumanOutcome(ExecutionStatus.ERROR, error=exc.message, error_code=code)
    if cancellation.cancelled:
        raise HumanReviewError(CANCELLED)
    if again.key != recorded_key:
        code = FailureCode.INPUT_CHANGED
        return HumanOutcome(ExecutionStatus.ERROR, error=FINGERPRINT_CHANGED, error_code=code)
    return None
