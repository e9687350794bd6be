"""``artifactize mcp --control``: the tools an agent uses to run and read reviews.

Served by name: ``status``, ``verify_start``, ``run_wait``, ``run_show``, ``run_list``,
``run_cancel``, ``request_list`` and ``eval_explain``. Deliberately no Human action (claim,
submit) and no credential. Each tool is the CLI command a person would run, with ``--json``,
on the same repository and state home, started through the process port (its own process
group, bounded by CONTROL_CALL_SECONDS), so an agent gets exactly what ``artifactize``
answers and every refusal is the CLI's one line (an ``isError`` result):

- ``verify_start`` starts ``verify`` detached (a session of its own, output to a log file
  in ``<state>/control/``), so the Run keeps going when the client disconnects or the
  server stops, and answers its Run ID once the Run exists (VERIFY_START_SECONDS at most);
- ``run_wait`` waits at most ``timeoutSeconds`` (RUN_WAIT_MAX_SECONDS) per call and answers
  the Run's progress, with every request's result once it settled;
- ``run_list`` pages (``limit`` up to RUN_LIST_MAX, ``offset``).

The transports, the audit (``mcp log``), loopback-only HTTP, the bearer token and the
Host/Origin checks are those of ``artifactize mcp`` (``server``, ``http``): a ``ControlRun``
is a ``ServingRun`` whose calls go to ``ControlTools`` instead of an eval's registry.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio

from artifactize.domain.tools.results import ToolResult
from artifactize.domain.use_cases.serving import ServedScope, ServingPorts, ServingRun
from artifactize.ports.process import ProcessRunner, ProcessSpec
from artifactize.ports.threads import WorkerThreads

CONTROL_CALL_SECONDS = 120
VERIFY_START_SECONDS = 60
VERIFY_START_POLL_SECONDS = 0.05
RUN_WAIT_DEFAULT_SECONDS = 20
RUN_WAIT_MAX_SECONDS = 60
RUN_LIST_DEFAULT = 10
RUN_LIST_MAX = 50
# A Run's requests per answer of run_show and run_wait: a Run of 10,000 Artifacts has
# 14,000 requests (3.5 MB as run_view gives them), past what a coding agent takes as one
# tool result; an answer counts them all by status and lists a page.
RUN_VIEW_REQUESTS_DEFAULT = 100
RUN_VIEW_REQUESTS_MAX = 500
CONTROL_FOLDER = "control"
EXIT_WAIT_TIMED_OUT = 3
STARTED = re.compile(r"Started (run-[A-Za-z0-9_-]+)")
SELECTOR = {"type": "string", "description": "ARTIFACT (its evals) or ARTIFACT/EVAL."}
RUN_ID = {"type": "string", "description": "A Run ID, e.g. run-Hq2b9X."}
REQUEST_PAGE = {
    "limit": {
        "type": "integer",
        "minimum": 1,
        "maximum": RUN_VIEW_REQUESTS_MAX,
        "description": f"Requests listed (default {RUN_VIEW_REQUESTS_DEFAULT}); "
        "counts covers them all.",
    },
    "offset": {"type": "integer", "minimum": 0, "description": "Requests skipped first."},
    "status": {
        "type": "string",
        "pattern": "^[A-Z_]{1,40}$",
        "description": "Only the requests of this status (e.g. RED, ERROR).",
    },
}


@dataclass(frozen=True)
class ControlTool:
    name: str
    description: str
    input_schema: Mapping[str, Any]


def _schema(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


TOOLS = (
    ControlTool(
        "status",
        "What `verify` would do, per eval: its state, action (reuse, execute, wait) and why.",
        _schema({"selector": SELECTOR}),
    ),
    ControlTool(
        "verify_start",
        "Start `verify` on the selection as a durable Run that keeps going if you disconnect; "
        "answers its runId. Follow it with run_wait.",
        _schema(
            {
                "selector": SELECTOR,
                "comment": {"type": "string", "description": "Why (shown with the Run)."},
                "recursive": {"type": "boolean"},
                "force": {"type": "boolean"},
            },
            ("selector",),
        ),
    ),
    ControlTool(
        "run_wait",
        f"Wait until the Run settles, at most timeoutSeconds (1-{RUN_WAIT_MAX_SECONDS}, "
        f"default {RUN_WAIT_DEFAULT_SECONDS}); answers its progress, and its results once "
        "settled. Call again while settled is false.",
        _schema(
            {
                "runId": RUN_ID,
                "timeoutSeconds": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": RUN_WAIT_MAX_SECONDS,
                },
                **REQUEST_PAGE,
            },
            ("runId",),
        ),
    ),
    ControlTool(
        "run_show",
        "One Run: status, comment, its requests counted by status, and a page of them "
        f"(limit, default {RUN_VIEW_REQUESTS_DEFAULT}; status filters, e.g. RED) with each "
        "one's verdict, result or error.",
        _schema({"runId": RUN_ID, **REQUEST_PAGE}, ("runId",)),
    ),
    ControlTool(
        "run_list",
        f"Runs of this repository, newest first, a page at a time (limit 1-{RUN_LIST_MAX}).",
        _schema(
            {
                "limit": {"type": "integer", "minimum": 1, "maximum": RUN_LIST_MAX},
                "offset": {"type": "integer", "minimum": 0},
            }
        ),
    ),
    ControlTool(
        "run_cancel",
        "Stop a RUNNING Run (its reviews are cancelled, its processes stopped).",
        _schema({"runId": RUN_ID}, ("runId",)),
    ),
    ControlTool(
        "request_list",
        "Saved requests, newest Run first; optionally one Run's, or only those waiting for a "
        "person (no Human action is offered here).",
        _schema(
            {
                "runId": RUN_ID,
                "waiting": {"type": "boolean"},
                "limit": {"type": "integer", "minimum": 1, "maximum": RUN_LIST_MAX},
            }
        ),
    ),
    ControlTool(
        "eval_explain",
        "One eval: what it reads (its Artifacts' fingerprints), its reuse key, and whether "
        "and why verify would execute it.",
        _schema({"eval": {"type": "string", "description": "ARTIFACT/EVAL."}}, ("eval",)),
    ),
)


def run_view(run: Mapping[str, Any], arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A Run as an agent needs it: where it stands, its requests counted by status, and a
    page of them (``limit``, ``offset``, ``status`` in ``arguments``) with their outcomes."""
    chosen = arguments or {}
    limit = int(chosen.get("limit") or RUN_VIEW_REQUESTS_DEFAULT)
    offset = int(chosen.get("offset") or 0)
    wanted = chosen.get("status")
    requests = [r for r in run.get("requests") or [] if isinstance(r, Mapping)]
    counts: dict[str, int] = {}
    for request in requests:
        counts[str(request.get("status"))] = counts.get(str(request.get("status")), 0) + 1
    matching = [r for r in requests if wanted is None or r.get("status") == wanted]
    return {
        "runId": run.get("id"),
        "status": run.get("status"),
        "settled": run.get("status") != "RUNNING",
        "comment": run.get("comment"),
        "createdAt": run.get("createdAt"),
        "completedAt": run.get("completedAt"),
        "counts": counts,
        "total": len(matching),
        "limit": limit,
        "offset": offset,
        "requests": [
            {
                "requestId": request.get("id"),
                "evalId": request.get("evalId"),
                "status": request.get("status"),
                "result": request.get("result"),
                "error": request.get("error"),
                "errorCode": request.get("errorCode"),
                "blockedReason": request.get("blockedReason"),
                "source": (request.get("source") or {}).get("kind"),
            }
            for request in matching[offset : offset + limit]
        ],
    }


