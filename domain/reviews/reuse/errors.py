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


class NeedsScript(Exception):
    """A fingerprint asked for ``without_scripts`` that runs an owner script: nothing was
    run for it (``fingerprint_jobs.compute_scripts_apart`` hands its key to a worker)."""
