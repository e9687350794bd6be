"""Configuration problems: every one names the file, the line when known, and the key path."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with the declarations, located as precisely as the source allows."""

    file: str
    line: int | None
    key_path: str
    message: str

    def render(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        if not where:
            return self.message
        if self.key_path:
            return f"{where}: {self.key_path}: {self.message}"
        return f"{where}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "keyPath": self.key_path,
            "message": self.message,
        }


class ConfigError(Exception):
    """The workspace declarations are invalid. Carries every problem found, in file order."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(sorted(problems, key=_sort_key))
        super().__init__("\n".join(p.render() for p in self.problems))


class NotReady(ConfigError):
    """Valid declarations that name what this checkout or machine lacks: a program that is
    not installed, an operand path or a Human tool file that is not there. ``config check``
    exits 1 (not ready) for these, 2 for declarations that are themselves wrong."""


def _sort_key(problem: Problem) -> tuple[str, int, str]:
    return (problem.file, problem.line if problem.line is not None else 0, problem.key_path)


@dataclass
class KeyProblems:
    """Problems of one declaration, keyed by path; the file and lines are added on the way out."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, key_path: str, message: str) -> None:
        self.items.append((key_path, message))

    def __bool__(self) -> bool:
        return bool(self.items)


def join_key(parent: str, key: str | int) -> str:
    """Extend a key path: ``evals`` + ``review`` -> ``evals.review``; indices as ``args[2]``."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    shown = key if _is_bare_key(key) else f'"{key}"'
    return f"{parent}.{shown}" if parent else shown


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _is_bare_key(key: str) -> bool:
    """A TOML bare key: nonempty ASCII letters, digits, ``_`` and ``-``."""
    return _BARE_KEY.fullmatch(key) is not None
