"""docs/architecture.md describes every package of the layers in a paragraph under its own
heading, names no path that is gone, and no folder of domain/ or adapters/ grows past
MAX_MODULES_PER_FOLDER modules."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
LAYERS = ("ports", "kernel", "domain", "adapters", "entrypoints")
ROOMED = ("domain", "adapters")  # the layers whose folders are kept small
MAX_MODULES_PER_FOLDER = 20  # issue 23: "no folder in domain/ or adapters/ holds more than 20"
HEADING = re.compile(r"^#{2,4} `((?:ports|kernel|domain|adapters|entrypoints)(?:/[\w]+)*/)`$", re.M)
# A path into the repository anywhere in the text: a layer, docs/, tests/ or bench/, then
# path characters (a ``:attribute`` or the sentence's punctuation ends it).
PATH = re.compile(
    r"(?<![\w./-])((?:ports|kernel|domain|adapters|entrypoints|docs|tests|bench)/[\w./*-]*)"
)


def packages() -> set[str]:
    return {
        init.parent.relative_to(ROOT).as_posix() + "/"
        for layer in LAYERS
        for init in (ROOT / layer).rglob("__init__.py")
    }


def described(text: str) -> set[str]:
    return set(HEADING.findall(text))


def named_paths(text: str) -> set[str]:
    return {match.rstrip(".") for match in PATH.findall(text)}


def missing(paths: set[str]) -> list[str]:
    """The paths (``*`` a wildcard) that name nothing in the repository."""
    return sorted(p for p in paths if not any(ROOT.glob(p.rstrip("/"))))


def crowded(counts: dict[str, int]) -> list[str]:
    return sorted(folder for folder, count in counts.items() if count > MAX_MODULES_PER_FOLDER)


def module_counts() -> dict[str, int]:
    return {
        folder.relative_to(ROOT).as_posix(): len(list(folder.glob("*.py")))
        for layer in ROOMED
        for folder in [ROOT / layer, *(ROOT / layer).rglob("*")]
        if folder.is_dir() and (folder / "__init__.py").exists()
    }


def test_every_package_has_its_paragraph() -> None:
    assert sorted(packages() - described(DOC.read_text(encoding="utf-8"))) == []


def test_every_heading_names_a_package() -> None:
    assert sorted(described(DOC.read_text(encoding="utf-8")) - packages()) == []


def test_every_path_named_exists() -> None:
    named = named_paths(DOC.read_text(encoding="utf-8"))
    assert "kernel/transitions.py" in named  # the pattern finds what the page names
    assert missing(named) == []


def test_the_path_check_finds_a_path_that_is_gone() -> None:
    text = "See `domain/gone.py:Thing`, docs/windows.md and adapters/posix/session_*.py."
    assert named_paths(text) == {"domain/gone.py", "docs/windows.md", "adapters/posix/session_*.py"}
    assert missing(named_paths(text)) == ["domain/gone.py"]


def test_a_folder_may_hold_the_limit_and_not_one_more() -> None:
    at_limit = {"domain/full": MAX_MODULES_PER_FOLDER}
    assert crowded(at_limit) == []
    assert crowded({**at_limit, "adapters/over": MAX_MODULES_PER_FOLDER + 1}) == ["adapters/over"]


def test_no_folder_of_domain_or_adapters_is_crowded() -> None:
    counts = module_counts()
    assert counts["domain"] > 0 and counts["adapters/sqlite"] > 0  # the count sees the folders
    assert crowded(counts) == []
