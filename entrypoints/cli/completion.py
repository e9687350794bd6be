"""``artifactize completion SHELL``: print the shell completion script for bash, zsh or fish.

typer's completion machinery (its public ``typer.completion`` module) does the work: the
script calls ``artifactize`` back with ``_ARTIFACTIZE_COMPLETE=complete_<shell>`` set, and
typer answers with the commands and options that fit the words typed so far. Printing the script (rather than typer's
``--install-completion``, which edits shell start-up files) leaves where it goes to the user:

    eval "$(artifactize completion bash)"                        # in ~/.bashrc
    artifactize completion zsh > "${fpath[1]}/_artifactize"      # zsh, once
    artifactize completion fish > ~/.config/fish/completions/artifactize.fish
"""

from __future__ import annotations

from typing import Annotated

import typer

from artifactize.entrypoints.cli.command_table import COMPLETE_VARIABLE, PROG_NAME
from artifactize.entrypoints.cli.options import argument
from artifactize.entrypoints.errors import CommandError

SHELLS = ("bash", "zsh", "fish")
UNKNOWN_SHELL = "Unknown shell {shell!r}: completion is available for bash, zsh and fish."


def completion_command(
    ctx: typer.Context,
    shell: Annotated[str, argument("bash, zsh or fish.")],
) -> None:
    """Print the completion script of SHELL (bash, zsh or fish); see docs/cli.md."""
    from typer.completion import shell_complete

    if shell not in SHELLS:
        raise CommandError(UNKNOWN_SHELL.format(shell=shell))
    _register_typer_shells()
    root = ctx.find_root().command  # the command line this completion is for
    # typer's own answer to a ``source_<shell>`` instruction: the script of that shell.
    shell_complete(root, {}, PROG_NAME, COMPLETE_VARIABLE, f"source_{shell}")


def enable_if_requested() -> None:
    """When a completion script calls back (its variable is set), register typer's shell
    completion classes, which ``add_completion=False`` leaves unregistered; else nothing
    (so an ordinary start imports nothing more)."""
    import os

    if COMPLETE_VARIABLE in os.environ:
        _register_typer_shells()


def _register_typer_shells() -> None:
    """typer's bash, zsh and fish completion classes, registered as ``add_completion=True``
    registers them: through ``get_completion_inspect_parameters``, the public function typer
    itself calls for that (its two ``--…-completion`` options are not added to our root)."""
    from typer.completion import get_completion_inspect_parameters

    get_completion_inspect_parameters()
