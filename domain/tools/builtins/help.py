"""The ``help`` built-in: ``program sub... --help``, the one built-in that starts a program."""

from __future__ import annotations

from collections.abc import Mapping

from artifactize.domain.tools.commands.text_output import (
    TEXT_BLOCK_MAX_BYTES,
    clean_output,
    decode_lossy,
)
from artifactize.domain.tools.results import ToolError, ToolResult
from artifactize.ports.process import ProcessOutcome, ProcessRunner, ProcessSpec

HELP_TIMEOUT_MS = 10_000
HELP_OUTPUT_MAX_BYTES = TEXT_BLOCK_MAX_BYTES
HELP_ENVIRONMENT_KEYS = ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR")


def help_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """Only what a ``--help`` needs; nothing else of the caller's environment leaks."""
    return {k: environment[k] for k in HELP_ENVIRONMENT_KEYS if environment.get(k)}


def exit_status_text(outcome: ProcessOutcome) -> str:
    if outcome.signal is not None:
        return f"signal: {outcome.signal}"
    return f"exit status: {outcome.exit_code}"


async def run_help(
    runner: ProcessRunner, args: tuple[str, ...], cwd: str, environment: Mapping[str, str]
) -> ToolResult:
    spec = ProcessSpec(
        argv=(*args, "--help"),
        cwd=cwd,
        env=help_environment(environment),
        timeout_ms=HELP_TIMEOUT_MS,
        capture_limit_bytes=HELP_OUTPUT_MAX_BYTES + 1,
    )
    outcome = await runner.run(spec)
    if outcome.spawn_error is not None:
        raise ToolError(f"Help could not start {args[0]}.")
    if outcome.timed_out:
        raise ToolError("Help timed out.")
    if outcome.exit_code != 0:
        stderr = clean_output(decode_lossy(outcome.stderr[:HELP_OUTPUT_MAX_BYTES]))
        raise ToolError(f"Help exited unsuccessfully ({exit_status_text(outcome)}).\n{stderr}")
    if len(outcome.stdout) + len(outcome.stderr) > HELP_OUTPUT_MAX_BYTES:
        raise ToolError("Help output exceeds 64 KiB.")
    text = clean_output(decode_lossy(outcome.stdout + outcome.stderr))
    return ToolResult.text(text if text.strip() else "(no output)")
