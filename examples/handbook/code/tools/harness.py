"""A tool-session harness: `start` keeps a calculator loaded, `eval` asks it, `stop` ends it.

start: reads the JSON envelope, prints one line when ready, then serves requests through
files in $ARTIFACTIZE_SESSION_DIR until asked to stop. Each file is written whole under
another name, then renamed into place: the other side polls for it and must never read
one half-written.
"""

import json
import os
import pathlib
import sys
import time

session = pathlib.Path(os.environ.get("ARTIFACTIZE_SESSION_DIR", "."))
inbox = session / "inbox.json"
outbox = session / "outbox.json"
stop_flag = session / "stop"


def write_whole(path: pathlib.Path, data: dict) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data))
    os.replace(partial, path)


def start() -> None:
    json.load(sys.stdin)
    sys.path.insert(0, os.getcwd())
    from src import calc

    namespace = {"add": calc.add, "divide": calc.divide}
    print("ready", flush=True)
    while not stop_flag.exists():
        if inbox.exists():
            expression = json.loads(inbox.read_text())["expression"]
            inbox.unlink()
            try:
                value = repr(eval(expression, {"__builtins__": {}}, namespace))
            except Exception as exc:  # the Agent sees the error text
                value = f"error: {exc}"
            write_whole(outbox, {"value": value})
        time.sleep(0.01)


def evaluate() -> None:
    request = json.load(sys.stdin)
    write_whole(inbox, {"expression": request["args"]["expression"]})
    while not outbox.exists():
        time.sleep(0.01)
    value = json.loads(outbox.read_text())["value"]
    outbox.unlink()
    json.dump({"content": [{"type": "text", "text": value}]}, sys.stdout)


def stop() -> None:
    stop_flag.touch()


{"start": start, "eval": evaluate, "stop": stop}[sys.argv[1]]()
