"""Global options (``--repo``, ``--state-dir``, ``--json``, ``--nested-repos``) may stand before or after the
subcommand, each at most once. They are lifted out of argv before typer parses the rest."""

from __future__ import annotations

from collections.abc import Sequence

from artifactize.entrypoints.options import GlobalOptions

__all__ = ["GlobalOptions", "UsageError", "split_global_options"]

VALUE_OPTIONS = ("--repo", "--state-dir")
FLAG_OPTIONS = ("--json", "--nested-repos")


class UsageError(Exception):
    """A command line that cannot be run (exit 2)."""


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
            values[name], index = _value(argv, index, name, inline if eq else None)
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


def _value(argv: Sequence[str], index: int, name: str, inline: str | None) -> tuple[str, int]:
    """The value of the option at ``index`` (``--name=value`` or ``--name value``) and the
    index of its last token; a missing or empty value is refused."""
    if inline is None:
        if index + 1 >= len(argv):
            raise UsageError(f"{name} needs a value")
        index += 1
        inline = argv[index]
    if not inline:
        raise UsageError(f"{name} needs a nonempty value")
    return inline, index
