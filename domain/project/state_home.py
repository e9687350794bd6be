"""Where artifactize keeps its state: never inside the reviewed repository."""

from __future__ import annotations

from collections.abc import Mapping


class StateLocationError(ValueError):
    """The state directory would live inside the reviewed repository."""


def state_home(
    env: Mapping[str, str], home: str, override: str | None = None, *, windows: bool = False
) -> str:
    """``--state-dir``, else ``$ARTIFACTIZE_STATE_HOME``, else ``$XDG_STATE_HOME/artifactize``,
    else (on Windows) ``%LOCALAPPDATA%\\artifactize``, else ``~/.local/state/artifactize``.
    Empty variables count as unset. The composition root says whether this is Windows."""
    if override:
        return override
    if env.get("ARTIFACTIZE_STATE_HOME"):
        return env["ARTIFACTIZE_STATE_HOME"]
    if env.get("XDG_STATE_HOME"):
        return env["XDG_STATE_HOME"].rstrip("/") + "/artifactize"
    if windows and env.get("LOCALAPPDATA"):
        return env["LOCALAPPDATA"].rstrip("\\/") + "\\artifactize"
    return home.rstrip("/") + "/.local/state/artifactize"


def check_outside_repo(canonical_state: str, canonical_repo: str) -> None:
    """Both paths canonical (symlinks resolved by the caller's adapter)."""
    repo = canonical_repo.rstrip("/") + "/"
    if canonical_state.rstrip("/") + "/" == repo or canonical_state.startswith(repo):
        raise StateLocationError(
            f"the state directory {canonical_state} is inside the reviewed repository "
            f"{canonical_repo}; choose another --state-dir"
        )
