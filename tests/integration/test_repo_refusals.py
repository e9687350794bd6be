"""``--repo`` that names no repository, and a walk that meets other repositories (issue 24).

``--repo /`` used to walk the whole filesystem into a traceback (a ``PermissionError`` from
a ``/proc`` folder, exit 1), and ``--repo /tmp`` into every repository below it. Each is now
one line and exit 2, or, for repositories below the root, a walk that stops at them and
says so (``--nested-repos`` goes in).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.cli import CliResult, run_cli


def run(*args: str, cwd: Path | None = None) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    env["ARTIFACTIZE_STATE_HOME"] = "/nonexistent-state-home"  # never created: nothing runs
    return run_cli(*args, env=env, cwd=cwd)


def unreadable_folder(tmp_path: Path) -> Path:
    """A folder whose listing fails: mode 000 for a user, a /proc one for root."""
    if os.geteuid() != 0:
        folder = tmp_path / "closed"
        folder.mkdir(mode=0)
        return folder
    folder = Path("/proc/self/map_files")
    try:
        os.listdir(folder)
    except PermissionError:
        return folder
    pytest.skip("no folder here that root cannot list")


@pytest.mark.parametrize("command", [("config", "check"), ("status",), ("verify", "--all")])
def test_the_filesystem_root_is_refused_in_one_line(command: tuple[str, ...]) -> None:
    refused = run("--repo", "/", *command)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        "error: cannot read the repository /: it is the root of the filesystem, not a "
        "repository; name the repository's folder\n"
    )
    spelled = run("--repo", "/.", "--json", *command, cwd=Path("/"))
    assert spelled.returncode == 2
    assert "root of the filesystem" in json.loads(spelled.stdout)["error"]


def test_a_file_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x\n", encoding="utf-8")
    refused = run("--repo", str(tmp_path / "notes.txt"), "config", "check")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        f"error: cannot read the repository {tmp_path / 'notes.txt'}: "
        f"`{tmp_path / 'notes.txt'}` is not a directory\n"
    )


def test_an_unreadable_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = unreadable_folder(tmp_path)
    refused = run("--repo", str(folder), "config", "check")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr.startswith(f"error: cannot read the repository {folder}: ")
    assert "Permission denied" in refused.stderr and refused.stderr.count("\n") == 1


def test_a_walk_stops_at_other_repositories_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "index.artf").write_text('name = "top"\n', encoding="utf-8")
    for name in ("clone", "submodule", "plain"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.artf").write_text(f'name = "{name}"\n', encoding="utf-8")
    (tmp_path / "clone" / ".git").mkdir()  # a clone: a .git folder
    (tmp_path / "submodule" / ".git").write_text("gitdir: ../.git/modules/s\n", encoding="utf-8")
    (tmp_path / "clone" / "broken.artf").write_text("not toml", encoding="utf-8")

    checked = run("--repo", str(tmp_path), "config", "check")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[0] == (
        "Skipped 2 other repositories below the root (a .git inside): clone, submodule; "
        "--nested-repos walks into them."
    )
    assert "2 Artifacts (2 folder" in checked.stdout  # top and plain
    data = json.loads(run("--repo", str(tmp_path), "--json", "config", "check").stdout)
    assert data["nestedRepositories"] == ["clone", "submodule"]

    entered = run("--repo", str(tmp_path), "--nested-repos", "config", "check")
    assert entered.returncode == 2  # now the clone's broken declaration is read
    assert "clone/broken.artf" in entered.stderr


@pytest.mark.parametrize("command", [("config", "check"), ("status",), ("verify", "--all")])
def test_a_repository_at_a_path_that_is_not_utf8_is_refused_in_one_line(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """Its path could be kept in no state (SQLite's text is UTF-8): it used to end in a
    traceback from the file index's or the state's first write."""
    repo = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"r\xffpo")))
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "index.artf").write_text(
        'name = "app"\n[evals.ok]\ntitle = "ok"\n'
        'profile = { kind = "runtime", command = "true", args = [] }\n'
        'payload.instruction = "Run ok."\n',
        encoding="utf-8",
    )
    refused = run("--repo", str(repo), *command)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr.startswith("error: cannot read the repository ")
    assert refused.stderr.endswith(
        ": its path is not valid UTF-8, and the state keeps paths as UTF-8 text; "
        "move it to a path whose names are UTF-8\n"
    )
    assert "Traceback" not in refused.stderr
    as_json = run("--repo", str(repo), "--json", *command)
    assert as_json.returncode == 2
    assert "not valid UTF-8" in json.loads(as_json.stdout)["error"]
