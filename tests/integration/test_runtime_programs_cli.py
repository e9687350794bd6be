"""A runtime eval's program through the real CLI (issue 24): ``config check`` resolves it
(missing: file, line, key, exit 1, nothing started), warns when it is artifactize's own
interpreter, which ``verify`` records and prints in the Run; ``status`` and ``tools check``
show it; ``:/`` names the project's own program and refuses a linked folder."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.support.cli import CliResult, run_cli

OWN = str(Path(sys.executable).parent / "python")  # this checkout's venv: artifactize's own


def run(repo: Path, tmp_path: Path, *args: str) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    env.update({"ARTIFACTIZE_STATE_HOME": str(tmp_path / "state"), "ARTIFACTIZE_REMOTE": "off"})
    return run_cli("--repo", str(repo), *args, env=env)


def project(tmp_path: Path, command: str, args: str = "[]") -> Path:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "index.artf").write_text('name = "root"\n', encoding="utf-8")
    (repo / "app" / "index.artf").write_text(
        'name = "app"\n\n[evals.tests]\ntitle = "Tests"\n'
        f'profile = {{ kind = "runtime", command = "{command}", args = {args} }}\n'
        'payload.instruction = "Run them."\n',
        encoding="utf-8",
    )
    return repo


def test_a_missing_program_and_operand_are_found_before_verify(tmp_path: Path) -> None:
    repo = project(tmp_path, "pyhton3", '["{app}/test_nope.py"]')
    checked = run(repo, tmp_path, "config", "check")
    assert (checked.returncode, checked.stdout) == (1, "")
    assert checked.stderr == (
        "error: app/index.artf:5: evals.tests.profile.args[0]: Runtime argument "
        "{app}/test_nope.py cannot be resolved: Artifact input does not exist: test_nope.py\n"
        "error: app/index.artf:5: evals.tests.profile.command: Runtime command is unavailable "
        "or outside the eval's scope: pyhton3\n"
    )
    as_json = json.loads(run(repo, tmp_path, "--json", "config", "check").stdout)
    assert [p["keyPath"] for p in as_json["problems"]] == [
        "evals.tests.profile.args[0]",
        "evals.tests.profile.command",
    ]
    assert not (tmp_path / "state").exists()  # nothing started, nothing written
    report = json.loads(run(repo, tmp_path, "tools", "check").stdout)
    (runtime,) = report["runtime"]
    assert (runtime["evalId"], runtime["ok"], runtime["program"]) == ("app/tests", False, None)


def test_artifactizes_own_interpreter_is_warned_about_and_recorded(tmp_path: Path) -> None:
    repo = project(tmp_path, OWN, '["-c", "pass"]')
    checked = run(repo, tmp_path, "config", "check")
    assert checked.returncode == 0, checked.stderr
    first = checked.stdout.splitlines()[0]
    assert first.startswith(f"warning: app/index.artf:5: evals.tests.profile.command: {OWN} ")
    assert "runs on artifactize's own interpreter" in first
    verified = run(repo, tmp_path, "verify", "app/tests")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"    warning: {OWN} runs on artifactize's own interpreter" in verified.stdout
    document = json.loads(run(repo, tmp_path, "--json", "verify", "--force", "app/tests").stdout)
    (request,) = document["requests"]
    assert request["program"]["path"] == OWN
    assert request["program"]["realPath"] == os.path.realpath(OWN)
    assert "own interpreter" in request["program"]["warning"]
    status = run(repo, tmp_path, "status", "app/tests")
    assert f"    program: {OWN} -> {os.path.realpath(OWN)}" in status.stdout


def test_the_projects_own_program_from_the_root_and_a_linked_folder(tmp_path: Path) -> None:
    repo = project(tmp_path, ":/tools/bin/check")
    (repo / "tools" / "bin").mkdir(parents=True)
    target = tmp_path / "outside-check"
    target.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    target.chmod(0o755)
    (repo / "tools" / "bin" / "check").symlink_to(target)  # the last part may be a link
    verified = run(repo, tmp_path, "--json", "verify", "app/tests")
    (request,) = json.loads(verified.stdout)["requests"]
    assert request["status"] == "GREEN", request
    assert request["argv"] == [f"{repo}/tools/bin/check"]  # started through the link
    assert request["program"]["realPath"] == str(target)

    (repo / "tools" / "bin" / "check").unlink()
    (repo / "tools" / "bin").rmdir()
    outside = tmp_path / "outside-bin"
    outside.mkdir()
    (outside / "check").symlink_to(target)
    (repo / "tools" / "bin").symlink_to(outside)  # a linked folder: refused, rule named
    checked = run(repo, tmp_path, "config", "check")
    assert checked.returncode == 1
    assert checked.stderr == (
        "error: app/index.artf:5: evals.tests.profile.command: Program :/tools/bin/check: "
        "tools/bin is a symbolic link; a program from the workspace root (:/path) is reached "
        "through plain folders, never a symbolic link, and is an executable file or a "
        "symbolic link to one as its last part.\n"
    )


def test_status_says_why_an_eval_waits_for_a_dependency(tmp_path: Path) -> None:
    repo = project(tmp_path, "true", '["{lib}"]')
    (repo / "lib").mkdir()
    (repo / "lib" / "index.artf").write_text(
        'name = "lib"\n\n[evals.ok]\ntitle = "OK"\n'
        'profile = { kind = "runtime", command = "true", args = [] }\n'
        'payload.instruction = "Nothing."\n',
        encoding="utf-8",
    )
    status = run(repo, tmp_path, "status", "app/tests")
    assert status.returncode == 1
    lines = status.stdout.splitlines()
    waiting = lines.index(
        "  app/tests [selected]: WAIT_DEPENDENCY -> wait — Waiting for lib (lib/ok UNREVIEWED)."
    )
    assert lines[waiting + 2] == (
        "    why: app consumes lib (named by one of its evals, mounted or a child), and every "
        "eval of an Artifact runs once all evals of what it consumes are GREEN (--ignore-gates "
        "runs it anyway)"
    )
