"""``evals.<id>``: title, profile, payload, schemas and profile variants."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from artifactize.domain.declarations.base_url import base_url_problem
from artifactize.domain.declarations.commands import read_command, read_operand_args
from artifactize.domain.declarations.diagnostics import KeyProblems, join_key
from artifactize.domain.declarations.identifiers import identifier_problem
from artifactize.domain.declarations.model import (
    AGENT_DEFAULT_TIMEOUT_MS,
    RUNTIME_DEFAULT_TIMEOUT_MS,
    AgentProfile,
    DependencyProfile,
    Eval,
    HumanProfile,
    Profile,
    Reference,
    ReferenceUse,
    RuntimeProfile,
)
from artifactize.domain.declarations.reader import TableReader
from artifactize.domain.declarations.templates import instruction_references
from artifactize.domain.json_schema import SchemaError, admit_schema
from artifactize.domain.text import compact_json
from artifactize.ports.statuses import PROFILE_KINDS, ProfileKind

PROFILE_VARIANTS_MAX = 64
POSITIVE_INT_MAX = 2**63 - 1
BACKENDS = ("openai", "anthropic", "openai-chat", "claude-code", "codex")
REMOVED_BACKENDS: Mapping[str, str] = {
    "chatgpt": "the `chatgpt` backend was removed; use `openai`",
    "claude": "the `claude` backend was removed; use `anthropic` or `claude-code`",
    "gemini-cli": "the `gemini-cli` backend is not supported: Gemini CLI cannot switch off "
    "all of its built-in tools (docs/agents.md)",
}
REASONING: Mapping[str, tuple[str, ...]] = {
    "openai": ("none", "minimal", "low", "medium", "high", "xhigh", "max"),
    "anthropic": ("low", "medium", "high", "xhigh", "max"),
    "openai-chat": ("none", "minimal", "low", "medium", "high", "xhigh"),
    "claude-code": ("low", "medium", "high", "xhigh", "max"),
    "codex": ("minimal", "low", "medium", "high", "xhigh"),
}
RESERVED_RESULT_FIELDS = (
    "verdict",
    "reference",
    "reusedFrom",
    "executionProvenance",
    "attemptId",
    "provider",
    "model",
    "stdout",
    "stderr",
    "durationMs",
    "exitCode",
)
OWNER_SCHEMA_TYPE = "object"
REFUSED_ROOT_COMBINATORS = ("allOf", "anyOf", "oneOf", "not")
DEPENDS_ON_MIN = 1
DEPENDS_ON_MAX = 64
DEPENDENCY_ONLY = "a dependency eval declares only `title` and `profile`"


def _is_dependency(value: Mapping[str, Any]) -> bool:
    profile = value.get("profile")
    return isinstance(profile, dict) and profile.get("kind") == "dependency"


_EVAL_KEYS = ("title", "profile", "payload", "pass_schema", "fail_schema", "profile_variants")


KeySegments = tuple[str | int, ...]


def owner_schema_problems(schema: Mapping[str, Any]) -> list[tuple[KeySegments, str]]:
    """Why an owner schema cannot describe the fields of a verdict, as (key path, message).

    artifactize adds ``verdict`` and closes the object, and a root combinator, an open
    ``additionalProperties`` or a reserved field name would fight that envelope. Nested
    schemas are the owner's business.
    """
    problems: list[tuple[KeySegments, str]] = []
    if "type" in schema and schema["type"] != OWNER_SCHEMA_TYPE:
        problems.append(
            (
                ("type",),
                f'must be "{OWNER_SCHEMA_TYPE}" when given (a verdict result is a JSON object), '
                f"got {_shown(schema['type'])}",
            )
        )
    for keyword in REFUSED_ROOT_COMBINATORS:
        if keyword in schema:
            problems.append(
                (
                    (keyword,),
                    f"`{keyword}` is not allowed at the root of a result schema; the result "
                    "must stay one object with declared properties (use it inside a property)",
                )
            )
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        problems.append(
            (
                ("additionalProperties",),
                "must be false when given; every result field must be declared in `properties`",
            )
        )
    properties = schema.get("properties")
    for name in properties if isinstance(properties, dict) else ():
        if name in RESERVED_RESULT_FIELDS:
            problems.append((("properties", name), _reserved(name)))
    required = schema.get("required")
    for index, name in enumerate(required if isinstance(required, list) else ()):
        if isinstance(name, str) and name in RESERVED_RESULT_FIELDS:
            problems.append((("required", index), _reserved(name)))
    return problems


def _reserved(name: str) -> str:
    return f"`{name}` is a result field reserved by artifactize; choose another name"


def _shown(value: Any) -> str:
    try:
        return compact_json(value)
    except (TypeError, ValueError):
        return repr(value)


class EvalParser:
    def __init__(self, problems: KeyProblems, references: list[Reference]) -> None:
        self.problems = problems
        self.references = references

    def eval(self, eval_id: str, value: Any, key_path: str) -> Eval | None:
        if not isinstance(value, dict):
            self.problems.add(key_path, "expected a table describing the eval")
            return None
        problem = identifier_problem(eval_id, "eval ID")
        if problem:
            self.problems.add(key_path, problem)
            return None
        if _is_dependency(value):
            return self._dependency_eval(eval_id, value, key_path)
        start = len(self.problems.items)  # missing keys count too
        reader = TableReader(
            value, key_path, self.problems, _EVAL_KEYS, ("title", "profile", "payload")
        )
        title = reader.string("title")
        profile = self.profile(reader, "profile", eval_id)
        payload = self.payload(reader, eval_id)
        pass_schema = self.schema(reader, "pass_schema")
        fail_schema = self.schema(reader, "fail_schema")
        variants = self.variants(reader, profile, eval_id)
        if len(self.problems.items) > start:
            return None
        assert title is not None and profile is not None and payload is not None
        return Eval(eval_id, title, profile, payload, pass_schema, fail_schema, variants)

    def _dependency_eval(
        self, eval_id: str, value: Mapping[str, Any], key_path: str
    ) -> Eval | None:
        """A dependency eval: ``title`` and ``profile`` only (no payload, schemas or
        variants, not even empty ones)."""
        start = len(self.problems.items)
        refused = {k: DEPENDENCY_ONLY for k in ("payload", "pass_schema", "fail_schema")}
        refused["profile_variants"] = DEPENDENCY_ONLY
        reader = TableReader(
            value, key_path, self.problems, ("title", "profile"), ("title",), refused
        )
        title = reader.string("title")
        table = reader.table_at("profile")
        profile = None
        if table is not None:
            profile_reader = TableReader(
                table,
                reader.path("profile"),
                self.problems,
                ("kind", "depends_on"),
                ("depends_on",),
            )
            names = profile_reader.string_list("depends_on")
            if names is not None:
                profile = self._depends_on(profile_reader, names)
        if len(self.problems.items) > start or title is None or profile is None:
            return None
        return Eval(eval_id, title, profile, {}, None, None)

    def _depends_on(self, reader: TableReader, names: tuple[str, ...]) -> DependencyProfile | None:
        if not DEPENDS_ON_MIN <= len(names) <= DEPENDS_ON_MAX:
            reader.fail(
                "depends_on",
                f"must list {DEPENDS_ON_MIN}-{DEPENDS_ON_MAX} Artifact names or mount aliases, "
                f"got {len(names)}",
            )
            return None
        for index, name in enumerate(names):
            problem = identifier_problem(name, "Artifact name or mount alias")
            if problem:
                reader.fail(f"depends_on[{index}]", problem)
                return None
            if name in names[:index]:
                reader.fail(f"depends_on[{index}]", f"`{name}` is listed twice")
                return None
        return DependencyProfile(names)

    def profile(self, parent: TableReader, key: str, eval_id: str) -> Profile | None:
        table = parent.table_at(key)
        if table is None:
            return None
        key_path = parent.path(key)
        kind = table.get("kind")
        if kind == "dependency":  # only a variant reaches here: the eval itself is parsed above
            self.problems.add(
                join_key(key_path, "kind"),
                "a profile variant cannot be a dependency profile; dependency evals take none",
            )
            return None
        if kind not in PROFILE_KINDS:
            if "kind" not in table:
                self.problems.add(key_path, "missing required key `kind` (runtime, agent or human)")
            else:
                self.problems.add(
                    join_key(key_path, "kind"),
                    f"expected one of `runtime`, `agent`, `human`, got {table['kind']!r}",
                )
            return None
        if kind == ProfileKind.HUMAN:
            TableReader(table, key_path, self.problems, ("kind",))
            return HumanProfile()
        if kind == ProfileKind.RUNTIME:
            return self._runtime(table, key_path, eval_id)
        return self._agent(table, key_path)

    def _runtime(
        self, table: Mapping[str, Any], key_path: str, eval_id: str
    ) -> RuntimeProfile | None:
        reader = TableReader(
            table,
            key_path,
            self.problems,
            ("kind", "command", "args", "timeout_ms"),
            ("command", "args"),
        )
        start = len(self.problems.items)
        command = read_command(reader)
        args = read_operand_args(
            reader, self.references, ReferenceUse.RUNTIME_ARGV, eval_id=eval_id
        )
        timeout_ms = reader.timeout_ms() or RUNTIME_DEFAULT_TIMEOUT_MS
        if len(self.problems.items) > start or command is None or args is None:
            return None
        return RuntimeProfile(command, args, timeout_ms)

    def _agent(self, table: Mapping[str, Any], key_path: str) -> AgentProfile | None:
        reader = TableReader(
            table,
            key_path,
            self.problems,
            (
                "kind",
                "backend",
                "model",
                "reasoning",
                "base_url",
                "timeout_ms",
                "max_tool_calls",
                "max_tokens",
            ),
            ("backend", "model"),
        )
        start = len(self.problems.items)
        backend = reader.string("backend")
        if backend is not None and backend in REMOVED_BACKENDS:
            reader.fail("backend", REMOVED_BACKENDS[backend])
        elif backend is not None:
            backend = reader.choice("backend", BACKENDS)
        model = reader.string("model")
        base_url = reader.string("base_url")
        if base_url is not None:
            problem = base_url_problem(base_url)
            if problem is not None:
                reader.fail("base_url", problem)
        reasoning = None
        if backend is not None and backend in REASONING:
            reasoning = reader.choice("reasoning", REASONING[backend])
        timeout_ms = reader.timeout_ms() or AGENT_DEFAULT_TIMEOUT_MS
        max_tool_calls = reader.integer("max_tool_calls", 1, POSITIVE_INT_MAX)
        max_tokens = reader.integer("max_tokens", 1, POSITIVE_INT_MAX)
        if len(self.problems.items) > start or backend is None or model is None:
            return None
        return AgentProfile(
            backend, model, reasoning, timeout_ms, max_tool_calls, max_tokens, base_url=base_url
        )

    def payload(self, reader: TableReader, eval_id: str) -> Mapping[str, Any] | None:
        payload = reader.table_at("payload")
        if payload is None:
            return None
        key_path = reader.path("payload")
        if "instruction" not in payload:
            self.problems.add(key_path, "missing required key `instruction`")
            return None
        instruction = payload["instruction"]
        if not isinstance(instruction, str) or not instruction.strip():
            self.problems.add(join_key(key_path, "instruction"), "must be a nonblank string")
            return None
        for name in instruction_references(instruction):
            self.references.append(
                Reference(
                    name, ReferenceUse.INSTRUCTION, join_key(key_path, "instruction"), eval_id
                )
            )
        return payload

    def schema(self, reader: TableReader, key: str) -> Mapping[str, Any] | None:
        """An owner schema (``pass_schema``/``fail_schema``): the owner fields of a verdict.

        The result envelope belongs to artifactize, so the root must stay a plain object
        schema (reviews-and-store §1.3): every owner rule is reported, then compilation.
        """
        if not reader.has(key):
            return None
        raw = reader.raw(key)
        start = len(self.problems.items)
        if isinstance(raw, dict):
            for segments, message in owner_schema_problems(raw):
                key_path = reader.path(key)
                for segment in segments:
                    key_path = join_key(key_path, segment)
                self.problems.add(key_path, message)
        try:
            admit_schema(raw, require_object_root=False)
        except SchemaError as exc:
            reader.fail(key, str(exc))
        if len(self.problems.items) > start:
            return None
        schema: Mapping[str, Any] = raw
        return schema

    def variants(
        self, reader: TableReader, profile: Profile | None, eval_id: str
    ) -> Mapping[str, Profile]:
        table = reader.table_at("profile_variants")
        if table is None:
            return {}
        if len(table) > PROFILE_VARIANTS_MAX:
            reader.fail(
                "profile_variants", f"at most {PROFILE_VARIANTS_MAX} variants, got {len(table)}"
            )
            return {}
        variants_reader = TableReader(
            table, reader.path("profile_variants"), self.problems, tuple(table)
        )
        variants: dict[str, Profile] = {}
        for name in table:
            problem = identifier_problem(name, "profile variant name")
            if problem:
                variants_reader.fail(name, problem)
                continue
            variant = self.profile(variants_reader, name, eval_id)
            if variant is None:
                continue
            if profile is not None and variant.kind != profile.kind:
                variants_reader.fail(
                    name,
                    f"a variant must keep the eval's kind `{profile.kind}`, got `{variant.kind}`",
                )
                continue
            variants[name] = variant
        return variants
