"""Where state lives: precedence of the locations, and never inside the repository."""

from __future__ import annotations

import pytest

from artifactize.domain.project.state_home import StateLocationError, check_outside_repo, state_home

HOME = "/home/ann"
FULL_ENV = {"ARTIFACTIZE_STATE_HOME": "/env/state", "XDG_STATE_HOME": "/xdg"}


def test_state_dir_option_wins() -> None:
    assert state_home(FULL_ENV, HOME, "/option") == "/option"


def test_artifactize_state_home_beats_xdg() -> None:
    assert state_home(FULL_ENV, HOME) == "/env/state"
    assert state_home(FULL_ENV, HOME, None) == "/env/state"


def test_xdg_state_home_gets_an_artifactize_directory() -> None:
    assert state_home({"XDG_STATE_HOME": "/xdg"}, HOME) == "/xdg/artifactize"
    assert state_home({"XDG_STATE_HOME": "/xdg/"}, HOME) == "/xdg/artifactize"


def test_home_is_the_last_resort() -> None:
    assert state_home({}, HOME) == "/home/ann/.local/state/artifactize"
    assert state_home({}, "/home/ann/") == "/home/ann/.local/state/artifactize"
    assert state_home({"HOME": "/elsewhere"}, HOME) == "/home/ann/.local/state/artifactize"


@pytest.mark.parametrize(
    ("env", "override", "expected"),
    [
        ({"ARTIFACTIZE_STATE_HOME": "", "XDG_STATE_HOME": "/xdg"}, None, "/xdg/artifactize"),
        (
            {"ARTIFACTIZE_STATE_HOME": "", "XDG_STATE_HOME": ""},
            None,
            "/home/ann/.local/state/artifactize",
        ),
        ({"ARTIFACTIZE_STATE_HOME": "/env/state"}, "", "/env/state"),
    ],
    ids=["empty-artifactize", "both-empty", "empty-option"],
)
def test_empty_values_count_as_unset(
    env: dict[str, str], override: str | None, expected: str
) -> None:
    assert state_home(env, HOME, override) == expected


@pytest.mark.parametrize(
    "state",
    ["/repo", "/repo/", "/repo/.state", "/repo/a/b/c"],
)
def test_state_inside_the_repository_is_refused(state: str) -> None:
    with pytest.raises(StateLocationError, match="inside the reviewed repository"):
        check_outside_repo(state, "/repo")


def test_the_error_names_both_paths_and_the_option() -> None:
    with pytest.raises(StateLocationError) as caught:
        check_outside_repo("/repo/.state", "/repo")
    message = str(caught.value)
    assert "/repo/.state" in message
    assert "--state-dir" in message


@pytest.mark.parametrize(
    "state",
    ["/repo2", "/repo2/state", "/rep", "/", "/home/ann/.local/state/artifactize", "/other/repo"],
)
def test_state_outside_the_repository_is_accepted(state: str) -> None:
    check_outside_repo(state, "/repo")


def test_a_repository_at_the_filesystem_root_contains_everything() -> None:
    with pytest.raises(StateLocationError):
        check_outside_repo("/var/state", "/")


WINDOWS_HOME = "C:\\Users\\ann"


def test_windows_uses_localappdata_when_neither_variable_is_set() -> None:
    env = {"LOCALAPPDATA": "C:\\Users\\ann\\AppData\\Local"}
    expected = "C:\\Users\\ann\\AppData\\Local\\artifactize"
    assert state_home(env, WINDOWS_HOME, windows=True) == expected
    assert state_home({"LOCALAPPDATA": "C:\\Local\\"}, WINDOWS_HOME, windows=True) == (
        "C:\\Local\\artifactize"
    )


def test_windows_still_prefers_the_variables_and_the_option() -> None:
    env = {"LOCALAPPDATA": "C:\\Local", "XDG_STATE_HOME": "D:/xdg"}
    assert state_home(env, WINDOWS_HOME, windows=True) == "D:/xdg/artifactize"
    env = {**env, "ARTIFACTIZE_STATE_HOME": "E:\\state"}
    assert state_home(env, WINDOWS_HOME, windows=True) == "E:\\state"
    assert state_home(env, WINDOWS_HOME, "F:\\opt", windows=True) == "F:\\opt"


def test_localappdata_is_ignored_elsewhere_and_when_empty() -> None:
    assert state_home({"LOCALAPPDATA": "/la"}, HOME) == "/home/ann/.local/state/artifactize"
    assert state_home({"LOCALAPPDATA": ""}, WINDOWS_HOME, windows=True) == (
        "C:\\Users\\ann/.local/state/artifactize"
    )
