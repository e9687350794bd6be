"""``artifactize web`` benchmark: what a request page costs, against a static file of the
same server.

A request page reconnects to the repository (the declarations are read again), resolves
the Human tools' command lines, lists the scope's files and reads the reuse history; the
reference is ``GET /static/web.js`` on the same server and connection, which pays only
the HTTP round trip, the token check and the security headers. Requests go over one
kept-alive ``http.client`` connection (httpx2's client adds a delayed-ACK wait of about
40 ms a request on loopback, which would hide what the server does). Also reported: the time
from starting ``artifactize web`` to its printed URL, against ``python -c pass``.

Each case runs once as a warm-up, then ``--runs`` times interleaved; medians and ratios.

    .venv/bin/python bench/web.py
    .venv/bin/python bench/web.py --runs 30 --json
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.web_server import WebServer, World

DEFAULT_RUNS = 20
STARTS = 5


def timed(action: object) -> float:
    start = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        world = World(Path(root))
        _, request_id = world.waiting()
        web = WebServer(world)
        try:
            connection = http.client.HTTPConnection("127.0.0.1", web.port)
            cookie = {"Cookie": f"artifactize_web_{web.port}={web.token}"}

            def get(path: str) -> object:
                def fetch() -> None:
                    connection.request("GET", path, headers=cookie)
                    response = connection.getresponse()
                    response.read()
                    assert response.status == 200, (path, response.status)

                return fetch

            cases = {
                "static file": get("/static/web.js"),
                "inbox": get("/"),
                "request page": get(f"/request/{request_id}"),
                "text viewer": get(f"/request/{request_id}/view?path=notes.txt"),
            }
            samples: dict[str, list[float]] = {name: [] for name in cases}
            for case in cases.values():
                timed(case)
            for _ in range(args.runs):
                for name, case in cases.items():
                    samples[name].append(timed(case))
        finally:
            connection.close()
            web.stop()
        starts: list[float] = []
        references: list[float] = []
        for _ in range(STARTS):
            references.append(timed(lambda: subprocess.run([sys.executable, "-c", "pass"])))
            start = time.perf_counter()
            again = WebServer(world)
            starts.append(time.perf_counter() - start)
            again.stop()
    medians = {name: statistics.median(values) for name, values in samples.items()}
    reference = medians["static file"]
    report: dict[str, dict[str, object]] = {
        name: {"medianMs": round(value * 1000, 2), "ratio": round(value / reference, 1)}
        for name, value in medians.items()
    }
    start_ratio = statistics.median(starts) / statistics.median(references)
    report["start to URL"] = {
        "medianMs": round(statistics.median(starts) * 1000, 1),
        "ratio": round(start_ratio, 1),
        "reference": "python -c pass",
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, row in report.items():
        against = row.get("reference", "GET /static/web.js")
        print(f"{name:14} {row['medianMs']:8} ms  {row['ratio']:6}x {against}")


if __name__ == "__main__":
    main()
