"""Claude Code as an Agent backend: ``claude -p`` with stream-json, confined to our tools.

How one run goes (``ClaudeCode.run``):

1. the program is found (``ARTIFACTIZE_CLAUDE_CODE_PATH``, else ``claude`` on ``PATH``);
2. the eval's tools are served over MCP on loopback (``tool_server``), and a private
   folder (0700) gets the MCP configuration (with the server's bearer token) and the
   system preamble, so neither appears on a command line;
3. ``claude`` runs in an empty folder of the state home (no project, no CLAUDE.md to pick
   up; the same folder every time, since Claude Code files its sessions by folder), in
   its own process group through the process port (killed, group and all, on the deadline
   and on cancellation), with the caller's environment, so the person's own sign-in
   (``claude login``) or ``ANTHROPIC_API_KEY``, and ``ANTHROPIC_BASE_URL``, apply; a
   profile's ``base_url`` becomes ``ANTHROPIC_BASE_URL`` when the caller set none. Its
   switches, checked against the pinned CLI's ``--help``:

   - ``--tools ""``: no built-in tool at all (no Bash, Read, Edit, Write, WebFetch,
     WebSearch, Task/Agent, TodoWrite...);
   - ``--strict-mcp-config --mcp-config FILE``: our server and no other MCP server of the
     person's or the project's;
   - ``--allowedTools mcp__artifactize__…``: the served tools, each by name, pre-approved;
     ``--permission-mode dontAsk`` denies anything else instead of asking;
   - ``--setting-sources ""`` and ``--disable-slash-commands``: no settings files (so no
     hooks, no permissions granted elsewhere) and no skills;

4. the stream is read as it comes: ``system/init`` must list our tools and nothing else
   (else the run is refused: the CLI did not switch something off), each assistant
   message's model and usage go to the host (once per message ID), ``result`` ends it;
5. a line that is not stream-json JSON stops the run (protocol error); an exit without a
   ``result`` is a crash, with the last of stderr.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from artifactize.adapters.coding_agents.agent_cli import AgentCli
from artifactize.adapters.coding_agents.programs import (
    PROBE_SECONDS,
    AgentProgram,
    agent_workdir,
    find_program,
    how_it_ended,
    private_file,
    private_folder,
    probe,
    tail,
)
from artifactize.adapters.coding_agents.stream import StreamReader, counters
from artifactize.adapters.coding_agents.tool_server import SERVER_NAME, ServedTools, served_tools
from artifactize.ports.coding_agents import (
    CLAUDE_CODE_BACKEND,
    AgentAnswer,
    AgentHost,
    AgentInstall,
    AgentModel,
    AgentProblem,
    AgentTask,
    CodingAgentError,
)
from artifactize.ports.process import ProcessOutcome, ProcessSpec

CLAUDE_CODE = AgentProgram(
    backend=CLAUDE_CODE_BACKEND,
    title="Claude Code",
    command="claude",
    variable="ARTIFACTIZE_CLAUDE_CODE_PATH",
    package="@anthropic-ai/claude-code",
    minimum=(2, 1, 0),
)
TOOL_PREFIX = f"mcp__{SERVER_NAME}__"
MCP_CONNECT_MS = 30_000
"""How long Claude Code waits for our tool server before its first turn (its own default,
5 s, is short on a loaded machine; our server answers at once, so this is only a bound)."""
NOT_SIGNED_IN_WORDS = ("not logged in", "/login", "invalid api key")
NOT_SIGNED_IN = (
    "Claude Code is not signed in: run `claude login` (a Claude subscription) or set "
    "ANTHROPIC_API_KEY."
)
INITIALIZE: Mapping[str, Any] = {
    "type": "control_request",
    "request_id": "artifactize-models",
    "request": {"subtype": "initialize"},
}
"""The Agent SDK's first control request; Claude Code answers it with, among others, the
models of its model picker (``value``, ``displayName``, ``resolvedModel``)."""
NO_MODEL_LIST = (
    "Claude Code {version} did not list its models ({how}); it takes an alias "
    "(sonnet, opus, haiku) or a full model name as a profile's model."
)
NOT_CONNECTED = "Claude Code started without the eval's tools: it did not reach their MCP server."
NOT_CONFINED = (
    "Claude Code offered tools artifactize did not serve ({tools}), so it cannot be "
    "confined to the declared tools; use a Claude Code version whose `--tools` switch works "
    "(npm install -g @anthropic-ai/claude-code)."
)


def _usage(raw: Mapping[str, Any]) -> dict[str, int]:
    """Anthropic usage counters under the port's keys (only those reported); input tokens
    exclude cached ones there, so the total adds them."""
    pairs = (
        ("input_tokens", "inputTokens"),
        ("output_tokens", "outputTokens"),
        ("cache_read_input_tokens", "cacheReadTokens"),
        ("cache_creation_input_tokens", "cacheWriteTokens"),
    )
    return counters(raw, pairs, tuple(key for _, key in pairs))


class _Reader(StreamReader):
    """The stream-json events of one run, as they arrive."""

    MALFORMED = "Claude Code wrote what is not stream-json to stdout: {line!r}."

    def __init__(self, host: AgentHost, allowed: set[str]) -> None:
        super().__init__(host)
        self.allowed = allowed
        self.result: Mapping[str, Any] | None = None
        self.session_id: str | None = None
        self.model: str | None = None
        self._messages: set[str] = set()
        self.require_tools = True  # a resumed session's init may come before its MCP tools

    def event(self, event: Mapping[str, Any]) -> None:
        self.events.append(event)
        kind = event.get("type")
        session = event.get("session_id")
        if isinstance(session, str):
            self.session_id = session
        if kind == "system" and event.get("subtype") == "init":
            offered = event.get("tools")
            extra = sorted(set(offered) - self.allowed) if isinstance(offered, list) else []
            if not isinstance(offered, list) or extra:
                shown = ", ".join(str(name) for name in extra) or "an unreadable tool list"
                self.stop(
                    CodingAgentError(AgentProblem.UNAVAILABLE, NOT_CONFINED.format(tools=shown))
                )
            elif self.require_tools and self.allowed and not self.allowed & set(offered):
                self.stop(CodingAgentError(AgentProblem.FAILED, NOT_CONNECTED))
        elif kind == "assistant":
            message = event.get("message")
            if isinstance(message, Mapping):
                self._message(message)
        elif kind == "result":
            self.result = event

    def _message(self, message: Mapping[str, Any]) -> None:
        model = message.get("model")
        if isinstance(model, str) and model and not model.startswith("<"):
            self.model = model
            self.host.model_reported(model)
        identifier = str(message.get("id", ""))
        usage = message.get("usage")
        if identifier in self._messages or not isinstance(usage, Mapping):
            return
        self._messages.add(identifier)
        counters = _usage(usage)
        if counters:
            self.host.usage(counters)


class ClaudeCode(AgentCli):
    """The ``claude-code`` backend over the process port."""

    PROGRAM = CLAUDE_CODE
    FOLDER = "artifactize-claude-"
    NO_MODEL_LIST = NO_MODEL_LIST

    def _environment(self, task: AgentTask) -> dict[str, str]:
        environment = dict(self.environment)
        # Claude Code connects MCP servers in the background and may start its first turn
        # before our tools are listed; this makes it wait for them (a resumed run too), and
        # for longer than its 5 s default, past which it goes on without them.
        environment["MCP_CONNECTION_NONBLOCKING"] = "false"
        environment["MCP_CONNECT_TIMEOUT_MS"] = str(MCP_CONNECT_MS)
        if task.base_url and not environment.get("ANTHROPIC_BASE_URL"):
            environment["ANTHROPIC_BASE_URL"] = task.base_url
        return environment

    def argv(self, program: str, task: AgentTask, folder: str, served: ServedTools) -> list[str]:
        config = {
            "mcpServers": {
                SERVER_NAME: {
                    "type": "http",
                    "url": served.url,
                    "headers": {"Authorization": f"Bearer {served.token}"},
                }
            }
        }
        argv = [
            program,
            "--print",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            task.model,
            "--tools",
            "",
            "--strict-mcp-config",
            "--mcp-config",
            private_file(folder, "mcp.json", json.dumps(config)),
            "--setting-sources",
            "",
            "--disable-slash-commands",
            "--permission-mode",
            "dontAsk",
            "--system-prompt-file",
            private_file(folder, "system.md", task.instructions),
        ]
        if task.tools:
            argv += ["--allowedTools", ",".join(TOOL_PREFIX + t.name for t in task.tools)]
        if task.reasoning is not None:
            argv += ["--effort", task.reasoning]
        if task.resume is not None:
            argv += ["--resume", task.resume]
        return argv

    async def run(self, task: AgentTask, host: AgentHost) -> AgentAnswer:
        environment = self._environment(task)
        program, _ = find_program(CLAUDE_CODE, environment)
        allowed = {TOOL_PREFIX + t.name for t in task.tools}
        with private_folder(self.FOLDER) as folder:
            async with served_tools(task.tools, host.call_tool) as served:
                argv = self.argv(program, task, folder, served)
                reader = _Reader(host, allowed)
                reader.require_tools = task.resume is None
                cwd = agent_workdir(self.workdir)
                outcome = await self._stream(argv, cwd, environment, task, reader)
        return self._answer(reader, reader.settled(outcome))

    def _answer(self, reader: _Reader, outcome: ProcessOutcome) -> AgentAnswer:
        result = reader.result
        if outcome.spawn_error is not None:
            raise CodingAgentError(
                AgentProblem.UNAVAILABLE, f"Claude Code could not start: {outcome.spawn_error}."
            )
        if result is None:
            raise CodingAgentError(
                AgentProblem.FAILED,
                f"Claude Code ended ({how_it_ended(outcome)}) without a result: "
                f"{tail(outcome.stderr) or 'no output'}.",
            )
        text = result.get("result")
        if result.get("is_error") is True or result.get("subtype") != "success":
            errors = result.get("errors")
            detail = text if isinstance(text, str) and text else result.get("subtype")
            if isinstance(errors, list) and errors:
                detail = f"{detail} ({'; '.join(str(error) for error in errors)[:300]})"
            if isinstance(detail, str) and any(w in detail.lower() for w in NOT_SIGNED_IN_WORDS):
                raise CodingAgentError(AgentProblem.UNAVAILABLE, NOT_SIGNED_IN)
            raise CodingAgentError(AgentProblem.FAILED, f"Claude Code reported an error: {detail}.")
        usage = result.get("usage")
        return AgentAnswer(
            text=text if isinstance(text, str) else "",
            session_id=reader.session_id,
            reported_model=reader.model,
            usage=_usage(usage) if isinstance(usage, Mapping) else {},
            events=tuple(reader.events),
        )

    async def _signed_in(self, folder: str, program: str, source: str, text: str) -> AgentInstall:
        auth = await probe(
            self.processes, (program, "auth", "status", "--json"), self.environment, folder
        )
        try:
            status = json.loads(auth.stdout.decode("utf-8", "replace"))
        except ValueError:
            status = None
        if not isinstance(status, dict):
            detail = f"Claude Code did not say whether it is signed in: {tail(auth.stderr)}"
            return AgentInstall(CLAUDE_CODE_BACKEND, program, text, None, detail, source)
        if status.get("loggedIn") is not True:
            return AgentInstall(CLAUDE_CODE_BACKEND, program, text, False, NOT_SIGNED_IN, source)
        method = status.get("apiKeySource") or status.get("authMethod") or "signed in"
        detail = f"signed in ({method})"
        return AgentInstall(CLAUDE_CODE_BACKEND, program, text, True, detail, source)

    async def _ask_models(self, program: str, folder: str) -> ProcessOutcome:
        """The models Claude Code offers (its model picker's list), from the answer to the
        Agent SDK's ``initialize`` control request: asked of the CLI with no prompt, so no
        model is called. Runs in an empty private folder with no settings and no tools."""
        argv = (
            program,
            "--print",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--tools",
            "",
            "--strict-mcp-config",
            "--setting-sources",
            "",
            "--disable-slash-commands",
        )
        spec = ProcessSpec(
            argv=argv,
            cwd=folder,
            env=dict(self.environment),
            timeout_ms=PROBE_SECONDS * 1000,
            stdin=(json.dumps(INITIALIZE) + "\n").encode("utf-8"),
        )
        return await self.processes.run(spec)

    def _listed_models(self, stdout: str) -> tuple[AgentModel, ...] | None:
        return _initialized_models(stdout)


def _initialized_models(stdout: str) -> tuple[AgentModel, ...] | None:
    """The ``models`` of the ``initialize`` control response, or None when there is none."""
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        response = event.get("response") if isinstance(event, dict) else None
        if event.get("type") != "control_response" or not isinstance(response, dict):
            continue
        if response.get("request_id") != INITIALIZE["request_id"]:
            continue
        answer = response.get("response")
        models = answer.get("models") if isinstance(answer, dict) else None
        if not isinstance(models, list):
            return None
        return tuple(
            AgentModel(
                str(model["value"]),
                str(model["displayName"]) if model.get("displayName") else None,
                str(model["resolvedModel"]) if model.get("resolvedModel") else None,
            )
            for model in models
            if isinstance(model, dict) and isinstance(model.get("value"), str)
        )
    return None
