"""The process runner contract, run by every adapter of ``ProcessRunner``: the POSIX one (process
groups) under Linux, the Windows one (Job objects) under Wine. Programs are Python children,
so one test says the same thing on both; what only one platform has (signals, process groups,
batch files) is tested beside its adapter.

Every test runs under a fixture that asserts, with psutil, that no child process started
during the test survives it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from artifactize.ports.process import CAPTURE_LIMIT_BYTES, ProcessOutcome, ProcessSpec
from artifactize.ports.sessions import ProcessIdentity
from tests.contract.adapters import (
    WINDOWS,
    added_by_wine,
    base_environment,
    process_runner,
    wait_gone,
)

pytestmark = pytest.mark.anyio

PYTHON = sys.executable
RUNNER = process_runner()
# A run that ends by deadline or cancellation must be over within this (the POSIX grace is
# 1 s; a Job ends at once); generous for a loaded machine and for Wine.
END_BOUND_SECONDS = 5.0
# The newline a child's print() writes on this platform.
NL = b"\r\n" if WINDOWS else b"\n"


@pytest.fixture(autouse=True)
def nothing_survives() -> Iterator[None]:
    """No process started during the test is still running afterwards."""
    me = psutil.Process()
    before = {child.pid for child in me.children(recursive=True)}
    yield
    started = [child for child in me.children(recursive=True) if child.pid not in before]
    assert wait_gone(started) == [], "a child process survived the run"


def spec(
    *argv: str,
    timeout_ms: int = 20_000,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stdin: bytes = b"",
    capture_limit_bytes: int = CAPTURE_LIMIT_BYTES,
    **kwargs: Any,
) -> ProcessSpec:
    return ProcessSpec(
        argv=argv,
        cwd=cwd if cwd is not None else str(Path.cwd()),
        env=env if env is not None else base_environment(),
        timeout_ms=timeout_ms,
        stdin=stdin,
        capture_limit_bytes=capture_limit_bytes,
        **kwargs,
    )


def python(code: str, *args: str, **kwargs: Any) -> ProcessSpec:
    return spec(PYTHON, "-c", code, *args, **kwargs)


async def timed_run(process: ProcessSpec) -> tuple[ProcessOutcome, float]:
    started = time.monotonic()
    outcome = await RUNNER.run(process)
    return outcome, time.monotonic() - started


# What the command line of every sleeping child and grandchild here contains.
SLEEPING = "time.sleep(60)"
# A child that starts a grandchild sleeping 60 s, prints both pids and sleeps 60 s itself.
TREE = """
import os, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(os.getpid(), grandchild.pid, flush=True)
time.sleep(60)
"""


# --- exit status ------------------------------------------------------------------------------


async def test_exit_code_zero_is_success() -> None:
    outcome = await RUNNER.run(python("print('hello')"))
    assert outcome == ProcessOutcome(exit_code=0, stdout=b"hello" + NL)
    assert outcome.succeeded


async def test_nonzero_exit_code_is_reported() -> None:
    outcome = await RUNNER.run(python("import sys; sys.stderr.write('bad'); sys.exit(3)"))
    assert (outcome.exit_code, outcome.signal, outcome.timed_out) == (3, None, False)
    assert outcome.stderr == b"bad"
    assert not outcome.succeeded


# --- argv, environment, cwd, stdin ------------------------------------------------------------


async def test_argv_is_passed_literally_without_a_shell() -> None:
    tricky = [
        "a value with spaces",
        "'single'",
        '"double"',
        "$(touch pwned)",
        "x; exit 7",
        "*",
        "a & b | c > d ^ e",
        "%PATH%",
        "trailing\\",
        'back\\"slash',
        "",
    ]
    outcome = await RUNNER.run(python("import sys, json; print(json.dumps(sys.argv[1:]))", *tricky))
    assert outcome.exit_code == 0
    assert json.loads(outcome.stdout) == tricky


async def test_environment_is_exactly_the_given_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARTIFACTIZE_TEST_CANARY", "must-not-leak")
    environment = {**base_environment(), "ONLY": "this", "SPACED": "a b"}
    code = "import os, json; print(json.dumps(dict(os.environ)))"
    outcome = await RUNNER.run(python(code, env=environment))
    assert outcome.exit_code == 0
    seen = json.loads(outcome.stdout)
    assert "ARTIFACTIZE_TEST_CANARY" not in seen
    assert (seen["ONLY"], seen["SPACED"]) == ("this", "a b")
    given = {key.upper() for key in seen if not added_by_wine(key)}
    assert given == {key.upper() for key in environment}


async def test_cwd_is_the_given_directory(tmp_path: Path) -> None:
    outcome = await RUNNER.run(python("import os; print(os.getcwd())", cwd=str(tmp_path)))
    assert os.path.normcase(outcome.stdout.decode().strip()) == os.path.normcase(
        str(tmp_path.resolve())
    )


async def test_stdin_is_delivered_then_closed() -> None:
    payload = os.urandom(1024 * 1024)  # far over a pipe buffer: written while stdout is read
    outcome = await RUNNER.run(
        python("import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())", stdin=payload)
    )
    assert outcome.exit_code == 0
    assert outcome.stdout == payload


async def test_child_that_ignores_stdin_is_fine() -> None:
    outcome = await RUNNER.run(python("print('no reading')", stdin=b"x" * (1024 * 1024)))
    assert (outcome.exit_code, outcome.stdout) == (0, b"no reading" + NL)


# --- bounded capture --------------------------------------------------------------------------


async def test_stdout_is_bounded_and_the_excess_drained() -> None:
    code = "import sys; sys.stdout.write('a' * 5000); sys.stderr.write('e' * 10)"
    outcome = await RUNNER.run(python(code, capture_limit_bytes=1000))
    assert outcome.exit_code == 0  # the writer was never blocked by a full pipe
    assert (outcome.stdout, outcome.stdout_truncated) == (b"a" * 1000, True)
    assert (outcome.stderr, outcome.stderr_truncated) == (b"e" * 10, False)


async def test_stderr_is_bounded_independently() -> None:
    code = "import sys; sys.stderr.write('e' * 300000); sys.stdout.write('out')"
    outcome = await RUNNER.run(python(code, capture_limit_bytes=100))
    assert outcome.exit_code == 0
    assert (outcome.stderr, outcome.stderr_truncated) == (b"e" * 100, True)
    assert (outcome.stdout, outcome.stdout_truncated) == (b"out", False)


async def test_output_at_the_limit_is_kept_and_one_byte_more_is_truncated() -> None:
    write = "import sys; sys.stdout.buffer.write(b'x' * {})"
    exact = await RUNNER.run(python(write.format(1000), capture_limit_bytes=1000))
    assert (len(exact.stdout), exact.stdout_truncated) == (1000, False)
    over = await RUNNER.run(python(write.format(1001), capture_limit_bytes=1000))
    assert (len(over.stdout), over.stdout_truncated) == (1000, True)


async def test_every_chunk_is_shown_to_the_observer_even_past_the_limit() -> None:
    seen: list[tuple[str, bytes]] = []
    code = "import sys; sys.stdout.write('o' * 3000); sys.stdout.flush(); sys.stderr.write('e')"
    outcome = await RUNNER.run(
        python(code, capture_limit_bytes=10, observe_output=lambda s, c: seen.append((s, c)))
    )
    assert outcome.stdout == b"o" * 10
    assert b"".join(chunk for stream, chunk in seen if stream == "stdout") == b"o" * 3000
    assert b"".join(chunk for stream, chunk in seen if stream == "stderr") == b"e"


# --- deadline, cleanup of the whole tree, cancellation ---------------------------------------


async def test_deadline_ends_the_child_and_its_grandchild() -> None:
    outcome, elapsed = await timed_run(python(TREE, timeout_ms=3000))
    assert outcome.timed_out
    assert not outcome.succeeded
    assert elapsed < 3 + END_BOUND_SECONDS
    pids = [int(pid) for pid in outcome.stdout.split()]
    assert len(pids) == 2
    assert wait_gone(pids, command_contains=SLEEPING) == []


async def test_a_grandchild_that_outlives_its_parent_is_still_ended() -> None:
    """The child exits at once; the grandchild it left behind holds no pipe and would live
    60 s: the run's cleanup ends it (the rest of the group / the Job)."""
    code = """
import os, subprocess, sys
grandchild = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
print(grandchild.pid, flush=True)
"""
    outcome, elapsed = await timed_run(python(code))
    assert (outcome.exit_code, outcome.timed_out, outcome.streams_held_open) == (0, False, False)
    assert elapsed < END_BOUND_SECONDS * 2
    assert wait_gone([int(outcome.stdout)], command_contains=SLEEPING) == []


