"""MCP benchmark: a ``tools/call`` of ``read`` through the stdio server against a direct
registry call, and against the hop (the same call through a server that does nothing).

Writes a workspace into a temporary directory (removed at the end, even on an error or
Ctrl-C): a root ``index.artf`` with ``read = { builtin = "read" }`` and an Agent eval
``bench/review``, and ``notes.txt`` (200 lines). Then, in this one process and one event
loop, it times:

- **direct**: ``await registry.call("read_bench", ARGS)`` on the real registry of the eval
  (the real POSIX adapters), what an Agent review does per call;
- **served**: ``await client.call_tool("read_bench", ARGS)`` with the official ``mcp``
  SDK client driving a real ``artifactize mcp --eval bench/review`` subprocess over
  stdio: the JSON-RPC round trip, the SDK on both sides, the audit entry written before
  the call (one SQLite commit), the call itself (``read`` starts on the server's event
  loop, ``InlineFirst``; direct runs it on a worker thread, as a review does) and the
  content mapping; the entry's completion is written once the answer is;
- **hop**: the same ``client.call_tool("read_bench", ARGS)`` against
  ``bench/mcp_hop_server.py``, a subprocess serving one tool with the same SDK low-level
  ``Server`` over the same stdio wire (``entrypoints.mcp.stdio``) that answers every call
  with the fixed result the real server returned (the same bytes back). It is the fixed
  cost of the transport and the protocol for this call — pipes, JSON-RPC, both SDKs'
  validation and serialization of the same messages — with no tool, no audit, no mapping;
- **ping**: ``client.send_ping()`` through the real server, for reference only (a
  round trip with no tools/call machinery and an empty answer).

- **peer** (issue 25 item 5): ``read`` of the same 80 lines (``list`` of a 200-entry folder
  too, ``servedList``, with its hop ``hopList``: the list's fixed answer through the hop
  server) against ``read_text_file`` with ``head: 80`` and ``list_directory``
  of ``@modelcontextprotocol/server-filesystem`` (the MCP project's reference filesystem
  server, Node; pinned PEER_VERSION, installed with npm into ``build/npm`` on first use)
  serving the same folder, over the same official client. Every answer is checked (the
  80 lines, the 200 entries). Target: ours at most 1.0× the peer, at p50 and at p95.
  Each server's CPU time per call is reported too (psutil, per block of calls), a figure
  the load of other processes hardly moves. ``--no-peer`` skips it; ``--no-install`` skips
  it when the peer is not installed yet; without npm it is skipped with a message.

The kinds take turns in rounds (``--calls`` each per round, ``--rounds`` rounds, after a
warm-up), so load from elsewhere on the machine hits them alike. It reports p50 and p95 of
each, the ratios served/direct, and the target check: served p50 ≤ 1.5 × direct p50 + hop
p50 (the issue's "1.5× plus a fixed hop"), and the same with the p95s.

``--profile FILE`` runs the served server under cProfile and writes its stats to FILE
(the figures are then not comparable; it is for finding where the time goes).

Latest medians on a shared 2-core machine (load average 0.8–1.0, nine runs): served − hop
is 1.2 × direct at p50 and 1.25 × at p95, within the 1.5 × the target allows (it was 1.9 ×
and 2.1 ×); served/direct is 3.8 × at p50 and 3.6 × at p95. bench/README.md has the figures
and where the time goes.

    .venv/bin/python bench/mcp.py
    .venv/bin/python bench/mcp.py --rounds 5 --calls 40 --json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# Run as a script, this file's folder comes first on sys.path, and this file would shadow
# the ``mcp`` SDK it benchmarks: drop the folder before importing it.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import anyio
import psutil
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.adapters.posix.process import PosixProcessRunner
from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.adapters.worker_threads import AnyioWorkerThreads
from artifactize.domain.tools.registry import AgentToolRegistry, ToolPorts
from artifactize.domain.use_cases.config_service import ConfigService
from tests.support.npm_clients import installed_version

TARGET_RATIO = 1.5
ARGS = {"path": "notes.txt", "limit": 80}
HOP_SERVER = Path(__file__).resolve().parent / "mcp_hop_server.py"
LIST_ARGS = {"path": "entries"}
LIST_ENTRIES = 200
# The peer: the reference filesystem server of the MCP project, from npm, pinned, installed
# into build/npm of this repository on first use (as tests/support/npm_clients.py installs
# the npm clients of `make test-clients`).
PEER_PACKAGE = "@modelcontextprotocol/server-filesystem"
PEER_VERSION = "2.3.0"
PEER_COMMAND = "mcp-server-filesystem"
PEER_TARGET_RATIO = 1.0
NPM_PREFIX = Path(__file__).resolve().parent.parent / "build" / "npm"
NPM_INSTALL_TIMEOUT_SECONDS = 600
NPM_QUIET = ("--loglevel=error",)
DECLARATION = """name = "bench"
[views.agent_tools]
read = { builtin = "read" }
list = { builtin = "list" }
[evals.review]
title = "Bench"
profile = { kind = "agent", backend = "openai", model = "m1" }
payload.instruction = "Review {bench}."
"""


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def figures(samples: list[float]) -> dict[str, float]:
    return {
        "p50Ms": statistics.median(samples) * 1000,
        "p95Ms": percentile(samples, 0.95) * 1000,
        "calls": len(samples),
    }


# Which server process answers each kind of call: its CPU time per call is measured too,
# a figure that the load of other processes on the machine hardly changes (wall time does).
SERVER_OF = {
    "served": "served",
    "servedList": "served",
    "ping": "served",
    "hop": "hop",
    "hopList": "hop",
    "peerRead": "peer",
    "peerList": "peer",
}


def server_processes() -> dict[str, psutil.Process]:
    """This process's server children, by role, found by their command lines."""
    found: dict[str, psutil.Process] = {}
    for child in psutil.Process().children(recursive=True):
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "artifactize.entrypoints.cli.app" in line:
            found["served"] = child
        elif HOP_SERVER.name in line:
            found["hop"] = child
        elif PEER_COMMAND in line or "server-filesystem" in line:
            found["peer"] = child
    return found


