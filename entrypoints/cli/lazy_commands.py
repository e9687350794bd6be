"""Subcommands registered by name and loaded on first use, so ``artifactize --version``,
``--help`` and one command never import the modules (and libraries) of all the others.

Each entry names the module and attribute that define the command: a ``typer.Typer`` (a
command group such as ``run``) or a command function (such as ``verify``). The root's
``--help`` lists every command with its short help; for commands not loaded yet it shows
the help written here, which a test keeps equal to the loaded command's own.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

from artifactize.entrypoints.cli.command_table import LazyCommand
from artifactize.entrypoints.cli.usage import ConventionalTyper


def _load(name: str, entry: LazyCommand) -> Any:
    """The click command for ``entry``, built the way ``app.add_typer``/``app.command``
    would build it (a ``ConventionalCommand``: usage lines in the usual convention)."""
    target = getattr(importlib.import_module(entry.module), entry.attribute)
    if isinstance(target, typer.Typer):
        wrapper = ConventionalTyper(rich_markup_mode=None)
        wrapper.add_typer(target, name=name)
    else:
        wrapper = ConventionalTyper(rich_markup_mode=None)
        wrapper.command(name)(target)
        # One command on a Typer without a callback is that command itself; a callback
        # forces a group so the command keeps its name and help.
        wrapper.callback()(_no_options)
    group = typer.main.get_command(wrapper)
    assert isinstance(group, TyperGroup)
    return group.commands[name]


def _no_options() -> None:
    """(placeholder group; never shown)"""


class _Commands(MutableMapping[str, Any]):
    """The group's command table: eager commands as given, lazy ones loaded on lookup."""

    def __init__(self, eager: MutableMapping[str, Any], lazy: dict[str, LazyCommand]) -> None:
        self.loaded = dict(eager)
        self.lazy = lazy

    def is_loaded(self, name: str) -> bool:
        return name in self.loaded

    def __getitem__(self, name: str) -> Any:
        if name not in self.loaded:
            entry = self.lazy[name]  # KeyError for an unknown name, as a dict would
            self.loaded[name] = _load(name, entry)
        return self.loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self.loaded.pop(name, None)
        self.lazy.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self.lazy
        yield from (name for name in self.loaded if name not in self.lazy)

    def __len__(self) -> int:
        return len(set(self.lazy) | set(self.loaded))


class LazyGroup(TyperGroup):
    """The root group. ``LAZY`` is set by the application module (the registry of lazy
    commands, in the order ``--help`` lists them)."""

    LAZY: ClassVar[dict[str, LazyCommand]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands(self.commands, dict(self.LAZY))

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # names only: ``items()`` would load every command

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """As click does, but an unloaded command is shown with its registered help
        instead of being imported."""
        commands = self.commands
        assert isinstance(commands, _Commands)
        rows: list[tuple[str, Any]] = []
        for name in self.list_commands(ctx):
            if commands.is_loaded(name):
                command = commands[name]
            else:
                command = TyperCommand(name, help=commands.lazy[name].help)
            if not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])
