"""The errors a fingerprint computation raises (kept apart so every fingerprint module can
raise them without importing the others)."""

from __future__ import annotations


class FingerprintError(Exception):
    """A fingerprint that cannot be computed; preparation (or the recheck) fails.

    The message names the Artifact, the path and the rule, e.g. ``Artifact `docs`:
    fingerprint file `x/link` is a symbolic link; ignore it or remove it``.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotKept(Exception):
    """A fingerprint asked for only as the file index keeps it (``kept_only``), which the
    index does not keep: nothing was walked, hashed or run for it."""
