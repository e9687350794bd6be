"""Codex as an Agent backend: ``codex exec --json``, confined to our tools.

How one run goes (``Codex.run``), as for Claude Code (``claude_code``):

1. the program is found (``ARTIFACTIZE_CODEX_PATH``, else ``codex`` on ``PATH``) and its
   version checked;
2. the eval's tools are served over MCP on loopback; Codex reaches them as the MCP server
   ``artifactize`` with the bearer token in an environment variable of its own
   (``bearer_token_env_var``), never on its command line;
3. ``codex exec`` runs in the empty folder of the state home, in its own process group,
   with the caller's environment (so ``codex login``, or ``OPENAI_API_KEY``, apply), and
   these switches, each found in the pinned CLI's ``--help``, ``codex features list`` and
   its configuration keys:

   - ``--ignore-user-config`` and ``--ignore-rules``: none of the person's MCP servers,
     profiles or exec rules (sign-in still comes from ``CODEX_HOME``);
   - ``--disable`` of every feature that adds a tool: ``shell_tool``, ``unified_exec``,
     ``view_image``, ``multi_agent``, ``goals``, ``image_generation``, ``apps``,
     ``plugins``, ``skill_search``, ``tool_suggest``, ``sleep_tool``, ``hooks``,
     ``browser_use``, ``computer_use``; ``web_search = "disabled"``;
     ``tools.experimental_request_user_input = {enabled = false}``;
   - ``model_catalog_json``: Codex's own bundled catalog (``codex debug models
     --bundled``) with ``apply_patch_tool_type`` cleared, so no model gets ``apply_patch``,
     and ``supports_search_tool`` off, so our tools are listed as they are (what remains
     besides them are Codex's MCP resource tools, which reach only our server);
   - ``sandbox_mode = "read-only"`` and ``approval_policy = "never"``: were a built-in to remain,
     it could neither write nor ask; our server's tools, each listed in ``enabled_tools``,
     are pre-approved (``default_tools_approval_mode = "approve"``);
   - ``model_instructions_file``: our system preamble in place of Codex's own;

4. the events are read as they come: a built-in tool item (a command, a file change, a web
   search) stops the run (the switches did not hold), an MCP call to another server too;
   ``turn.completed`` carries usage; the last ``agent_message`` is the answer;
5. ``OPENAI_BASE_URL``, else a profile's ``base_url``, becomes a model provider of ours
   (``model_providers.artifactize``: that base URL, the Responses API, no WebSocket, the
   key from ``OPENAI_API_KEY`` when set, else Codex's own sign-in), since Codex does not
   read ``OPENAI_BASE_URL`` itself.

The model: Codex records the model each turn ran on in its session file
(``$CODEX_HOME/sessions/…/rollout-…-<thread id>.jsonl``, the ``turn_context`` lines), and
when the server answers with another model (its ``openai-model`` header) it says so as an
``error`` item of its event stream, ``model rerouted: REQUESTED -> SERVED (reason)``. The
rerouted model, else the session's, is the reported model, checked against the requested
one as for the API backends (a reroute stops the run at once).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from artifactize.adapters.coding_agents.agent_cli import AgentCli
from artifactize.adapters.coding_agents.programs import (
    AgentProgram,
    agent_workdir,
    check_version,
    find_program,
    how_it_ended,
    parse_version,
    private_file,
    private_folder,
    probe,
    tail,
)
from artifactize.adapters.coding_agents.stream import StreamReader, counters
from artifactize.adapters.coding_agents.tool_server import SERVER_NAME, ServedTools, served_tools
from artifactize.ports.coding_agents import (
    CODEX_BACKEND,
    AgentAnswer,
    AgentHost,
    AgentInstall,
    AgentModel,
    AgentProblem,
    AgentTask,
    CodingAgentError,
)
from artifactize.ports.process import ProcessOutcome, ProcessRunner

CODEX = AgentProgram(
    backend=CODEX_BACKEND,
    title="Codex",
    command="codex",
    variable="ARTIFACTIZE_CODEX_PATH",
    package="@openai/codex",
    minimum=(0, 171, 0),
)
TOKEN_VARIABLE = "ARTIFACTIZE_MCP_TOKEN"
PROVIDER = "artifactize"
DISABLED_FEATURES = (
    "shell_tool",
    "unified_exec",
    "view_image",
    "multi_agent",
    "goals",
    "image_generation",
    "apps",
    "plugins",
    "skill_search",
    "tool_suggest",
    "sleep_tool",
    "hooks",
    "browser_use",
    "computer_use",
)
BUILTIN_ITEMS = ("command_execution", "file_change", "web_search", "todo_list")
NOT_SIGNED_IN = "Codex is not signed in: run `codex login` (a ChatGPT plan) or set OPENAI_API_KEY."
NOT_CONFINED = (
    "Codex used a tool artifactize did not serve ({tool}), so it cannot be confined to the "
    "declared tools; use the Codex version artifactize is tested with "
    "(npm install -g @openai/codex@{version})."
)
TESTED_VERSION = "0.171.0"
NO_MODEL_LIST = (
    "Codex {version} did not list its models (codex debug models: {how}); it takes a model "
    "name (gpt-5.5, say) as a profile's model."
)
REROUTED = re.compile(r"model rerouted: (?P<requested>\S+) -> (?P<served>\S+)")
SESSION_FILE_MAX_BYTES = 64 * 1024 * 1024
"""A session file past this size is not read for the model (a review's is far smaller)."""
CATALOG_OVERRIDES: Mapping[str, Any] = {
    "apply_patch_tool_type": None,  # no apply_patch tool
    "supports_search_tool": False,  # our tools listed as they are, not behind tool_search
    "experimental_supported_tools": [],
}


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _usage(raw: Mapping[str, Any]) -> dict[str, int]:
    """Codex's usage under the port's keys; its input tokens include the cached ones."""
    pairs = (
        ("input_tokens", "inputTokens"),
        ("output_tokens", "outputTokens"),
        ("cached_input_tokens", "cacheReadTokens"),
        ("reasoning_output_tokens", "reasoningTokens"),
    )
    return counters(raw, pairs, ("inputTokens", "outputTokens"))


class _Reader(StreamReader):
    MALFORMED = "Codex wrote what is not its JSON event stream to stdout: {line!r}."

    def __init__(self, host: AgentHost) -> None:
        super().__init__(host)
        self.thread_id: str | None = None
        self.text = ""
        self.usage: dict[str, int] = {}
        self.completed = False
        self.failure: str | None = None
        self.rerouted: str | None = None

    def event(self, event: Mapping[str, Any]) -> None:
        self.events.append(event)
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            self.thread_id = str(event["thread_id"])
        elif kind in ("item.started", "item.completed"):
            item = event.get("item")
            if isinstance(item, Mapping):
                self._item(item, kind == "item.completed")
        elif kind == "turn.completed":
            self.completed = True
            usage = event.get("usage")
            if isinstance(usage, Mapping):
                counters = _usage(usage)
                for name, value in counters.items():
                    self.usage[name] = self.usage.get(name, 0) + value
                if counters:
                    self.host.usage(counters)
        elif kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, Mapping) else None
            self.failure = str(message or "the turn failed")

    def _item(self, item: Mapping[str, Any], completed: bool) -> None:
        kind = item.get("type")
        if kind in BUILTIN_ITEMS:
            self._refuse(str(kind))
        elif kind == "mcp_tool_call" and item.get("server") != SERVER_NAME:
            self._refuse(f"{item.get('server')}.{item.get('tool')}")
        elif kind == "agent_message" and completed and isinstance(item.get("text"), str):
            self.text = str(item["text"])
        elif kind == "error" and completed:
            found = REROUTED.match(str(item.get("message", "")))
            if found is not None and self.rerouted is None:
                self.rerouted = found.group("served")
                self.host.model_reported(self.rerouted)

    def _refuse(self, tool: str) -> None:
        message = NOT_CONFINED.format(tool=tool, version=TESTED_VERSION)
        self.stop(CodingAgentError(AgentProblem.UNAVAILABLE, message))


