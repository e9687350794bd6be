"""A tool-session harness for ``test_tool_sessions.py``: ``start``, ``call`` and ``stop``.

Usage: ``python3 -S session_harness.py MODE RECORDS [OPTION...]``

``RECORDS`` is a directory *outside* the session directory (it survives cleanup): every
invocation appends one JSON line to ``RECORDS/events.jsonl`` with its mode, pid, process
group, ``ARTIFACTIZE_SESSION_DIR``, every ``ARTIFACTIZE_*`` variable it sees, ``TMPDIR``,
``HOME``, ``HARNESS_CANARY`` and the request's ``context`` and ``args``. The path of
``RECORDS`` is also in every harness command line, so a test finds its own harness
processes with psutil.

``start`` reads the JSON request, writes its pid to ``$ARTIFACTIZE_SESSION_DIR/harness.pid``,
prints ``ready`` and runs until ``stop`` creates ``$ARTIFACTIZE_SESSION_DIR/stop``. Options:

``--exit-before-ready``  exit 1 before printing the readiness line;
``--ready-delay=SECONDS`` prepare that long before printing it;
``--exit-after=SECONDS`` exit 0 that long after readiness;
``--grandchild``         first spawn a grandchild (in the same group) that ignores SIGTERM;
``--flood``              after readiness, write 4 MiB to stdout and to stderr (a harness
                         whose output is not drained would block here), then record
                         ``flooded``.

``call`` (a json tool) counts calls in ``$ARTIFACTIZE_SESSION_DIR/calls`` and returns, as a
json block, the count, the harness pid and what it saw. ``args.sleep`` (seconds) makes it
sleep first. With ``--plain`` it is a plain tool: no request on stdin, and it prints that
data as one line of JSON text.

``stop`` records which sleeping calls (``call-sleeping`` events) are still alive as
``calls_alive``, creates the stop flag and exits 0. Options: ``--hang`` (ignore SIGTERM and sleep
forever), ``--fail`` (exit 3 without creating the flag).

The harness uses only the standard library (it runs with ``python3 -S``).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1]
RECORDS = sys.argv[2]
OPTIONS = sys.argv[3:]
SESSION = os.environ.get("ARTIFACTIZE_SESSION_DIR", "")
FLOOD_BYTES = 4 * 1024 * 1024


def option(name: str) -> str | None:
    for item in OPTIONS:
        if item == name:
            return ""
        if item.startswith(name + "="):
            return item.split("=", 1)[1]
    return None


def session_path(name: str) -> str:
    return os.path.join(SESSION, name)


def record(event: str, request: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "event": event,
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "session_dir": SESSION,
        "artifactize_env": {k: v for k, v in os.environ.items() if k.startswith("ARTIFACTIZE_")},
        "tmpdir": os.environ.get("TMPDIR"),
        "home": os.environ.get("HOME"),
        "canary": os.environ.get("HARNESS_CANARY"),
        "cwd": os.getcwd(),
    }
    if request is not None:
        entry["context"] = request.get("context")
        entry["args"] = request.get("args")
        entry["version"] = request.get("version")
    entry.update(extra)
    line = (json.dumps(entry) + "\n").encode()
    fd = os.open(os.path.join(RECORDS, "events.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return entry


def write_file(path: str, text: str) -> None:
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, path)


def sleep_forever() -> None:
    while True:
        time.sleep(3600)


def start() -> None:
    request = json.load(sys.stdin)
    record("start", request)
    write_file(session_path("harness.pid"), str(os.getpid()))
    if option("--exit-before-ready") is not None:
        sys.exit(1)
    ready_delay = option("--ready-delay")
    if ready_delay is not None:
        time.sleep(float(ready_delay))
    if option("--grandchild") is not None:
        subprocess.Popen(
            [sys.executable, "-S", __file__, "grandchild", RECORDS],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not os.path.exists(session_path("grandchild.pid")):
            time.sleep(0.01)
    print("ready", flush=True)
    record("ready")
    if option("--flood") is not None:
        chunk = b"x" * 65536
        for _ in range(FLOOD_BYTES // len(chunk)):
            sys.stdout.buffer.write(chunk)
            sys.stderr.buffer.write(chunk)
        sys.stdout.flush()
        sys.stderr.flush()
        record("flooded")
    exit_after = option("--exit-after")
    if exit_after is not None:
        time.sleep(float(exit_after))
        record("exiting")
        sys.exit(0)
    while not os.path.exists(session_path("stop")):
        time.sleep(0.02)
    record("stopped")


def grandchild() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    record("grandchild")
    write_file(session_path("grandchild.pid"), str(os.getpid()))
    sleep_forever()


def call() -> None:
    plain = option("--plain") is not None
    request = {} if plain else json.load(sys.stdin)
    args = request.get("args") or {}
    if args.get("sleep"):
        record("call-sleeping", request)
        time.sleep(float(args["sleep"]))
    with open(session_path("calls.lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(session_path("calls"), encoding="utf-8") as handle:
                count = int(handle.read()) + 1
        except FileNotFoundError:
            count = 1
        write_file(session_path("calls"), str(count))
    with open(session_path("harness.pid"), encoding="utf-8") as handle:
        harness = int(handle.read())
    entry = record("call", request, count=count, harness=harness)
    data = {key: entry[key] for key in ("count", "harness", "pid", "session_dir", "context")}
    data.update(artifactize_env=entry["artifactize_env"], tmpdir=entry["tmpdir"])
    if plain:
        print(json.dumps(data))
    else:
        json.dump({"content": [{"type": "json", "data": data}]}, sys.stdout)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def stop() -> None:
    json.load(sys.stdin)
    with open(os.path.join(RECORDS, "events.jsonl"), encoding="utf-8") as handle:
        # a line without its newline is still being appended by another harness process
        lines = [line for line in handle if line.endswith("\n")]
        sleeping = [json.loads(line) for line in lines if '"call-sleeping"' in line]
    record("stop", calls_alive=[e["pid"] for e in sleeping if alive(e["pid"])])
    if option("--hang") is not None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        record("stop-hanging")
        sleep_forever()
    if option("--fail") is not None:
        sys.exit(3)
    write_file(session_path("stop"), "")


{"start": start, "call": call, "stop": stop, "grandchild": grandchild}[MODE]()
