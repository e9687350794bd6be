"""Which editor the terminal reviewer starts: ``$VISUAL``, else ``$EDITOR``, else the
fallback the composition root names for the platform (Notepad on Windows, vi elsewhere), and
how ``doctor`` reports it."""

from __future__ import annotations

import sys
from typing import cast

import pytest

from artifactize.domain.use_cases.doctor import Doctor, DoctorPorts, StoreCheck
from artifactize.entrypoints import container
from artifactize.entrypoints.review_tui.editor import EDITOR_DEFAULT, editor_command
from artifactize.ports.model import ModelBackends, ModelCatalog
from tests.fakes.processes import FakePrograms


def test_the_root_names_notepad_on_windows_and_vi_elsewhere() -> None:
    assert container.fallback_editor(True) == "notepad"
    assert container.fallback_editor(False) == "vi" == EDITOR_DEFAULT
    expected = "notepad" if sys.platform == "win32" else "vi"
    assert expected == container.FALLBACK_EDITOR


@pytest.mark.parametrize("windows", [False, True])
def test_the_fallback_is_used_only_without_visual_or_editor(windows: bool) -> None:
    fallback = container.fallback_editor(windows)
    assert editor_command({}, fallback, windows=windows) == [fallback]
    assert editor_command({"VISUAL": " ", "EDITOR": ""}, fallback, windows=windows) == [fallback]
    assert editor_command({"EDITOR": "nano -w"}, fallback, windows=windows) == ["nano", "-w"]
    both = {"VISUAL": "code --wait", "EDITOR": "nano"}
    assert editor_command(both, fallback, windows=windows) == ["code", "--wait"]


def test_on_windows_backslashes_are_path_separators_and_quotes_group_a_path() -> None:
    environment = {"EDITOR": '"C:\\Program Files\\Notepad++\\notepad++.exe" -multiInst'}
    assert editor_command(environment, "notepad", windows=True) == [
        "C:\\Program Files\\Notepad++\\notepad++.exe",
        "-multiInst",
    ]
    assert editor_command({"EDITOR": "C:\\Tools\\ed.exe"}, "notepad", windows=True) == [
        "C:\\Tools\\ed.exe"
    ]


def test_on_posix_the_value_is_split_like_a_shell_would() -> None:
    environment = {"EDITOR": "'my editor' --flag\\ value"}
    assert editor_command(environment, "vi") == ["my editor", "--flag value"]


async def _no_store() -> StoreCheck:
    return StoreCheck(False)


def doctor(fallback: str, missing: frozenset[str], environment: dict[str, str]) -> Doctor:
    ports = DoctorPorts(
        # The model checks are not used by the editor check.
        backends=cast("ModelBackends", object()),
        catalog=cast("ModelCatalog", object()),
        programs=FakePrograms(missing=missing),
        environment={"PATH": "/usr/bin", **environment},
        state_dir="/state",
        state_problem=lambda: None,
        store=_no_store,
        fallback_editor=fallback,
    )
    return Doctor(ports)


def test_doctor_looks_for_the_platforms_fallback_and_names_it() -> None:
    found = doctor("notepad", frozenset(), {})
    assert found._editor(True) == {
        "variable": None,
        "command": "/usr/bin/notepad",
        "needed": True,
    }
    assert found.problems == []
    missing = doctor("notepad", frozenset({"notepad"}), {})
    assert missing._editor(True)["command"] is None
    assert missing.problems == [
        "Human reviews: neither $VISUAL nor $EDITOR is set and notepad is not on PATH."
    ]
    assert doctor("notepad", frozenset({"notepad"}), {})._editor(False)["needed"] is False


def test_doctor_prefers_visual_then_editor() -> None:
    report = doctor("notepad", frozenset({"notepad"}), {"EDITOR": "nano"})._editor(True)
    assert report == {"variable": "EDITOR", "command": "nano", "needed": True}
