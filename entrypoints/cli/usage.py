"""Usage lines in the usual convention: ``artifactize request submit [OPTIONS] REQUEST_ID``.

typer shows a required argument as ``{request_id}`` and an optional one as ``[selector]``
in usage lines, which reads like a placeholder left unformatted. Every command of the CLI is
a ``ConventionalCommand`` (the apps are ``ConventionalTyper``s, whose ``command`` makes
them): each argument is named in upper case (its ``metavar``, which the help's argument
list and "Missing argument" errors show too), and the usage line shows it as ``NAME``,
``[NAME]`` when optional, ``NAME...`` when it takes several values, through click's
documented extension point for the usage line (``Command.collect_usage_pieces``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import typer
from typer.core import TyperCommand

Function = TypeVar("Function", bound=Callable[..., Any])


class ConventionalCommand(TyperCommand):
    """A typer command whose arguments read ``NAME``, ``[NAME]`` or ``NAME...``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.param_type_name == "argument" and param.metavar is None:
                param.metavar = str(param.name).upper()

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_shown(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


def _shown(argument: Any) -> str:
    name = str(argument.metavar or argument.name).upper()
    shown = name if argument.required else f"[{name}]"
    return shown + ("..." if argument.nargs != 1 else "")


class ConventionalTyper(typer.Typer):
    """``typer.Typer`` whose commands are ``ConventionalCommand``s unless told otherwise."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Function], Function]:
        if kwargs.get("cls") is None:
            kwargs["cls"] = ConventionalCommand
        return super().command(*args, **kwargs)
