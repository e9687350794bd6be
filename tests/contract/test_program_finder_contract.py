"""The program lookup contract, run by every adapter of ``ProgramFinder`` (POSIX on Linux,
``PATHEXT`` lookup on Windows under Wine): PATH order, never the current folder, relative
entries from ``cwd``, only executables, nothing run."""

from __future__ import annotations

import os
from pathlib import Path

from tests.contract.adapters import (
    make_non_executable,
    make_program,
    program_finder,
    same_path,
)

FINDER = program_finder()


def test_a_bare_name_is_found_in_the_first_path_entry_that_has_it(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    make_program(second, "tool")
    expected = make_program(first, "tool")
    path = os.pathsep.join([str(first), str(second)])
    assert same_path(FINDER.find_on_path("tool", path, str(tmp_path)), expected)


def test_later_entries_are_searched(tmp_path: Path) -> None:
    empty, second = tmp_path / "empty", tmp_path / "second"
    empty.mkdir()
    second.mkdir()
    expected = make_program(second, "tool")
    path = os.pathsep.join([str(empty), str(second)])
    assert same_path(FINDER.find_on_path("tool", path, str(tmp_path)), expected)


def test_the_current_folder_is_never_searched_implicitly(tmp_path: Path) -> None:
    make_program(tmp_path, "tool")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    empty_entries = os.pathsep.join(["", str(elsewhere), ""])
    assert FINDER.find_on_path("tool", empty_entries, str(tmp_path)) is None
    assert FINDER.find_on_path("tool", "", str(tmp_path)) is None


def test_a_relative_entry_is_taken_from_cwd(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    expected = make_program(tools, "tool")
    assert same_path(FINDER.find_on_path("tool", "tools", str(tmp_path)), expected)


def test_a_file_that_is_not_a_program_is_skipped(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    plain = make_non_executable(first, "tool")
    expected = make_program(second, "tool")
    path = os.pathsep.join([str(first), str(second)])
    assert same_path(FINDER.find_on_path("tool", path, str(tmp_path)), expected)
    assert not FINDER.is_executable_file(str(plain))


def test_a_folder_is_not_a_program(tmp_path: Path) -> None:
    (tmp_path / "tool").mkdir()
    (tmp_path / "tool.exe").mkdir()
    assert FINDER.find_on_path("tool", str(tmp_path), str(tmp_path)) is None
    assert not FINDER.is_executable_file(str(tmp_path / "tool"))


def test_a_name_with_a_separator_or_nul_is_not_looked_up(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    make_program(sub, "tool")
    for name in ("sub/tool", "", "to\0ol"):
        assert FINDER.find_on_path(name, str(tmp_path), str(tmp_path)) is None


def test_is_executable_file_checks_the_given_path(tmp_path: Path) -> None:
    program = make_program(tmp_path, "tool")
    assert FINDER.is_executable_file(str(program))
    assert not FINDER.is_executable_file(str(tmp_path / "missing"))
    assert not FINDER.is_executable_file(str(tmp_path))


def test_identity_tells_artifactizes_own_interpreter_from_another_program(tmp_path: Path) -> None:
    """The interpreter running this (the one artifactize runs on) is its own environment; a
    program elsewhere is not, and its real path follows every link (issue 24)."""
    import sys

    own = FINDER.identity(sys.executable)
    assert own.own_environment
    assert same_path(own.real_path, Path(sys.executable).resolve())
    other = make_program(tmp_path, "tool")
    identity = FINDER.identity(str(other))
    assert not identity.own_environment
    assert same_path(identity.real_path, other.resolve())
