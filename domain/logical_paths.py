"""Logical paths: what a tool, a fingerprint or an operand may name inside an Artifact.

A logical path is relative to the declaring Artifact (its children and mounts included),
uses ``/`` separators, and can never leave the Artifact: there is no absolute form, no
``.``/``..`` component, no empty component, no backslash, no colon and no control
character. The empty path means the Artifact's root.
"""

from __future__ import annotations

from artifactize.domain.text import has_ascii_control, utf16_length

LOGICAL_PATH_MAX_UTF16 = 4096
GLOB_PATTERN_MAX_CHARS = 4096
FILE_ARTIFACT_VIRTUAL_ROOT = "."

LOGICAL_PATH_RULE = "Artifact path must be a safe relative logical path."


class LogicalPathError(ValueError):
    """A path or pattern that breaks the logical-path rules; the message names the rule."""


def _component_problem(text: str) -> str | None:
    for part in text.split("/"):
        if part == "":
            return "it has an empty component (a leading, trailing or doubled '/')"
        if part in (".", ".."):
            return f"it has a {part!r} component"
    return None


def logical_path_problem(path: str) -> str | None:
    """Why ``path`` is not a safe relative logical path, or None when it is."""
    if utf16_length(path) > LOGICAL_PATH_MAX_UTF16:
        return f"it is longer than {LOGICAL_PATH_MAX_UTF16} UTF-16 code units"
    if has_ascii_control(path):
        return "it contains an ASCII control character"
    if "\\" in path:
        return "it contains a backslash"
    if ":" in path:
        return "it contains a colon"
    if path == "":
        return None
    return _component_problem(path)


def parse_logical_path(path: str, *, file_artifact_root: bool = False) -> tuple[str, ...]:
    """Validate ``path`` and split it into components; ``()`` is the Artifact root.

    ``file_artifact_root`` admits the lone ``.`` as the virtual root of a file Artifact,
    which ``list``, ``glob`` and ``grep`` accept; every other caller refuses it.
    """
    if file_artifact_root and path == FILE_ARTIFACT_VIRTUAL_ROOT:
        return ()
    problem = logical_path_problem(path)
    if problem is not None:
        raise LogicalPathError(f"{LOGICAL_PATH_RULE} {problem[0].upper()}{problem[1:]}.")
    return tuple(path.split("/")) if path else ()


def glob_pattern_problem(pattern: str) -> str | None:
    """Why a glob pattern is refused, or None. Patterns are counted in characters."""
    if pattern == "":
        return "it is empty"
    if len(pattern) > GLOB_PATTERN_MAX_CHARS:
        return f"it is longer than {GLOB_PATTERN_MAX_CHARS} characters"
    if "\x00" in pattern:
        return "it contains NUL"
    if "\\" in pattern:
        return "it contains a backslash"
    if ":" in pattern:
        return "it contains a colon"
    if pattern.startswith("/"):
        return "it is absolute (starts with '/')"
    return _component_problem(pattern)


def validate_glob_pattern(pattern: str) -> str:
    problem = glob_pattern_problem(pattern)
    if problem is not None:
        raise LogicalPathError(f"Glob pattern must be a nonempty relative pattern: {problem}.")
    return pattern