async def test_a_grandchild_holding_the_pipes_cannot_keep_the_run_going() -> None:
    code = """
import os, subprocess, sys
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(grandchild.pid, flush=True)
"""
    outcome, elapsed = await timed_run(python(code))
    assert (outcome.exit_code, outcome.timed_out) == (0, False)
    assert elapsed < END_BOUND_SECONDS * 2
    assert wait_gone([int(outcome.stdout)], command_contains=SLEEPING) == []


async def test_caller_cancellation_ends_the_tree() -> None:
    started = time.monotonic()
    with anyio.move_on_after(3) as scope:
        await RUNNER.run(python(TREE))
    assert scope.cancelled_caught
    assert time.monotonic() - started < 3 + END_BOUND_SECONDS
    # the autouse fixture checks that neither the child nor the grandchild survived


async def test_cancelled_caller_starts_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with anyio.CancelScope() as scope:
        scope.cancel()
        await RUNNER.run(python(f"open({str(marker)!r}, 'w').close()"))
    assert not marker.exists()


# --- the spawn observer -----------------------------------------------------------------------


async def test_run_observed_reports_the_child_identity_before_it_ends() -> None:
    run_observed = getattr(RUNNER, "run_observed", None)
    assert run_observed is not None, "every runner reports spawn identities (tool sessions)"
    seen: list[ProcessIdentity] = []
    outcome = await run_observed(python("import os; print(os.getpid())"), seen.append)
    assert [identity.pid for identity in seen] == [int(outcome.stdout)]
    assert seen[0].create_time > 0