class _NoSessions:
    """The control tools start no tool session."""

    async def close(self) -> list[str]:
        return []


@dataclass(frozen=True)
class _ControlPorts:
    """What ServingRun reads of a registry's ports: the worker threads (its inline-first
    reads; the control tools run commands, so they never use them)."""

    threads: WorkerThreads


@dataclass
class ControlTools:
    """The eight tools over the CLI (``self_command``) on one repository and state home."""

    repo: str
    state_dir: str
    self_command: tuple[str, ...]
    processes: ProcessRunner
    environment: Mapping[str, str]
    threads: WorkerThreads
    scope: tuple[str, ...] = ()
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def list(self) -> list[ControlTool]:
        return list(TOOLS)

    # the shape ServingRun expects of a connection's registry ------------------------------
    @property
    def ports(self) -> _ControlPorts:
        return _ControlPorts(self.threads)

    def sessions(self, ports: Any) -> _NoSessions:
        return _NoSessions()

    def with_sessions(self, sessions: Any) -> ControlTools:
        return self

    def with_inline_first(self, inline: Any) -> ControlTools:
        return self

    # the tools -----------------------------------------------------------------------------
    def _argv(self, *args: str) -> tuple[str, ...]:
        return (
            *self.self_command,
            "--repo",
            self.repo,
            "--state-dir",
            self.state_dir,
            "--json",
            *args,
        )

    async def _cli(self, *args: str, seconds: float = CONTROL_CALL_SECONDS) -> tuple[int, Any]:
        outcome = await self.processes.run(
            ProcessSpec(
                argv=self._argv(*args),
                cwd=self.repo,
                env=dict(self.environment),
                timeout_ms=int(seconds * 1000),
            )
        )
        try:
            data = json.loads(outcome.stdout.decode("utf-8", "replace"))
        except ValueError:
            data = None
        return (outcome.exit_code if outcome.exit_code is not None else -1), data

    @staticmethod
    def _refused(data: Any, fallback: str) -> ToolResult | None:
        if isinstance(data, dict) and set(data) == {"error"}:
            return ToolResult.error(str(data["error"]))
        if data is None:
            return ToolResult.error(fallback)
        return None

    async def call(self, name: str, arguments: Any, output_root: str | None = None) -> ToolResult:
        self._reap()
        handler = getattr(self, f"_tool_{name}", None)
        if handler is None or not isinstance(arguments, dict):
            return ToolResult.error(f"Unknown control tool or bad arguments: {name}.")
        problem = _check(name, arguments)
        if problem is not None:
            return ToolResult.error(problem)
        result: ToolResult = await handler(arguments)
        return result

    async def _tool_status(self, arguments: dict[str, Any]) -> ToolResult:
        selector = arguments.get("selector")
        _, data = await self._cli("status", *([selector] if selector else []))
        return self._refused(data, "status gave no answer.") or ToolResult.json(data)

    async def _tool_eval_explain(self, arguments: dict[str, Any]) -> ToolResult:
        eval_id = str(arguments["eval"])
        if "/" not in eval_id:
            return ToolResult.error(f"eval must be ARTIFACT/EVAL, got {eval_id!r}.")
        _, data = await self._cli("status", eval_id)
        refused = self._refused(data, "status gave no answer.")
        if refused is not None:
            return refused
        [found] = [e for e in data["evals"] if e.get("evalId") == eval_id] or [None]
        if found is None:
            return ToolResult.error(f"Unknown eval: {eval_id}")
        return ToolResult.json(
            {
                "evalId": eval_id,
                "kind": found.get("kind"),
                "reads": found.get("fingerprints"),
                "key": found.get("key"),
                "state": found.get("state"),
                "wouldExecute": found.get("action") == "execute",
                "action": found.get("action"),
                "why": found.get("reason"),
                "scope": data.get("scope"),
            }
        )

    async def _tool_run_show(self, arguments: dict[str, Any]) -> ToolResult:
        _, data = await self._cli("run", "show", str(arguments["runId"]))
        refused = self._refused(data, "run show gave no answer.")
        return refused or ToolResult.json(run_view(data, arguments))

    async def _tool_run_wait(self, arguments: dict[str, Any]) -> ToolResult:
        seconds = int(arguments.get("timeoutSeconds") or RUN_WAIT_DEFAULT_SECONDS)
        args = ("run", "show", str(arguments["runId"]), "--wait", "--timeout-ms")
        _, data = await self._cli(
            *args, str(seconds * 1000), seconds=seconds + CONTROL_CALL_SECONDS
        )
        refused = self._refused(data, "run show gave no answer.")
        return refused or ToolResult.json(run_view(data, arguments))

    async def _tool_run_list(self, arguments: dict[str, Any]) -> ToolResult:
        limit = int(arguments.get("limit") or RUN_LIST_DEFAULT)
        offset = int(arguments.get("offset") or 0)
        _, data = await self._cli("run", "list", "--limit", str(limit), "--offset", str(offset))
        refused = self._refused(data, "run list gave no answer.")
        if refused is not None:
            return refused
        return ToolResult.json({"runs": data, "limit": limit, "offset": offset})

    async def _tool_run_cancel(self, arguments: dict[str, Any]) -> ToolResult:
        _, data = await self._cli("run", "cancel", str(arguments["runId"]))
        return self._refused(data, "run cancel gave no answer.") or ToolResult.json(run_view(data))

    async def _tool_request_list(self, arguments: dict[str, Any]) -> ToolResult:
        args = ["request", "list"]
        if arguments.get("runId"):
            args += ["--run", str(arguments["runId"])]
        if arguments.get("waiting"):
            args.append("--waiting")
        args += ["--limit", str(int(arguments.get("limit") or RUN_LIST_MAX))]
        _, data = await self._cli(*args)
        refused = self._refused(data, "request list gave no answer.")
        return refused or ToolResult.json({"requests": data})

    async def _tool_verify_start(self, arguments: dict[str, Any]) -> ToolResult:
        args = ["verify", str(arguments["selector"])]
        if arguments.get("comment"):
            args += ["--comment", str(arguments["comment"])]
        if arguments.get("recursive"):
            args.append("--recursive")
        if arguments.get("force"):
            args.append("--force")
        folder = Path(self.state_dir) / CONTROL_FOLDER
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        log = folder / f"verify-{time.time_ns()}.log"
        with log.open("wb") as sink:
            # Detached on purpose: the Run outlives this call, the client and the server.
            process = subprocess.Popen(
                self._argv(*args),
                cwd=self.repo,
                env=dict(self.environment),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=sink,
                start_new_session=True,
            )
        self.started.append(process)
        deadline = time.monotonic() + VERIFY_START_SECONDS
        while time.monotonic() < deadline:
            text = log.read_text(encoding="utf-8", errors="replace")
            found = STARTED.search(text)
            if found is not None:
                return ToolResult.json({"runId": found.group(1), "log": str(log)})
            if process.poll() is not None:
                return ToolResult.error(
                    _first_error(text) or "verify ended before its Run started."
                )
            await anyio.sleep(VERIFY_START_POLL_SECONDS)
        return ToolResult.error(f"verify did not start a Run within {VERIFY_START_SECONDS} s.")

    def _reap(self) -> None:
        """Collect the exit of detached verifies that ended (no zombie stays behind)."""
        self.started = [process for process in self.started if process.poll() is None]


