"""Views: Agent tools, Human tools and Agent tool sessions of one declaration."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, cast

from artifactize.domain.declarations.commands import read_command, read_operand_args
from artifactize.domain.declarations.diagnostics import KeyProblems, join_key
from artifactize.domain.declarations.identifiers import identifier_problem
from artifactize.domain.declarations.model import (
    COMMAND_TOOL_DEFAULT_TIMEOUT_MS,
    DEFAULT_INPUT_SCHEMA,
    AgentSession,
    AgentTool,
    BuiltinAgentTool,
    BuiltinHumanTool,
    CommandAgentTool,
    CommandHumanTool,
    HumanTool,
    Reference,
    ReferenceUse,
    SessionCommand,
)
from artifactize.domain.declarations.reader import TableReader
from artifactize.domain.declarations.templates import (
    TemplateError,
    description_problem,
    parse_operand,
    parse_plain_template,
)
from artifactize.domain.json_schema import SchemaError, admit_schema
from artifactize.domain.logical_paths import logical_path_problem

B = TypeVar("B")
C = TypeVar("C")

EXECUTION_PATHS_MAX = 64

AGENT_BUILTINS = ("read", "list", "glob", "grep", "view_image", "section", "help", "graph")
HUMAN_BUILTINS = ("read", "list", "section", "help", "open", "graph")
MODEL_INPUT_BUILTINS = ("read", "list", "glob", "grep", "view_image")
PROTOCOLS = ("json", "plain")
HUMAN_TOOL_KINDS = ("launch", "output")
LAUNCH_BUILTINS = ("open", "graph")  # the other Human built-ins print output

_COMMAND_TOOL_KEYS = (
    "description",
    "protocol",
    "command",
    "args",
    "input_schema",
    "execution_paths",
    "timeout_ms",
    "session",
)
_BUILTIN_ONLY = "a built-in reference takes only `builtin`, `args` and `description`"
_SESSION_COMMAND_ONLY = (
    "session `start` and `stop` take only `command`, `args` and `execution_paths`"
)


class ViewParser:
    """Parses ``views`` of one declaration, collecting references and problems."""

    def __init__(self, problems: KeyProblems, references: list[Reference]) -> None:
        self.problems = problems
        self.references = references

    # --- shared pieces ----------------------------------------------------------------

    def tool_name_ok(self, name: str, key_path: str) -> bool:
        problem = identifier_problem(name, "tool name")
        if problem:
            self.problems.add(key_path, problem)
        return problem is None

    def description(self, reader: TableReader, *, required: bool) -> str | None:
        if required and not reader.has("description"):
            return None  # reported as a missing required key
        text = reader.string("description", nonblank=False)
        if text is None:
            return None
        problem = description_problem(text)
        if problem:
            reader.fail("description", problem)
            return None
        return text

    def command(self, reader: TableReader) -> str | None:
        return read_command(reader)

    def execution_paths(self, reader: TableReader) -> tuple[str, ...]:
        paths = reader.string_list("execution_paths")
        if paths is None:
            return ()
        if len(paths) > EXECUTION_PATHS_MAX:
            reader.fail("execution_paths", f"at most {EXECUTION_PATHS_MAX} paths, got {len(paths)}")
            return ()
        seen: set[str] = set()
        for index, path in enumerate(paths):
            problem = logical_path_problem(path) if path else "it is empty"
            if problem:
                reader.fail(
                    f"execution_paths[{index}]",
                    f"must be a workspace-relative path: {problem}",
                )
            elif path in seen:
                reader.fail(f"execution_paths[{index}]", f"duplicate path {path!r}")
            seen.add(path)
        return paths

    def operand_args(
        self, reader: TableReader, use: ReferenceUse, *, human: bool = False
    ) -> tuple[str, ...] | None:
        return read_operand_args(reader, self.references, use, human=human)

    # --- Agent tools ------------------------------------------------------------------

    def _tool(
        self,
        name: str,
        value: Any,
        key_path: str,
        builtin: Callable[[str, Mapping[str, Any], str], B | None],
        command: Callable[[str, Mapping[str, Any], str], C | None],
    ) -> B | C | None:
        """A tool table is a built-in reference (it has ``builtin``) or a command."""
        if not isinstance(value, dict):
            self.problems.add(key_path, "expected a table describing the tool")
            return None
        if not self.tool_name_ok(name, key_path):
            return None
        if "builtin" in value:
            return builtin(name, value, key_path)
        return command(name, value, key_path)

    def agent_tool(self, name: str, value: Any, key_path: str) -> AgentTool | None:
        return self._tool(name, value, key_path, self._builtin_agent_tool, self._command_agent_tool)

    def _builtin_agent_tool(
        self, name: str, value: Mapping[str, Any], key_path: str
    ) -> BuiltinAgentTool | None:
        refused = {k: _BUILTIN_ONLY for k in _COMMAND_TOOL_KEYS if k != "description"}
        refused["session"] = (
            "built-in tools do not accept `session`; only command tools bind to one"
        )
        refused["kind"] = "Agent tools have no `kind`"
        reader = TableReader(
            value, key_path, self.problems, ("builtin", "args", "description"), (), refused
        )
        builtin = reader.choice("builtin", AGENT_BUILTINS)
        description = self.description(reader, required=False)
        args = reader.string_list("args")
        if builtin is None:
            return None
        if not self._agent_builtin_args_ok(reader, builtin, args):
            return None
        return BuiltinAgentTool(name, builtin, args, description)

    def _agent_builtin_args_ok(
        self, reader: TableReader, builtin: str, args: tuple[str, ...] | None
    ) -> bool:
        if args is None:
            if reader.has("args"):
                return False
            if builtin in MODEL_INPUT_BUILTINS:
                return True
            needed = "args = []" if builtin == "graph" else "fixed `args`"
            reader.fail("builtin", f"the `{builtin}` built-in requires {needed}")
            return False
        if builtin in ("glob", "grep", "view_image"):
            reader.fail(
                "args",
                f"the `{builtin}` built-in takes the model's input; fixed `args` are not allowed",
            )
            return False
        return self._fixed_args_ok(reader, builtin, args, human=False)

    def _fixed_args_ok(
        self, reader: TableReader, builtin: str, args: tuple[str, ...], *, human: bool
    ) -> bool:
        arity = _FIXED_ARITY[(builtin, human)]
        if not arity[0] <= len(args) <= arity[1]:
            reader.fail(
                "args",
                f"the `{builtin}` built-in takes {_arity_text(arity)} fixed argument(s), got {len(args)}",
            )
            return False
        if builtin == "help":
            return self._help_args_ok(reader, args)
        if builtin in ("read", "list", "section") and not self._target_ok(
            reader, args[0], human, builtin
        ):
            return False
        if (
            builtin == "open"
            and not _is_url(args[0])
            and not self._target_ok(reader, args[0], human, builtin)
        ):
            return False
        if builtin == "section" and len(args) == 2 and not args[1].strip():
            reader.fail("args[1]", "Section heading must not be blank.")
            return False
        return True

    def _help_args_ok(self, reader: TableReader, args: tuple[str, ...]) -> bool:
        if not args[0].strip():
            reader.fail("args[0]", "the program name must not be blank")
            return False
        for index, arg in enumerate(args):
            if "{" in arg or "}" in arg:
                reader.fail(
                    f"args[{index}]",
                    "`help` arguments are literal names; placeholders are not allowed",
                )
                return False
        return True

    def _target_ok(self, reader: TableReader, target: str, human: bool, builtin: str) -> bool:
        key_path = reader.path("args[0]")
        if human and ("{" in target or "}" in target):
            try:
                operand = parse_operand(target)
            except TemplateError as exc:
                self.problems.add(key_path, str(exc))
                return False
            if operand is None or operand.flag:
                self.problems.add(
                    key_path,
                    "Builtin targets are a logical path or {artifactPath}[/path] or {name}[/path], without a flag prefix.",
                )
                return False
            if operand.name != "artifactPath":
                self.references.append(
                    Reference(operand.name, ReferenceUse.HUMAN_ARGV, key_path, None, operand.suffix)
                )
            return True
        if target == "." and builtin == "list":
            return True  # the virtual root of a file Artifact; checked against the kind later
        problem = logical_path_problem(target)
        if problem is None and target == "" and builtin != "list":
            problem = "it is empty"
        if problem:
            self.problems.add(key_path, f"must be a safe relative logical path: {problem}")
            return False
        return True

    def _command_agent_tool(
        self, name: str, value: Mapping[str, Any], key_path: str
    ) -> CommandAgentTool | None:
        refused = {
            "kind": "Agent tools have no `kind`; `launch`/`output` tools belong in views.human_tools",
        }
        start = len(self.problems.items)  # missing keys count too
        reader = TableReader(
            value,
            key_path,
            self.problems,
            _COMMAND_TOOL_KEYS,
            ("description", "protocol", "command", "args"),
            refused,
        )
        description = self.description(reader, required=True)
        protocol = reader.choice("protocol", PROTOCOLS)
        command = self.command(reader)
        input_schema = self._input_schema(reader)
        args = self._protocol_args(reader, protocol, input_schema)
        execution_paths = self.execution_paths(reader)
        timeout_ms = reader.timeout_ms() or COMMAND_TOOL_DEFAULT_TIMEOUT_MS
        session = reader.string("session")
        if session is not None and identifier_problem(session, "session name"):
            reader.fail("session", identifier_problem(session, "session name") or "")
        if len(self.problems.items) > start:
            return None
        assert description is not None and protocol is not None and command is not None
        assert args is not None and input_schema is not None
        return CommandAgentTool(
            name,
            description,
            cast(Literal["json", "plain"], protocol),
            command,
            args,
            input_schema,
            execution_paths,
            timeout_ms,
            session,
        )

    def _input_schema(self, reader: TableReader) -> Mapping[str, Any] | None:
        if not reader.has("input_schema"):
            return DEFAULT_INPUT_SCHEMA
        try:
            admit_schema(reader.raw("input_schema"), require_object_root=True)
        except SchemaError as exc:
            reader.fail("input_schema", str(exc))
            return None
        return cast(Mapping[str, Any], reader.raw("input_schema"))

    def _protocol_args(
        self, reader: TableReader, protocol: str | None, schema: Mapping[str, Any] | None
    ) -> tuple[str, ...] | None:
        if protocol != "plain":
            return self.operand_args(reader, ReferenceUse.TOOL_ARGV)
        args = reader.string_list("args")
        if args is None or schema is None:
            return args
        properties = schema.get("properties")
        names = set(properties) if isinstance(properties, dict) else set()
        for index, arg in enumerate(args):
            try:
                parts = parse_plain_template(arg)
            except TemplateError as exc:
                reader.fail(f"args[{index}]", str(exc))
                continue
            for part in parts:
                if part.is_placeholder and part.text not in names:
                    reader.fail(
                        f"args[{index}]",
                        f"Unknown plain tool placeholder: {part.text} "
                        "(placeholders name top-level input_schema.properties)",
                    )
        return args

    # --- Human tools ------------------------------------------------------------------

    def human_tool(self, name: str, value: Any, key_path: str) -> HumanTool | None:
        return self._tool(name, value, key_path, self._builtin_human_tool, self._command_human_tool)

    def _builtin_human_tool(
        self, name: str, value: Mapping[str, Any], key_path: str
    ) -> BuiltinHumanTool | None:
        refused = {
            k: "a Human built-in takes only `builtin`, `args`, `description` and `kind`"
            for k in _COMMAND_TOOL_KEYS
            if k != "description"
        }
        refused["session"] = "Human tools do not accept `session`"
        reader = TableReader(
            value,
            key_path,
            self.problems,
            ("builtin", "args", "description", "kind"),
            ("args",),
            refused,
        )
        builtin = reader.choice("builtin", HUMAN_BUILTINS)
        description = self.description(reader, required=False)
        args = reader.string_list("args")
        declared_kind = reader.choice("kind", HUMAN_TOOL_KINDS)
        if builtin is None or args is None:
            return None
        implied = "launch" if builtin in LAUNCH_BUILTINS else "output"
        if declared_kind is not None and declared_kind != implied:
            reader.fail(
                "kind", f"the `{builtin}` built-in is of kind `{implied}`, not `{declared_kind}`"
            )
            return None
        if not self._fixed_args_ok(reader, builtin, args, human=True):
            return None
        return BuiltinHumanTool(
            name, builtin, args, description, cast(Literal["launch", "output"], implied)
        )

    def _command_human_tool(
        self, name: str, value: Mapping[str, Any], key_path: str
    ) -> CommandHumanTool | None:
        refused = {
            "input_schema": "Human tools take no free arguments; `input_schema` is not allowed",
            "protocol": "Human tools have no `protocol`; they are `launch` or `output` tools",
            "session": "Human tools do not accept `session`",
            "execution_paths": "Human tools do not take `execution_paths`",
        }
        start = len(self.problems.items)  # missing keys count too
        reader = TableReader(
            value,
            key_path,
            self.problems,
            ("description", "kind", "command", "args", "timeout_ms"),
            ("description", "kind", "command", "args"),
            refused,
        )
        description = self.description(reader, required=True)
        kind = reader.choice("kind", HUMAN_TOOL_KINDS)
        command = self.command(reader)
        args = self.operand_args(reader, ReferenceUse.HUMAN_ARGV, human=True)
        timeout_ms = reader.timeout_ms() or COMMAND_TOOL_DEFAULT_TIMEOUT_MS
        if len(self.problems.items) > start:
            return None
        assert (
            description is not None
            and kind is not None
            and command is not None
            and args is not None
        )
        return CommandHumanTool(
            name, description, cast(Literal["launch", "output"], kind), command, args, timeout_ms
        )

    # --- sessions ---------------------------------------------------------------------

    def session(self, name: str, value: Any, key_path: str) -> AgentSession | None:
        if not isinstance(value, dict):
            self.problems.add(key_path, "expected a table with `start` and `stop`")
            return None
        problem = identifier_problem(name, "session name")
        if problem:
            self.problems.add(key_path, problem)
            return None
        refused = {
            k: "a session takes only `start` and `stop`"
            for k in ("description", "protocol", "timeout_ms", "concurrency", "command", "args")
        }
        reader = TableReader(
            value, key_path, self.problems, ("start", "stop"), ("start", "stop"), refused
        )
        start = self._session_command(reader, "start")
        stop = self._session_command(reader, "stop")
        if start is None or stop is None:
            return None
        return AgentSession(name, start, stop)

    def _session_command(self, parent: TableReader, key: str) -> SessionCommand | None:
        table = parent.table_at(key)
        if table is None:
            return None
        refused = {
            k: _SESSION_COMMAND_ONLY
            for k in (
                "description",
                "protocol",
                "timeout_ms",
                "concurrency",
                "input_schema",
                "session",
            )
        }
        reader = TableReader(
            table,
            join_key(parent.key_path, key),
            self.problems,
            ("command", "args", "execution_paths"),
            ("command", "args"),
            refused,
        )
        start = len(self.problems.items)
        command = self.command(reader)
        args = self.operand_args(reader, ReferenceUse.TOOL_ARGV)
        execution_paths = self.execution_paths(reader)
        if len(self.problems.items) > start or command is None or args is None:
            return None
        return SessionCommand(command, args, execution_paths)


_FIXED_ARITY: Mapping[tuple[str, bool], tuple[int, int]] = {
    ("read", False): (1, 1),
    ("read", True): (1, 1),
    ("list", False): (1, 1),
    ("list", True): (1, 1),
    ("section", False): (1, 2),
    ("section", True): (2, 2),
    ("help", False): (1, 1_000_000),
    ("help", True): (1, 1_000_000),
    ("graph", False): (0, 0),
    ("graph", True): (0, 0),
    ("open", True): (1, 1),
}


def _arity_text(arity: tuple[int, int]) -> str:
    low, high = arity
    if low == high:
        return f"exactly {low}"
    if high >= 1_000_000:
        return f"at least {low}"
    return f"{low} to {high}"


def _is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def bound_session_problems(
    tools: tuple[AgentTool, ...],
    session_names: set[str],
    key_path_of: Mapping[str, str],
    problems: KeyProblems,
) -> None:
    """A command tool's ``session`` must name a session declared by the same Artifact."""
    for tool in tools:
        if (
            isinstance(tool, CommandAgentTool)
            and tool.session is not None
            and tool.session not in session_names
        ):
            declared = ", ".join(f"`{n}`" for n in sorted(session_names)) or "none"
            problems.add(
                join_key(key_path_of[tool.name], "session"),
                f"names session `{tool.session}`, which this Artifact does not declare "
                f"under [views.agent_sessions] (declared: {declared})",
            )
