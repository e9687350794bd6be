"""The global options of one invocation (``--repo``, ``--state-dir``, ``--json``,
``--nested-repos``), as the
composition root (``entrypoints/bootstrap.py``) and every front end read them; the command
line lifts them out of argv (``entrypoints/cli/global_options.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GlobalOptions:
    repo: str = "."
    state_dir: str | None = None
    json: bool = False
    nested_repos: bool = False  # walk into other repositories below the root
