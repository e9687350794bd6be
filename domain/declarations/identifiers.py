"""Identifiers: Artifact names, eval IDs, mount aliases, tool and variant names."""

from __future__ import annotations

import re

IDENTIFIER_PATTERN = "[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
IDENTIFIER_MAX_LENGTH = 64
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


def is_identifier(value: str) -> bool:
    return _IDENTIFIER.fullmatch(value) is not None


def identifier_problem(value: str, what: str) -> str | None:
    """Why ``value`` is not a valid identifier, or None when it is."""
    if is_identifier(value):
        return None
    return (
        f"{what} {value!r} must be 1-64 letters, digits, '_' or '-', starting with a letter "
        f"or digit ({IDENTIFIER_PATTERN})"
    )
