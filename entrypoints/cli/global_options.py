"""Global options (``--repo``, ``--state-dir``, ``--json``, ``--nested-repos``) may stand before or after the
subcommand, each at most once. They are lifted out of argv before typer parses the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

VALUE_OPTIONS = ("--repo", "--state-dir")
FLAG_OPTIONS = ("--json", "--nested-repos")


class UsageError(Exception):
    """A command line that cannot be run (exit 2)."""


@dataclass(frozen=True)
class GlobalOptions:
    repo: str = "."
    state_dir: str | None = None
    json: bool = False
    nested_repos: bool = False  # walk into other repositories below the root


def split_global_options(argv: Sequence[str]) -> tuple[GlobalOptions, list[str]]:
    """Return the global options and argv without them; ``--`` ends option scanning."""
    values: dict[str, str] = {}
    flags: set[str] = set()
    rest: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            rest.extend(argv[index:])
            break
        name, eq, inline = token.partition("=")
        if name in VALUE_OPTIONS:
            if name in values:
                raise UsageError(f"{name} may be given only once")
            if eq:
                value = inline
            elif index + 1 < len(argv):
                index += 1
                value = argv[index]
            else:
                raise UsageError(f"{name} needs a value")
            if not value:
                raise UsageError(f"{name} needs a nonempty value")
            values[name] = value
        elif token in FLAG_OPTIONS:
            if token in flags:
                raise UsageError(f"{token} may be given only once")
            flags.add(token)
        else:
            rest.append(token)
        index += 1
    options = GlobalOptions(
        repo=values.get("--repo", "."),
        state_dir=values.get("--state-dir"),
        json="--json" in flags,
        nested_repos="--nested-repos" in flags,
    )
    return options, rest