def cpu_seconds(process: psutil.Process | None) -> float:
    if process is None:
        return 0.0
    times = process.cpu_times()
    return float(times.user + times.system)


async def timed(work: Callable[[], Awaitable[Any]], count: int, into: list[float]) -> None:
    for _ in range(count):
        start = time.perf_counter()
        await work()
        into.append(time.perf_counter() - start)


def served_command(repo: Path, state: Path, profile: str | None) -> list[str]:
    command = [sys.executable]
    if profile is not None:
        command += ["-m", "cProfile", "-o", profile]
    command += [
        "-m",
        "artifactize.entrypoints.cli.app",
        "--repo",
        str(repo),
        "--state-dir",
        str(state),
    ]
    return [*command, "mcp", "--eval", "bench/review"]


def peer_server(install: bool) -> tuple[Path | None, str]:
    """The peer server's launcher, installed into build/npm at its pinned version when it
    is missing (with ``install``); else None and why."""
    launcher = NPM_PREFIX / "node_modules" / ".bin" / PEER_COMMAND
    wanted = f"{PEER_PACKAGE}@{PEER_VERSION}"
    if installed_version(NPM_PREFIX, PEER_PACKAGE) == PEER_VERSION and launcher.exists():
        return launcher, wanted
    if not install:
        return None, f"{wanted} is not installed in {NPM_PREFIX} and --no-install was given"
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        return None, f"no npm/node on PATH: cannot install {wanted} (needs Node.js 20+)"
    print(f"installing {wanted} into {NPM_PREFIX} (once)", file=sys.stderr)
    NPM_PREFIX.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(NPM_PREFIX),
            "--no-audit",
            "--no-fund",
            *NPM_QUIET,
            wanted,
        ],
        capture_output=True,
        text=True,
        timeout=NPM_INSTALL_TIMEOUT_SECONDS,
        env={**os.environ, "npm_config_update_notifier": "false"},
        check=False,
    )
    if done.returncode != 0 or installed_version(NPM_PREFIX, PEER_PACKAGE) != PEER_VERSION:
        return None, f"npm install {wanted} failed: {done.stderr.strip()[-400:]}"
    return launcher, wanted


async def hop_spec(client: Client, into: Path) -> Path:
    """The tools as the real server lists them and the results it returns for ARGS (read)
    and LIST_ARGS (list): what the hop server serves back."""
    listed = await client.list_tools()
    spec: dict[str, Any] = {"tools": [], "results": {}}
    for name, args in (("read_bench", ARGS), ("list_bench", LIST_ARGS)):
        (tool,) = (t for t in listed.tools if t.name == name)
        result = await client.call_tool(name, args)
        assert not result.is_error, result.content
        spec["tools"].append(tool.model_dump(mode="json", by_alias=True, exclude_none=True))
        spec["results"][name] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    into.write_text(json.dumps(spec), encoding="utf-8")
    return into


