"""Saved timestamps: RFC 3339 UTC with exactly nine fractional digits, so text order is time
order, and Run IDs."""

from __future__ import annotations

import string
from datetime import datetime

from artifactize.kernel.timestamps import timestamp as timestamp  # the one writer of the saved form
from artifactize.ports.ids import IdSource, RunId

RUN_ID_RANDOM_CHARS = 6
_ALPHABET = string.ascii_letters + string.digits


def new_run_id(ids: IdSource) -> RunId:
    return RunId("run-" + ids.choose(_ALPHABET, RUN_ID_RANDOM_CHARS))


def elapsed_ms(start: str, end: str) -> int:
    """Milliseconds between two saved timestamps."""
    return int((_parse(end) - _parse(start)).total_seconds() * 1000)


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text[:26] + "+00:00")