class Codex(AgentCli):
    """The ``codex`` backend over the process port."""

    PROGRAM = CODEX
    FOLDER = "artifactize-codex-"
    NO_MODEL_LIST = NO_MODEL_LIST

    def __init__(
        self, processes: ProcessRunner, environment: Mapping[str, str], workdir: str
    ) -> None:
        super().__init__(processes, environment, workdir)
        self._catalog: str | None = None

    async def _checked(self, program: str, folder: str) -> None:
        shown = await probe(self.processes, (program, "--version"), self.environment, folder)
        check_version(CODEX, parse_version(shown.stdout.decode("utf-8", "replace")))

    async def _no_apply_patch_catalog(self, program: str, folder: str) -> str:
        """Codex's bundled model catalog with ``apply_patch`` cleared from every model."""
        if self._catalog is None:
            shown = await probe(
                self.processes, (program, "debug", "models", "--bundled"), self.environment, folder
            )
            try:
                catalog = json.loads(shown.stdout.decode("utf-8", "replace"))
                models = catalog["models"]
                for model in models:
                    model.update(CATALOG_OVERRIDES)
            except (ValueError, KeyError, TypeError):
                raise CodingAgentError(
                    AgentProblem.UNAVAILABLE,
                    "Codex did not give its model catalog (codex debug models --bundled), so "
                    "artifactize cannot switch apply_patch off; use Codex "
                    f"{TESTED_VERSION} (npm install -g @openai/codex@{TESTED_VERSION}).",
                ) from None
            self._catalog = json.dumps(catalog)
        return self._catalog

    def _base_url(self, task: AgentTask) -> str | None:
        return self.environment.get("OPENAI_BASE_URL", "").strip() or task.base_url

    def argv(
        self, program: str, task: AgentTask, folder: str, served: ServedTools, catalog: str
    ) -> list[str]:
        server = (
            f"{{url = {_toml_string(served.url)}, "
            f"bearer_token_env_var = {_toml_string(TOKEN_VARIABLE)}, "
            f"enabled_tools = {json.dumps([tool.name for tool in task.tools])}, "
            'default_tools_approval_mode = "approve"}'
        )
        settings = [
            f"mcp_servers.{SERVER_NAME}={server}",
            'web_search="disabled"',
            "tools.experimental_request_user_input={enabled=false}",
            'approval_policy="never"',
            'sandbox_mode="read-only"',  # `exec resume` takes no --sandbox
            "project_doc_max_bytes=0",
            f"model_catalog_json={_toml_string(private_file(folder, 'models.json', catalog))}",
            "model_instructions_file="
            + _toml_string(private_file(folder, "instructions.md", task.instructions)),
        ]
        if task.reasoning is not None:
            settings.append(f"model_reasoning_effort={_toml_string(task.reasoning)}")
        base_url = self._base_url(task)
        if base_url:
            key = (
                f"env_key = {_toml_string('OPENAI_API_KEY')}"
                if self.environment.get("OPENAI_API_KEY", "").strip()
                else "requires_openai_auth = true"
            )
            settings += [
                f"model_provider={_toml_string(PROVIDER)}",
                f"model_providers.{PROVIDER}={{name = {_toml_string(PROVIDER)}, "
                f'base_url = {_toml_string(base_url)}, wire_api = "responses", '
                f"supports_websockets = false, {key}}}",
            ]
        argv = [program, "exec"]
        if task.resume is not None:
            argv += ["resume", task.resume]
        argv += [
            "--json",
            "--skip-git-repo-check",
            "--ignore-user-config",
            "--ignore-rules",
            "--model",
            task.model,
        ]
        for feature in DISABLED_FEATURES:
            argv += ["--disable", feature]
        for setting in settings:
            argv += ["-c", setting]
        argv.append("-")
        return argv

    async def run(self, task: AgentTask, host: AgentHost) -> AgentAnswer:
        program, _ = find_program(CODEX, self.environment)
        workdir = agent_workdir(self.workdir)
        with private_folder(self.FOLDER) as folder:
            await self._checked(program, folder)
            catalog = await self._no_apply_patch_catalog(program, folder)
            async with served_tools(task.tools, host.call_tool) as served:
                argv = self.argv(program, task, folder, served, catalog)
                environment = {**self.environment, TOKEN_VARIABLE: served.token}
                reader = _Reader(host)
                outcome = await self._stream(argv, workdir, environment, task, reader)
        return self._answer(reader, reader.settled(outcome))

    def _answer(self, reader: _Reader, outcome: ProcessOutcome) -> AgentAnswer:
        if outcome.spawn_error is not None:
            raise CodingAgentError(
                AgentProblem.UNAVAILABLE, f"Codex could not start: {outcome.spawn_error}."
            )
        if reader.failure is not None:
            lowered = reader.failure.lower()
            if any(word in lowered for word in ("401", "unauthorized", "not logged in", "login")):
                raise CodingAgentError(AgentProblem.UNAVAILABLE, NOT_SIGNED_IN)
            raise CodingAgentError(
                AgentProblem.FAILED, f"Codex reported an error: {reader.failure}"
            )
        if not reader.completed or outcome.exit_code != 0:
            raise CodingAgentError(
                AgentProblem.FAILED,
                f"Codex ended ({how_it_ended(outcome)}) without completing its turn: "
                f"{tail(outcome.stderr) or 'no output'}.",
            )
        return AgentAnswer(
            text=reader.text,
            session_id=reader.thread_id,
            reported_model=reader.rerouted or self._session_model(reader.thread_id),
            usage=dict(reader.usage),
            events=tuple(reader.events),
        )

    def _session_model(self, thread_id: str | None) -> str | None:
        """The model of the last turn Codex recorded in the thread's session file."""
        if thread_id is None or not re.fullmatch(r"[0-9A-Za-z-]+", thread_id):
            return None
        home = self.environment.get("CODEX_HOME", "").strip()
        root = Path(home) if home else Path(self.environment.get("HOME", "~")) / ".codex"
        model: str | None = None
        for path in sorted(root.expanduser().glob(f"sessions/*/*/*/rollout-*-{thread_id}.jsonl")):
            try:
                if path.stat().st_size > SESSION_FILE_MAX_BYTES:
                    continue
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                if '"turn_context"' not in line:
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                payload = entry.get("payload") if isinstance(entry, dict) else None
                if entry.get("type") == "turn_context" and isinstance(payload, dict):
                    found = payload.get("model")
                    model = found if isinstance(found, str) and found else model
        return model

    async def _signed_in(self, folder: str, program: str, source: str, text: str) -> AgentInstall:
        status = await probe(self.processes, (program, "login", "status"), self.environment, folder)
        said = (status.stdout + status.stderr).decode("utf-8", "replace")
        if status.exit_code == 0 and "not logged in" not in said.lower():
            detail = next(
                (line.strip() for line in said.splitlines() if "logged in" in line.lower()),
                "signed in",
            )
            return AgentInstall(CODEX_BACKEND, program, text, True, detail, source)
        if self.environment.get("OPENAI_API_KEY", "").strip():
            return AgentInstall(
                CODEX_BACKEND, program, text, True, "signed in (OPENAI_API_KEY)", source
            )
        return AgentInstall(CODEX_BACKEND, program, text, False, NOT_SIGNED_IN, source)

    async def _ask_models(self, program: str, folder: str) -> ProcessOutcome:
        """The models Codex offers in its model picker (``visibility = "list"`` in its
        catalog, ``codex debug models``: refreshed for the sign-in when it can be, else the
        catalog shipped with the binary); nothing is sent to a model."""
        return await probe(self.processes, (program, "debug", "models"), self.environment, folder)

    def _listed_models(self, stdout: str) -> tuple[AgentModel, ...] | None:
        try:
            catalog = json.loads(stdout)
            return tuple(
                AgentModel(str(model["slug"]), model.get("display_name") or None)
                for model in catalog["models"]
                if model.get("visibility", "list") == "list"
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
