"""Documents for tests of stores: a store keeps whatever JSON object it is given."""

from __future__ import annotations

from typing import Any


def opaque(data: Any) -> Any:
    """``data`` as a document of any kind. A store test needs only a few fields, or made-up
    ones, so it opts out of the typed shapes of ``ports.documents`` on purpose."""
    return data
