"""From how a runtime command ended to the review outcome (reference/declarations.md §2.2).

Exit 0 is GREEN and any other exit status RED; a timeout, a command that never started and a
command that died without an exit status (a signal) are ERRORs, never a verdict. The saved
``result`` of a verdict is ``{verdict, exitCode, durationMs}``; what the command printed goes
to the request's ``child`` record, each stream capped, decoded lossily and cleaned of
terminal control sequences. Runtime pass/fail schemas are stored, not applied (§2.5).
"""

from __future__ import annotations

from artifactize.domain.reviews.agent.review import ReviewOutcome
from artifactize.domain.reviews.failures import FailureCode
from artifactize.domain.tools.commands.text_output import clean_output, decode_lossy
from artifactize.ports.documents import ChildDocument
from artifactize.ports.process import ProcessOutcome
from artifactize.ports.statuses import ExecutionStatus, Verdict

# stdout and stderr are each kept up to this many bytes; the rest is read and discarded.
RUNTIME_OUTPUT_MAX_BYTES = 128 * 1024

TIMED_OUT = "Runtime eval timed out after {timeout_ms} ms."
SPAWN_FAILED = "Runtime command could not start: {reason}"
KILLED_BY_SIGNAL = "Runtime command was ended by signal {signal}."
NO_EXIT_STATUS = "Runtime command ended without an exit status."


def clean_stream(data: bytes) -> str:
    """Captured bytes as text a reviewer can read: lossy UTF-8, no CSI or C0 controls."""
    return clean_output(decode_lossy(data))


def child_record(process: ProcessOutcome, duration_ms: int) -> ChildDocument:
    """The request's ``child`` field: how the process ended and what it printed."""
    return {
        "exitCode": process.exit_code,
        "signal": process.signal,
        "stdout": clean_stream(process.stdout),
        "stderr": clean_stream(process.stderr),
        "durationMs": duration_ms,
        "truncated": {"stdout": process.stdout_truncated, "stderr": process.stderr_truncated},
    }


def runtime_outcome(process: ProcessOutcome, duration_ms: int, timeout_ms: int) -> ReviewOutcome:
    """Map a finished (or never started) process to GREEN, RED or ERROR."""
    if process.spawn_error is not None:
        return ReviewOutcome.failed(
            FailureCode.SPAWN_FAILED, SPAWN_FAILED.format(reason=process.spawn_error)
        )
    child = child_record(process, duration_ms)
    if process.timed_out:
        outcome = ReviewOutcome.failed(FailureCode.TIMEOUT, TIMED_OUT.format(timeout_ms=timeout_ms))
    elif process.exit_code is None:
        message = (
            KILLED_BY_SIGNAL.format(signal=process.signal)
            if process.signal is not None
            else NO_EXIT_STATUS
        )
        outcome = ReviewOutcome.failed(FailureCode.ABNORMAL_EXIT, message)
    else:
        verdict: Verdict = Verdict.GREEN if process.exit_code == 0 else Verdict.RED
        result = {"verdict": verdict, "exitCode": process.exit_code, "durationMs": duration_ms}
        outcome = ReviewOutcome(ExecutionStatus(verdict), result=result)
    outcome.child = child
    return outcome
