"""Strict, typed access to a parsed TOML table that records problems instead of raising.

Every getter takes the table's key path so a problem names exactly where it is
(``evals.review.profile.timeout_ms``). Unknown keys are refused; a camelCase spelling
of a known key gets its snake_case name as a hint; removed keys explain their successor.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from artifactize.domain.declarations.diagnostics import KeyProblems, join_key
from artifactize.domain.text import has_ascii_control

_INDEXED_KEY = re.compile(r"(?P<key>[A-Za-z0-9_-]+)\[(?P<index>\d+)\]")

TIMEOUT_MS_MIN = 1
TIMEOUT_MS_MAX = 2_147_483_647

REMOVED_KEYS: Mapping[str, str] = {
    "stale_key": "`stale_key` was removed; reuse follows fingerprints (see `fingerprint`)",
    "stale": "`stale` was removed; reuse follows fingerprints (see `fingerprint`)",
    "family": "families were removed in 0.9; declare each Artifact with its own index.artf",
    "critics": "`critics` was removed; declare Agent evals under `evals.<id>`",
    "env_requirements": "`env_requirements` was removed; check the environment in a runtime eval",
    "result_check": "`result_check` was removed in 0.6; use `pass_schema` and `fail_schema`",
    "observation": "tool `observation` was removed; a tool returns its result directly",
    "metadata": "tool `metadata` was removed",
    "script": "a tool `script` is not supported; declare `command` and `args`",
    "dependencies": "artifactsum `dependencies` was removed in 0.5; use `mounts` or references",
    "id": "an eval's ID is its table key (`[evals.<id>]`); an `id` field is not allowed",
}


def snake_case_of(key: str) -> str:
    """``timeoutMs`` -> ``timeout_ms``; a key without capitals comes back unchanged."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key)


class TableReader:
    """Reads one table against the keys it may hold."""

    def __init__(
        self,
        table: Mapping[str, Any],
        key_path: str,
        problems: KeyProblems,
        allowed: Collection[str],
        required: Collection[str] = (),
        refused: Mapping[str, str] | None = None,
    ) -> None:
        self.table = table
        self.key_path = key_path
        self.problems = problems
        self._check_keys(allowed, required, refused or {})

    def path(self, key: str | int) -> str:
        """The key path of ``key`` in this table; ``"args[2]"`` becomes ``<table>.args[2]``."""
        if isinstance(key, str) and (indexed := _INDEXED_KEY.fullmatch(key)):
            return join_key(join_key(self.key_path, indexed["key"]), int(indexed["index"]))
        return join_key(self.key_path, key)

    def _check_keys(
        self, allowed: Collection[str], required: Collection[str], refused: Mapping[str, str]
    ) -> None:
        for key in self.table:
            if key in allowed:
                continue
            self.problems.add(self.path(key), _unknown_key_message(key, allowed, refused))
        for key in required:
            if key not in self.table:
                self.problems.add(self.key_path, f"missing required key `{key}`")

    def has(self, key: str) -> bool:
        return key in self.table

    def raw(self, key: str) -> Any:
        return self.table.get(key)

    def fail(self, key: str | int, message: str) -> None:
        self.problems.add(self.path(key), message)

    def string(self, key: str, *, nonblank: bool = True) -> str | None:
        if key not in self.table:
            return None
        value = self.table[key]
        if not isinstance(value, str):
            self.fail(key, f"expected a string, got {type_name(value)}")
            return None
        if nonblank and not value.strip():
            self.fail(key, "must not be blank")
            return None
        return value

    def choice(self, key: str, choices: Collection[str]) -> str | None:
        value = self.string(key)
        if value is not None and value not in choices:
            listed = ", ".join(f"`{c}`" for c in choices)
            self.fail(key, f"expected one of {listed}, got {value!r}")
            return None
        return value

    def boolean(self, key: str) -> bool | None:
        if key not in self.table:
            return None
        value = self.table[key]
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, got {type_name(value)}")
            return None
        return value

    def integer(self, key: str, minimum: int, maximum: int) -> int | None:
        """An integer in range; an integral float such as ``1.0`` counts as that integer."""
        if key not in self.table:
            return None
        value = self.table[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"expected an integer, got {type_name(value)}")
            return None
        if not minimum <= value <= maximum:
            self.fail(key, f"expected an integer from {minimum} to {maximum}, got {value}")
            return None
        return value

    def timeout_ms(self, key: str = "timeout_ms") -> int | None:
        return self.integer(key, TIMEOUT_MS_MIN, TIMEOUT_MS_MAX)

    def string_list(self, key: str, *, allow_nul: bool = False) -> tuple[str, ...] | None:
        if key not in self.table:
            return None
        value = self.table[key]
        if not isinstance(value, list):
            self.fail(key, f"expected an array of strings, got {type_name(value)}")
            return None
        items: list[str] = []
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.fail(f"{key}[{index}]", f"expected a string, got {type_name(item)}")
                continue
            if not allow_nul and "\x00" in item:
                self.fail(f"{key}[{index}]", "must not contain NUL")
                continue
            items.append(item)
        return tuple(items) if len(items) == len(value) else None

    def table_at(self, key: str) -> Mapping[str, Any] | None:
        if key not in self.table:
            return None
        value = self.table[key]
        if not isinstance(value, dict):
            self.fail(key, f"expected a table, got {type_name(value)}")
            return None
        return value


def command_problem(command: str) -> str | None:
    """A command is a program name or path, never a template."""
    if not command.strip():
        return "must not be blank"
    if has_ascii_control(command):
        return "must not contain control characters"
    if "{" in command or "}" in command:
        return "must not contain braces; commands are never interpolated"
    return None


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def _unknown_key_message(key: str, allowed: Collection[str], refused: Mapping[str, str]) -> str:
    if key in refused:
        return refused[key]
    snake = snake_case_of(key)
    if snake != key and snake in allowed:
        return f"unknown key `{key}`; declarations use snake_case: write `{snake}`"
    if key in REMOVED_KEYS:
        return REMOVED_KEYS[key]
    if snake != key and snake in REMOVED_KEYS:
        return REMOVED_KEYS[snake]
    listed = ", ".join(f"`{k}`" for k in sorted(allowed))
    return f"unknown key `{key}`; expected one of {listed}"
