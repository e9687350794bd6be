"""Reviewer IDs: who holds a Human claim.

A reviewer ID is a cooperative label, not authentication: anyone who can write the state
can claim under any name. It is still checked, because it is shown in lists, saved with the
verdict and published to a team store: 1-REVIEWER_MAX_BYTES UTF-8 bytes, not blank, and
no control characters (which would let a name rewrite a terminal line or a table).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

REVIEWER_MAX_BYTES = 200
REVIEWER_VARIABLES = ("USER",)
WINDOWS_REVIEWER_VARIABLES = ("USER", "USERNAME")  # USERNAME: the Windows fallback only
INVALID_REVIEWER = "A reviewer id of 1–200 bytes without control characters is required."
NO_DEFAULT_REVIEWER = "No reviewer id: set USER or pass --reviewer NAME."
NO_DEFAULT_REVIEWER_WINDOWS = "No reviewer id: set USER or USERNAME, or pass --reviewer NAME."


class ReviewerError(ValueError):
    """A missing or invalid reviewer ID; ``message`` names the rule."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def check_reviewer(reviewer: str) -> str:
    """``reviewer`` unchanged when it is a valid ID; raises ReviewerError otherwise."""
    size = len(reviewer.encode("utf-8", "surrogatepass"))
    if not 1 <= size <= REVIEWER_MAX_BYTES or not reviewer.strip():
        raise ReviewerError(INVALID_REVIEWER)
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in reviewer):
        raise ReviewerError(INVALID_REVIEWER)
    return reviewer


def default_reviewer(environment: Mapping[str, str], *, windows: bool = False) -> str:
    """``$USER``, else on Windows only ``$USERNAME`` (empty values count as unset), checked.

    ``USERNAME`` is what Windows sets for the signed-in user; elsewhere it is an arbitrary
    variable, so it is not taken as a name there. The composition root says which OS."""
    for name in WINDOWS_REVIEWER_VARIABLES if windows else REVIEWER_VARIABLES:
        value = environment.get(name)
        if value:
            return check_reviewer(value)
    raise ReviewerError(NO_DEFAULT_REVIEWER_WINDOWS if windows else NO_DEFAULT_REVIEWER)
