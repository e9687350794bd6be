"""The in-process CLI harness (``tests/support/cli.py``) isolates each call as a new process
would: its own environment, working folder, streams and container, all given back after."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from artifactize.entrypoints.bootstrap import Container
from artifactize.entrypoints.cli.context import CliContext
from tests.support.cli import Cli, run_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "handbook"


def test_a_call_gets_its_environment_folder_and_streams_and_gives_them_back(
    tmp_path: Path,
) -> None:
    before = (dict(os.environ), Path.cwd(), sys.stdout, sys.stderr, sys.stdin)
    done = run_cli("--json", "config", "check", env={"PATH": os.environ["PATH"]}, cwd=EXAMPLE)
    assert (done.code, done.stderr) == (0, "")
    assert done.json()["root"] == str(EXAMPLE)  # found from the working folder alone
    assert (dict(os.environ), Path.cwd(), sys.stdout, sys.stderr, sys.stdin) == before


def test_exit_codes_and_errors_are_those_of_a_process() -> None:
    refused = run_cli("--repo", "", "config", "check")
    assert refused.code == 2 and refused.stdout == ""
    assert refused.stderr.startswith("error: ") and "Traceback" not in refused.stderr
    assert run_cli("verfy").code == 2
    assert run_cli("--version").stdout.startswith("artifactize ")


def test_each_call_builds_its_own_container(tmp_path: Path) -> None:
    outer = CliContext.__dict__["container"]
    seen: list[object] = []
    for _ in range(2):
        run_cli("--repo", str(EXAMPLE), "--json", "config", "check")
        seen.append(CliContext.__dict__["container"])
    assert seen == [outer, outer]  # given back after each call
    first, second = Container(), Container()
    run_cli("--repo", str(EXAMPLE), "--nested-repos", "config", "check", container=first)
    run_cli("--repo", str(EXAMPLE), "config", "check", container=second)
    assert (first.enter_nested(), second.enter_nested()) == (True, False)  # no override leaks


def test_the_fixture_gives_each_test_a_state_home(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "home", {"ARTIFACTIZE_REMOTE": "off"})
    assert cli.environment()["ARTIFACTIZE_STATE_HOME"] == str(tmp_path / "home")
    done = cli("--repo", str(EXAMPLE), "--json", "config", "check")
    assert done.code == 0 and not (tmp_path / "home").exists()  # config check writes nothing
