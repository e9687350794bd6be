"""Whether a ``str`` can be written as UTF-8: SQLite keeps text as UTF-8, and a path read
from the OS with ``surrogateescape`` (a name that is not UTF-8) cannot be."""

from __future__ import annotations


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
