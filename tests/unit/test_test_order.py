"""The longest-first hint in tests/conftest.py names files that exist: a renamed file would
silently fall back to its collected place and lengthen ``make test``."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONGEST_FILES

REPO = Path(__file__).resolve().parents[2]


def test_every_file_in_the_hint_exists_once() -> None:
    assert len(set(LONGEST_FILES)) == len(LONGEST_FILES)
    assert [path for path in LONGEST_FILES if not (REPO / path).is_file()] == []
