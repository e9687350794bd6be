"""An eval's definition hash (``evalDefHash``): what of an eval its reuse key covers.

Apart from ``keys`` so that discovery can compute it when it parses a declaration and keep
it with the declaration in the file index (a warm ``status`` then hashes no unchanged
definition again); this module and ``canonical_json`` are among the sources the index is
stamped with, so a kept hash is never one another version of this code computed.
"""

from __future__ import annotations

import hashlib
from typing import Any

from artifactize.domain.declarations.model import Eval, Profile, RuntimeProfile
from artifactize.domain.reviews.reuse.canonical_json import canonical_json


def eval_strategy(item: Eval, profile: Profile | None = None) -> dict[str, Any]:
    """What the definition hash covers: kind, payload, schemas (+ command and args at runtime).

    Left out on purpose: backend, model, reasoning, timeouts, budgets, the variant, the eval's
    ID and title, tags, paths and every tool view. ``profile`` is the one in effect (a variant
    of a runtime eval changes the hash only through its command or args).
    """
    effective = profile if profile is not None else item.profile
    strategy: dict[str, Any] = {
        "kind": effective.kind,
        "payload": item.payload,
        "passSchema": item.pass_schema,
        "failSchema": item.fail_schema,
    }
    if isinstance(effective, RuntimeProfile):
        strategy["command"] = effective.command
        strategy["args"] = list(effective.args)
    return strategy


def eval_def_hash(item: Eval, profile: Profile | None = None) -> str:
    """``evalDefHash``: lowercase hex SHA-256 of the canonical JSON of ``eval_strategy``."""
    return hashlib.sha256(canonical_json(eval_strategy(item, profile))).hexdigest()