async def measure(
    root: Path, rounds: int, calls: int, profile: str | None, peer: Path | None
) -> dict[str, Any]:
    repo, state = root / "repo", root / "state"
    workspace = ConfigService(PosixFilesystem()).load(str(repo))
    ports = ToolPorts(
        PosixFilesystem(),
        RyRegexEngine(),
        PosixProcessRunner(),
        dict(os.environ),
        threads=AnyioWorkerThreads(),
    )
    registry = AgentToolRegistry.for_eval(workspace, "bench/review", ports)
    command = served_command(repo, state, profile)
    served_params = StdioServerParameters(
        command=command[0], args=command[1:], env=dict(os.environ)
    )
    names = ["direct", "served", "hop", "ping"]
    if peer is not None:
        names += ["servedList", "hopList", "peerRead", "peerList"]
    samples: dict[str, list[float]] = {name: [] for name in names}

    async def call_direct() -> None:
        result = await registry.call("read_bench", ARGS)
        assert not result.is_error, result.to_json()

    async with Client(served_params, mode="legacy") as served:  # the handshake era
        spec = await hop_spec(served, root / "hop.json")
        hop_params = StdioServerParameters(
            command=sys.executable, args=[str(HOP_SERVER), str(spec)], env=dict(os.environ)
        )
        peer_params = StdioServerParameters(
            command=str(peer or "true"), args=[str(repo)], env=dict(os.environ)
        )
        async with Client(hop_params, mode="legacy") as hop, contextlib.AsyncExitStack() as stack:
            await hop.list_tools()
            kinds: dict[str, Callable[[], Awaitable[Any]]] = {}

            async def call_served() -> None:
                result = await served.call_tool("read_bench", ARGS)
                assert not result.is_error, result.content

            async def call_hop() -> None:
                result = await hop.call_tool("read_bench", ARGS)
                assert not result.is_error, result.content

            async def ping() -> None:
                await served.send_ping()

            kinds.update(
                {"direct": call_direct, "served": call_served, "hop": call_hop, "ping": ping}
            )
            if peer is not None:
                other = await stack.enter_async_context(Client(peer_params, mode="legacy"))
                await other.list_tools()
                read_path, list_path = str(repo / "notes.txt"), str(repo / "entries")

                async def served_list() -> None:
                    result = await served.call_tool("list_bench", LIST_ARGS)
                    assert not result.is_error, result.content
                    assert result.structured_content is not None
                    assert len(result.structured_content["entries"]) == LIST_ENTRIES

                async def hop_list() -> None:
                    result = await hop.call_tool("list_bench", LIST_ARGS)
                    assert not result.is_error, result.content

                async def peer_read() -> None:
                    result = await other.call_tool(
                        "read_text_file", {"path": read_path, "head": 80}
                    )
                    assert not result.is_error, result.content
                    assert result.structured_content is not None
                    assert result.structured_content["content"].count("\n") == 79

                async def peer_list() -> None:
                    result = await other.call_tool("list_directory", {"path": list_path})
                    assert not result.is_error, result.content
                    assert result.structured_content is not None
                    assert result.structured_content["content"].count("\n") == LIST_ENTRIES - 1

                kinds.update(
                    {
                        "servedList": served_list,
                        "hopList": hop_list,
                        "peerRead": peer_read,
                        "peerList": peer_list,
                    }
                )
            for work in kinds.values():  # warm-up
                await timed(work, max(3, calls // 5), [])
            servers = server_processes()
            cpu: dict[str, float] = dict.fromkeys(kinds, 0.0)
            for _ in range(rounds):
                for name, work in kinds.items():
                    process = servers.get(SERVER_OF.get(name, ""))
                    before = cpu_seconds(process)
                    await timed(work, calls, samples[name])
                    cpu[name] += cpu_seconds(process) - before
    results: dict[str, Any] = {name: figures(values) for name, values in samples.items()}
    for name, seconds in cpu.items():
        if SERVER_OF.get(name) in servers:
            results[name]["serverCpuMsPerCall"] = seconds * 1000 / len(samples[name])
    for cut in ("p50", "p95"):
        direct, served_ms, hop_ms = (results[k][f"{cut}Ms"] for k in ("direct", "served", "hop"))
        label = cut.upper()
        results[f"ratio{label}"] = served_ms / direct
        results[f"servedMinusHop{label}Ms"] = served_ms - hop_ms
        results[f"target{label}Ms"] = TARGET_RATIO * direct + hop_ms
        results[f"targetMet{label}"] = served_ms <= results[f"target{label}Ms"]
    if peer is not None:
        for ours, theirs, label in (
            ("served", "peerRead", "Read"),
            ("servedList", "peerList", "List"),
        ):
            for cut in ("p50", "p95"):
                ratio = results[ours][f"{cut}Ms"] / results[theirs][f"{cut}Ms"]
                results[f"peer{label}{cut.upper()}Ratio"] = ratio
                results[f"peer{label}{cut.upper()}Met"] = ratio <= PEER_TARGET_RATIO
    results["loadAverage"] = os.getloadavg()
    return results


def write_workspace(root: Path) -> None:
    repo = root / "repo"
    repo.mkdir(parents=True)
    (repo / "index.artf").write_text(DECLARATION, encoding="utf-8")
    lines = "".join(f"{n:4d} the quick brown fox jumps over the lazy dog\n" for n in range(200))
    (repo / "notes.txt").write_text(lines, encoding="utf-8")
    entries = repo / "entries"
    entries.mkdir()
    for n in range(LIST_ENTRIES):
        (entries / f"entry-{n:03d}.txt").write_text(f"{n}\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40, help="calls of each kind per round")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the served server into FILE")
    parser.add_argument(
        "--no-peer", action="store_true", help=f"skip the comparison with {PEER_PACKAGE}"
    )
    parser.add_argument(
        "--no-install", action="store_true", help="do not npm-install the peer when missing"
    )
    options = parser.parse_args()
    peer: Path | None = None
    peer_note = "--no-peer"
    if not options.no_peer:
        peer, peer_note = peer_server(not options.no_install)
        if peer is None:
            print(f"peer comparison skipped: {peer_note}", file=sys.stderr)
    root = Path(tempfile.mkdtemp(prefix="artifactize-bench-mcp-"))
    try:
        write_workspace(root)
        results = anyio.run(measure, root, options.rounds, options.calls, options.profile, peer)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["peer"] = peer_note if peer is not None else None
    if options.json:
        print(json.dumps(results, indent=2))
        return
    shown = ("direct", "served", "hop", "ping", "servedList", "hopList")
    for name in [k for k in shown if k in results] + [
        k for k in ("peerRead", "peerList") if k in results
    ]:
        data = results[name]
        server_cpu = data.get("serverCpuMsPerCall")
        cpu_note = "" if server_cpu is None else f"   server CPU {server_cpu:6.3f} ms/call"
        print(
            f"{name:10s} p50 {data['p50Ms']:7.2f} ms   p95 {data['p95Ms']:7.2f} ms"
            f"   ({data['calls']} calls){cpu_note}"
        )
    print(
        f"served/direct: p50 {results['ratioP50']:.2f}x, p95 {results['ratioP95']:.2f}x; "
        f"served - hop: p50 {results['servedMinusHopP50Ms']:.2f} ms, "
        f"p95 {results['servedMinusHopP95Ms']:.2f} ms"
    )
    for cut in ("P50", "P95"):
        verdict = "met" if results[f"targetMet{cut}"] else "NOT met"
        print(
            f"target {cut.lower()}: served <= {TARGET_RATIO} x direct + hop = "
            f"{results[f'target{cut}Ms']:.2f} ms: {verdict}"
        )
    if peer is not None:
        print(
            f"against the peer ({peer_note}, node {peer_node_version()}), target <= {PEER_TARGET_RATIO}x:"
        )
        for label, what in (
            ("Read", "read 80 lines / read_text_file head=80"),
            ("List", f"list {LIST_ENTRIES} entries / list_directory"),
        ):
            cuts = ", ".join(
                f"{cut.lower()} {results[f'peer{label}{cut}Ratio']:.2f}x "
                f"({'met' if results[f'peer{label}{cut}Met'] else 'NOT met'})"
                for cut in ("P50", "P95")
            )
            ours, theirs = ("served", "peerRead") if label == "Read" else ("servedList", "peerList")
            cpu_ratio = ""
            if "serverCpuMsPerCall" in results[ours] and "serverCpuMsPerCall" in results[theirs]:
                cpu_ratio = (
                    f"; server CPU per call "
                    f"{results[ours]['serverCpuMsPerCall'] / results[theirs]['serverCpuMsPerCall']:.2f}x"
                )
            print(f"  {what}: {cuts}{cpu_ratio}")
    print("load average: " + " ".join(f"{value:.2f}" for value in results["loadAverage"]))


def peer_node_version() -> str:
    node = shutil.which("node")
    if node is None:
        return "?"
    done = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


if __name__ == "__main__":
    main()