# --- spawn failures and invalid specs ---------------------------------------------------------


async def test_missing_program_is_a_spawn_error(tmp_path: Path) -> None:
    outcome = await RUNNER.run(spec(str(tmp_path / "no-such-program")))
    assert outcome.spawn_error
    assert (outcome.exit_code, outcome.stdout, outcome.succeeded) == (None, b"", False)


async def test_missing_cwd_is_a_spawn_error(tmp_path: Path) -> None:
    outcome = await RUNNER.run(python("print(1)", cwd=str(tmp_path / "gone")))
    assert outcome.spawn_error
    assert not outcome.succeeded


async def test_nul_byte_in_an_argument_is_a_spawn_error() -> None:
    outcome = await RUNNER.run(python("print(1)", "a\0b"))
    assert outcome.spawn_error is not None
    assert "null" in outcome.spawn_error


@pytest.mark.parametrize("timeout_ms", [0, -1, 2_147_483_648])
async def test_timeout_out_of_range_is_refused(timeout_ms: int) -> None:
    with pytest.raises(ValueError, match="timeout_ms"):
        await RUNNER.run(python("print(1)", timeout_ms=timeout_ms))


async def test_timeout_at_its_maximum_is_accepted() -> None:
    outcome = await RUNNER.run(python("print(1)", timeout_ms=2_147_483_647))
    assert outcome.exit_code == 0


