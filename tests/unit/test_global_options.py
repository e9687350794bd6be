"""Global options are lifted out of argv wherever they stand, each at most once."""

from __future__ import annotations

import pytest

from artifactize.entrypoints.cli.global_options import (
    GlobalOptions,
    UsageError,
    split_global_options,
)


def test_defaults() -> None:
    assert split_global_options(["config", "check"]) == (GlobalOptions(), ["config", "check"])
    assert GlobalOptions() == GlobalOptions(repo=".", state_dir=None, json=False)
    assert split_global_options([]) == (GlobalOptions(), [])


@pytest.mark.parametrize(
    "argv",
    [
        ["--repo", "/r", "--state-dir", "/s", "--json", "config", "check"],
        ["config", "check", "--repo", "/r", "--state-dir", "/s", "--json"],
        ["config", "--json", "check", "--repo=/r", "--state-dir=/s"],
        ["--state-dir=/s", "config", "--repo=/r", "check", "--json"],
    ],
)
def test_options_are_accepted_anywhere(argv: list[str]) -> None:
    options, rest = split_global_options(argv)
    assert options == GlobalOptions(repo="/r", state_dir="/s", json=True)
    assert rest == ["config", "check"]


def test_values_keep_everything_after_the_first_equals_sign() -> None:
    options, rest = split_global_options(["--repo=a=b", "--state-dir", "--weird=x", "graph"])
    assert options.repo == "a=b"
    assert options.state_dir == "--weird=x"
    assert rest == ["graph"]


def test_other_arguments_keep_their_order() -> None:
    options, rest = split_global_options(["config", "graph", "--json", "app", "--other", "x"])
    assert options.json
    assert rest == ["config", "graph", "app", "--other", "x"]


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--repo", "a", "--repo", "b"], "--repo"),
        (["--repo=a", "config", "--repo", "b"], "--repo"),
        (["--state-dir", "a", "--state-dir=b"], "--state-dir"),
        (["--json", "config", "--json"], "--json"),
    ],
)
def test_an_option_given_twice_is_a_usage_error(argv: list[str], option: str) -> None:
    with pytest.raises(UsageError, match=f"^{option} may be given only once$"):
        split_global_options(argv)


@pytest.mark.parametrize("option", ["--repo", "--state-dir"])
def test_a_missing_value_is_a_usage_error(option: str) -> None:
    with pytest.raises(UsageError, match=f"^{option} needs a value$"):
        split_global_options(["config", "check", option])


@pytest.mark.parametrize("argv", [["--repo="], ["--state-dir", ""], ["--repo", ""]])
def test_an_empty_value_is_a_usage_error(argv: list[str]) -> None:
    with pytest.raises(UsageError, match="needs a nonempty value"):
        split_global_options(argv)


def test_double_dash_stops_scanning() -> None:
    options, rest = split_global_options(["--json", "run", "--", "--repo", "x", "--json"])
    assert options == GlobalOptions(json=True)
    assert rest == ["run", "--", "--repo", "x", "--json"]


def test_double_dash_first_leaves_everything() -> None:
    options, rest = split_global_options(["--", "--repo", "--repo"])
    assert options == GlobalOptions()
    assert rest == ["--", "--repo", "--repo"]


def test_a_repeated_option_after_double_dash_is_not_an_error() -> None:
    options, rest = split_global_options(["--repo", "a", "--", "--repo", "b"])
    assert options.repo == "a"
    assert rest == ["--", "--repo", "b"]


def test_similar_looking_options_are_left_alone() -> None:
    options, rest = split_global_options(["--repository", "x", "--json-out", "--repo-x=1"])
    assert options == GlobalOptions()
    assert rest == ["--repository", "x", "--json-out", "--repo-x=1"]
