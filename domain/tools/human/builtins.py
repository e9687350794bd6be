"""Human built-ins: ``read``, ``list``, ``section`` and ``help`` give text for a person;
``open`` and ``graph`` launch a program the person then owns.

The text built-ins are the Agent built-ins on a fixed target, so a person and an Agent see
the same bytes under the same limits and refusals; only ``list`` is rendered differently,
one entry per line instead of a JSON page. They run inside artifactize and need nothing
but the pinned filesystem (``help`` runs ``program sub… --help`` like the Agent's).

``open`` hands its target (a checked absolute path, or an http(s) URL) to the desktop's
opener. ``graph`` has no viewer of its own to hand over: it launches artifactize itself as
``artifactize --repo ROOT config graph``, whose text a review's Tool log shows until it
exits (``request tool`` and ``tools check`` disconnect its output, as for every launch).
"""

from __future__ import annotations

from collections.abc import Mapping

from artifactize.domain.tools.builtins.fixed import run_fixed_read, run_section
from artifactize.domain.tools.builtins.help import run_help
from artifactize.domain.tools.builtins.listing import LogicalEntry, list_location
from artifactize.domain.tools.commands.text_output import TEXT_BLOCK_MAX_BYTES, truncate_utf8
from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.results import ToolResult
from artifactize.ports.process import ProcessRunner

TEXT_BUILTINS = ("read", "list", "section", "help")
LAUNCH_BUILTINS = ("open", "graph")
LOGGED_LAUNCHES = ("graph",)  # a launch built-in whose program output the Tool log shows
URL_PREFIXES = ("http://", "https://")
EMPTY_FOLDER = "(empty folder)"


def _text(result: ToolResult) -> str:
    return str(result.content[0]["text"])


def read_text(context: BuiltinContext, path: str) -> str:
    return _text(run_fixed_read(context, path))


def section_text(context: BuiltinContext, path: str, heading: str) -> str:
    return _text(run_section(context, path, heading))


def _entry_line(entry: LogicalEntry) -> str:
    if entry.kind == "directory":
        return f"{entry.name}/"
    if entry.kind == "mount":
        return f"{entry.name}/ (mount of {entry.mount_target})"
    if entry.kind == "symlink":
        return f"{entry.name} (symbolic link, not followed)"
    if entry.kind == "other":
        return f"{entry.name} (special file)"
    return entry.name


def list_text(context: BuiltinContext, path: str) -> str:
    """Every entry of the folder, one a line, sorted; folders end with ``/``."""
    location = context.locate(path, allow_virtual_root=True)
    entries = list_location(context, location)
    lines = [_entry_line(entry) for entry in entries] or [EMPTY_FOLDER]
    return truncate_utf8("\n".join(lines) + "\n", TEXT_BLOCK_MAX_BYTES)


async def help_text(
    processes: ProcessRunner, args: tuple[str, ...], cwd: str, environment: Mapping[str, str]
) -> str:
    return _text(await run_help(processes, args, cwd, environment))


def is_url(target: str) -> bool:
    return target.startswith(URL_PREFIXES)


def open_argv(opener: str, target: str) -> tuple[str, ...]:
    """The opener with exactly one argument: no shell, no options."""
    return (opener, target)


def graph_argv(self_command: tuple[str, ...], repository: str) -> tuple[str, ...]:
    return (*self_command, "--repo", repository, "config", "graph")