def _first_error(text: str) -> str | None:
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict) and "error" in data:
                return str(data["error"])
    with contextlib.suppress(ValueError):
        start = text.index("{")
        data = json.loads(text[start:])
        if isinstance(data, dict) and "error" in data:
            return str(data["error"])
    return None


def _check(name: str, arguments: Mapping[str, Any]) -> str | None:
    """The arguments against the tool's schema (the SDK checks none)."""
    import jsonschema

    tool = next(tool for tool in TOOLS if tool.name == name)

    validator = jsonschema.Draft202012Validator(tool.input_schema)
    error = next(iter(validator.iter_errors(dict(arguments))), None)
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "arguments"
    return f"{name}: {where}: {error.message}"


@dataclass
class ControlRun(ServingRun):
    """A ``ServingRun`` (audit, transports) whose calls go to ``ControlTools``."""

    control: ControlTools | None = None

    def _document(self) -> dict[str, Any]:
        data = {
            "control": True,
            "evalId": None,
            "artifactId": None,
            "scope": [],
            "tools": [tool.name for tool in TOOLS],
            "transport": self.transport,
        }
        if self.problems:
            data["problems"] = list(self.problems)
        return data


def control_run(
    tools: ControlTools, ports: ServingPorts, repo: str, transport: str, workspace: Any
) -> ControlRun:
    served = ServedScope(
        workspace=workspace,
        registry=cast(Any, tools),
        eval_id=None,
        artifact=None,
        pins={},
        max_tool_calls=None,
        prompt=None,
    )
    run = ControlRun(served, ports, repo, transport=transport, control=tools)
    run.session_id = run.new_session_id()
    return run
