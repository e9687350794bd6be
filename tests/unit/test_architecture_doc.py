"""docs/architecture.md lists every module of the layers, and no module that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("ports", "kernel", "domain", "adapters", "entrypoints")
ROW = re.compile(r"^\| `((?:ports|kernel|domain|adapters|entrypoints)/[^`]*)` \|", re.M)


def modules() -> set[str]:
    found = set()
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            found.add(relative.removesuffix("__init__.py"))
    return found


def rows() -> set[str]:
    return set(ROW.findall((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")))


def test_every_module_has_a_row() -> None:
    assert sorted(modules() - rows()) == []


def test_every_row_names_a_module_that_exists() -> None:
    assert sorted(rows() - modules()) == []
