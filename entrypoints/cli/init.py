"""``artifactize init``: write a starter ``index.artf`` and ``.artfignore`` for the repository.

It detects a Python, JavaScript/TypeScript, Rust, Go or Java project at the root (``--repo``,
default the current directory) and writes both files, never overwriting one and never
leaving one half-written (``entrypoints/init_project.py``; the rules are
``domain/project/starter.py``). ``--json`` prints what it wrote.
"""

from __future__ import annotations

from artifactize.entrypoints.cli.context import CliContext


def init_command() -> None:
    """Write a starter index.artf and .artfignore for a Python, JS/TS, Rust or Go project."""
    from artifactize.entrypoints.cli.output import emit
    from artifactize.entrypoints.cli.render.init import init_text

    result = CliContext.services().init_project()
    emit(result.to_json(), init_text(result))
