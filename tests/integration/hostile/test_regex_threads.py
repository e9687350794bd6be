"""The regex engine under threads: compilation hammered from many short-lived threads.

``ry`` (0.0.105) first imported on a thread that then exits segfaults at the next crate
error raised on another thread. ``RyRegexEngine`` imports it on the main thread, or on a
parked thread that lives as long as the process. Each case runs in a fresh interpreter, since
the import happens once per process: the adapter's case must exit 0; the control case
(``import ry`` on a worker thread that exits, as a lazy import would) shows the hazard is
real, so the first case can fail.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.hostile import record_counts, scaled

REPO_ROOT = Path(__file__).resolve().parents[3]
THREADS = 8
ROUNDS = 20

HAMMER = """
import sys, threading
from artifactize.ports.regex import RegexError
rounds, threads, naive = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "naive"
patterns = ["(", "a{99999999}", "[z-a]", r"\\p{Nope}", "x+", "(?i)straße", "a" * 3000]
box = []
def first():
    if naive:
        import ry
        box.append(ry)
    else:
        from artifactize.adapters.ry_regex import RyRegexEngine
        box.append(RyRegexEngine())  # constructed on a thread that now exits
starter = threading.Thread(target=first)
starter.start()
starter.join()
compiled = errors = 0
lock = threading.Lock()
def work():
    global compiled, errors
    for pattern in patterns:
        try:
            if naive:
                box[0].Regex(pattern, size_limit=2 * 1024 * 1024)
            else:
                box[0].compile(pattern, case_insensitive=False, size_limit=2 * 1024 * 1024)
            with lock:
                compiled += 1
        except (RegexError, ValueError):
            with lock:
                errors += 1
for _ in range(rounds):
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
print(compiled, errors)
"""


def hammer(mode: str, rounds: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HAMMER, str(rounds), str(THREADS), mode],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_compilation_from_many_short_lived_threads_never_crashes() -> None:
    rounds = scaled(ROUNDS)
    done = hammer("adapter", rounds)
    record_counts("regex: compile rounds on short-lived threads", rounds, int(done.returncode != 0))
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    compiled, errors = map(int, done.stdout.split())
    assert compiled + errors == rounds * THREADS * 7
    assert errors == rounds * THREADS * 4  # the crate refused the four invalid patterns


def test_control_a_naive_import_on_an_exiting_thread_crashes() -> None:
    """Why the adapter parks the import: without it the same hammer segfaults."""
    done = hammer("naive", ROUNDS)
    assert done.returncode < 0, "ry no longer crashes: the parked-thread import may go"
