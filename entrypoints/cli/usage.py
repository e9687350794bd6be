"""Usage lines in the usual convention: ``artifactize request submit [OPTIONS] REQUEST_ID``.

typer 0.28 (as 0.29) shows a required argument as ``{request_id}`` and an optional one as
``[selector]`` in usage lines, which reads like a placeholder left unformatted. The command
tree is adjusted once, when ``main`` builds it: each argument is named in upper case,
``[NAME]`` when optional, ``NAME...`` when it takes several values.
"""

from __future__ import annotations

from typing import Any


def conventional_usage(command: Any) -> Any:
    """``command`` (a click command or group, walked recursively), adjusted in place."""
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", None) == "argument" and param.metavar is None:
            _rename(param)
    for child in getattr(command, "commands", {}).values():
        conventional_usage(child)
    return command


def _rename(argument: Any) -> None:
    name = str(argument.name).upper()
    shown = name if argument.required else f"[{name}]"
    if argument.nargs != 1:
        shown += "..."
    argument.metavar = name
    argument._usage_display_name = lambda: shown  # instead of typer's ``{name}``
