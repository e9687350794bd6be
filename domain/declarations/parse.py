"""Turn one parsed ``.artf`` TOML document into a validated ``Declaration``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from artifactize.domain.declarations.diagnostics import KeyProblems, join_key
from artifactize.domain.declarations.evals import EvalParser
from artifactize.domain.declarations.fingerprint import FingerprintParser, default_fingerprint
from artifactize.domain.declarations.identifiers import identifier_problem
from artifactize.domain.declarations.model import (
    AgentSession,
    AgentTool,
    ArtifactKind,
    Declaration,
    Eval,
    Fingerprint,
    HumanTool,
    Reference,
)
from artifactize.domain.declarations.reader import TableReader
from artifactize.domain.declarations.tools import ViewParser, bound_session_problems
from artifactize.domain.text import has_ascii_control

TAGS_MAX = 64
DEPENDENCY_GATES = ("green", "ignore")
_TOP_LEVEL_KEYS = (
    "name",
    "tags",
    "mounts",
    "basis",
    "fingerprint",
    "views",
    "evals",
    "review_policy",
)
_VIEW_KEYS = ("agent_tools", "human_tools", "agent_sessions")

T = TypeVar("T")


def parse_declaration(
    document: Mapping[str, Any],
    kind: ArtifactKind,
    *,
    target: str | None,
    is_root: bool,
    problems: KeyProblems,
) -> Declaration | None:
    """Validate a declaration. Problems go to ``problems``; None when any was found."""
    start = len(problems.items)
    references: list[Reference] = []
    reader = TableReader(document, "", problems, _TOP_LEVEL_KEYS, ("name",))
    name = _name(reader)
    tags = _tags(reader)
    mounts = _mounts(reader, kind, target)
    basis = bool(reader.boolean("basis"))
    fingerprint = _fingerprint(reader, kind, target, problems, references)
    gates = _review_policy(reader, is_root, kind)
    views = ViewParser(problems, references)
    agent_tools: tuple[AgentTool, ...] = _named(reader, "views.agent_tools", views.agent_tool)
    human_tools: tuple[HumanTool, ...] = _named(reader, "views.human_tools", views.human_tool)
    sessions: tuple[AgentSession, ...] = _named(reader, "views.agent_sessions", views.session)
    _check_views_table(reader)
    bound_session_problems(
        agent_tools,
        {s.name for s in sessions},
        {t.name: f"views.agent_tools.{t.name}" for t in agent_tools},
        problems,
    )
    evals: tuple[Eval, ...] = _named(reader, "evals", EvalParser(problems, references).eval)
    if basis and reader.table_at("evals"):
        reader.fail("basis", "a basis Artifact (`basis = true`) cannot own evals")
    if len(problems.items) > start or name is None or fingerprint is None:
        return None
    return Declaration(
        name=name,
        kind=kind,
        tags=tags,
        mounts=mounts,
        basis=basis,
        fingerprint=fingerprint,
        evals=tuple(sorted(evals, key=lambda e: e.id)),
        agent_tools=agent_tools,
        human_tools=human_tools,
        agent_sessions=sessions,
        dependency_gates=gates,
        references=tuple(references),
    )


def _name(reader: TableReader) -> str | None:
    name = reader.string("name", nonblank=False)
    if name is None:
        return None
    problem = identifier_problem(name, "Artifact name")
    if problem:
        reader.fail("name", problem)
        return None
    return name


def _tags(reader: TableReader) -> tuple[str, ...]:
    tags = reader.string_list("tags")
    if tags is None:
        return ()
    if len(tags) > TAGS_MAX:
        reader.fail("tags", f"at most {TAGS_MAX} tags, got {len(tags)}")
        return ()
    for index, tag in enumerate(tags):
        if not tag.strip():
            reader.fail(f"tags[{index}]", "must not be blank")
        elif has_ascii_control(tag):
            reader.fail(f"tags[{index}]", "must not contain control characters")
        elif tag in tags[:index]:
            reader.fail(f"tags[{index}]", f"duplicate tag {tag!r}")
    return tags


def _mounts(reader: TableReader, kind: ArtifactKind, target: str | None) -> Mapping[str, str]:
    table = reader.table_at("mounts")
    if table is None:
        return {}
    mounts: dict[str, str] = {}
    for alias, value in table.items():
        key_path = join_key("mounts", alias)
        problem = identifier_problem(alias, "mount alias")
        if problem is None and not isinstance(value, str):
            problem = "expected the name of the mounted Artifact (a string)"
        if problem is None:
            problem = identifier_problem(value, "mounted Artifact name")
        if problem is None and kind is ArtifactKind.FILE and alias == target:
            problem = f"mount alias {alias!r} shadows this file Artifact's target"
        if problem:
            reader.problems.add(key_path, problem)
        else:
            mounts[alias] = value
    return mounts


def _fingerprint(
    reader: TableReader,
    kind: ArtifactKind,
    target: str | None,
    problems: KeyProblems,
    references: list[Reference],
) -> Fingerprint | None:
    if not reader.has("fingerprint"):
        return default_fingerprint(kind, target)
    return FingerprintParser(problems, references).parse(reader.raw("fingerprint"), kind, target)


def _review_policy(reader: TableReader, is_root: bool, kind: ArtifactKind) -> str | None:
    table = reader.table_at("review_policy")
    if table is None:
        return None
    if not is_root or kind is not ArtifactKind.FOLDER:
        reader.fail("review_policy", "`review_policy` is allowed only in the root index.artf")
        return None
    policy = TableReader(table, "review_policy", reader.problems, ("dependency_gates",))
    return policy.choice("dependency_gates", DEPENDENCY_GATES)


def _check_views_table(reader: TableReader) -> None:
    views = reader.table_at("views")
    if views is not None:
        TableReader(views, "views", reader.problems, _VIEW_KEYS)


def _named(
    reader: TableReader, key_path: str, parse_one: Callable[[str, Any, str], T | None]
) -> tuple[T, ...]:
    """Parse every entry of a nested table such as ``views.agent_tools``."""
    table: Any = reader.table
    for part in key_path.split("."):
        if not isinstance(table, dict):
            return ()
        table = table.get(part)
    if table is None:
        return ()
    if not isinstance(table, dict):
        reader.problems.add(key_path, "expected a table")
        return ()
    parsed = (parse_one(name, value, join_key(key_path, name)) for name, value in table.items())
    return tuple(item for item in parsed if item is not None)


__all__ = ["AgentSession", "AgentTool", "Eval", "HumanTool", "parse_declaration"]