async def test_empty_argv_is_refused() -> None:
    with pytest.raises(ValueError, match="argv"):
        await RUNNER.run(spec())


# --- run_between: preparation, the run and the work on its outcome, off the event loop -------


class Refused(Exception):
    """What a ``before`` or ``after`` of these tests raises."""


async def test_run_between_hands_before_s_spec_to_the_run_and_its_outcome_to_after() -> None:
    steps: list[str] = []

    def before() -> ProcessSpec:
        steps.append("before")
        return python("import sys; print(sys.stdin.read().upper())", stdin=b"hello")

    def after(outcome: ProcessOutcome) -> tuple[int | None, bytes]:
        steps.append("after")
        return outcome.exit_code, outcome.stdout

    assert await RUNNER.run_between(before, after) == (0, b"HELLO" + NL)
    assert steps == ["before", "after"]


async def test_run_between_reports_a_spawn_error_to_after(tmp_path: Path) -> None:
    outcome = await RUNNER.run_between(lambda: spec(str(tmp_path / "missing")), lambda o: o)
    assert outcome.spawn_error is not None


async def test_run_between_propagates_what_before_raises_and_starts_nothing(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"

    def before() -> ProcessSpec:
        raise Refused("no")

    def after(outcome: ProcessOutcome) -> None:
        raise AssertionError("after is not called when before fails")

    with pytest.raises(Refused):
        await RUNNER.run_between(before, after)
    assert not marker.exists()


async def test_run_between_propagates_what_after_raises_with_the_tree_ended() -> None:
    seen: list[bytes] = []

    def after(outcome: ProcessOutcome) -> None:
        seen.append(outcome.stdout)
        raise Refused("no")

    code = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
"""
    with pytest.raises(Refused):
        await RUNNER.run_between(lambda: python(code), after)
    assert wait_gone([int(seen[0])], command_contains=SLEEPING) == []


async def test_run_between_deadline_ends_the_child_and_its_grandchild() -> None:
    started = time.monotonic()
    outcome = await RUNNER.run_between(lambda: python(TREE, timeout_ms=3000), lambda o: o)
    assert outcome.timed_out
    assert time.monotonic() - started < 3 + END_BOUND_SECONDS
    pids = [int(pid) for pid in outcome.stdout.split()]
    assert len(pids) == 2
    assert wait_gone(pids, command_contains=SLEEPING) == []


async def test_run_between_caller_cancellation_ends_the_tree_and_skips_after() -> None:
    def after(outcome: ProcessOutcome) -> None:
        raise AssertionError("after is not called for a cancelled caller")

    started = time.monotonic()
    with anyio.move_on_after(3) as scope:
        await RUNNER.run_between(lambda: python(TREE), after)
    assert scope.cancelled_caught
    assert time.monotonic() - started < 3 + END_BOUND_SECONDS
    # the autouse fixture checks that neither the child nor the grandchild survived


async def test_run_between_cancelled_caller_calls_nothing() -> None:
    def before() -> ProcessSpec:
        raise AssertionError("a cancelled caller prepares nothing")

    with anyio.CancelScope() as scope:
        scope.cancel()
        await RUNNER.run_between(before, lambda o: o)
    assert scope.cancelled_caught


async def test_run_between_cancelled_while_preparing_waits_for_before_and_starts_nothing(
    tmp_path: Path,
) -> None:
    """The cancellation lands while ``before`` works (it creates what the run needs): it
    propagates only once ``before`` has returned, so the caller's cleanup sees all it made,
    and the program never starts."""
    marker = tmp_path / "ran"
    made: list[str] = []

    def before() -> ProcessSpec:
        time.sleep(0.5)
        made.append("folder")
        return python(f"open({str(marker)!r}, 'w').close()")

    with anyio.move_on_after(0.1) as scope:
        await RUNNER.run_between(before, lambda o: o)
    assert scope.cancelled_caught
    assert made == ["folder"]
    assert not marker.exists()
