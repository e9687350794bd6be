"""Peak resident memory of a command, sampled with psutil while it runs.

A test-side harness for memory bounds (a runaway model stream, say): the process is
started, its resident set size (its descendants' included) is sampled every few
milliseconds until it exits, and the largest sample is the peak. Sampling can only miss a
peak shorter than its interval, so a bound checked against it is never stricter than the
truth in the direction that matters: a test fails only on memory that was really held.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

SAMPLE_SECONDS = 0.002
MIB = 1024 * 1024


@dataclass(frozen=True)
class Measured:
    returncode: int
    stdout: str
    stderr: str
    peak_rss: int  # bytes

    @property
    def peak_mib(self) -> float:
        return self.peak_rss / MIB


def _rss(process: psutil.Process) -> int:
    total = 0
    try:
        family = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0
    for member in family:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue  # it exited between the listing and the sample
    return total


def run_measuring_peak_rss(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float
) -> Measured:
    """Run ``argv`` to its end (killed past ``timeout`` seconds, then AssertionError) and
    return its exit code, output and peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = psutil.Popen(list(argv), stdout=out, stderr=err, env=dict(env), cwd=cwd)
        peak = 0
        deadline = time.monotonic() + timeout
        try:
            while process.poll() is None:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{argv[:4]} did not end within {timeout} s")
                peak = max(peak, _rss(process))
                time.sleep(SAMPLE_SECONDS)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    return Measured(process.returncode, stdout, stderr, peak)
