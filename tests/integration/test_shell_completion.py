"""Shell completion for bash, zsh and fish (issue 12, Build 7), through the real CLI.

``artifactize completion SHELL`` prints the script; the script calls ``artifactize`` back
with ``_ARTIFACTIZE_COMPLETE`` set. bash is on every test machine, so its script is sourced
and its completion function run for real; zsh and fish are checked through the same
call-back protocol their scripts use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.process  # the installed console script

REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTIZE = REPO_ROOT / ".venv" / "bin" / "artifactize"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ARTIFACTIZE), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o default -F _artifactize_completion artifactize"),
        ("zsh", "#compdef artifactize"),
        ("fish", "complete --command artifactize"),
    ],
)
def test_each_shell_gets_a_script_that_calls_artifactize_back(shell: str, marker: str) -> None:
    done = run("completion", shell)
    assert done.returncode == 0, done.stderr
    assert marker in done.stdout and f"_ARTIFACTIZE_COMPLETE=complete_{shell}" in done.stdout


def test_an_unknown_shell_is_refused() -> None:
    done = run("completion", "tcsh")
    assert done.returncode == 2
    assert "Unknown shell 'tcsh': completion is available for bash, zsh and fish." in done.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_commands_and_options_for_real(tmp_path: Path) -> None:
    script = run("completion", "bash").stdout
    (tmp_path / "completion.bash").write_text(script, encoding="utf-8")
    probe = (
        f'PATH="{ARTIFACTIZE.parent}:$PATH"\n'
        f'source "{tmp_path / "completion.bash"}"\n'
        "COMP_WORDS=(artifactize req); COMP_CWORD=1; _artifactize_completion artifactize\n"
        'echo "commands: ${COMPREPLY[*]}"\n'
        "COMP_WORDS=(artifactize request list --wa); COMP_CWORD=3\n"
        "_artifactize_completion artifactize\n"
        'echo "options: ${COMPREPLY[*]}"\n'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "commands: request" in done.stdout
    assert "options: --waiting" in done.stdout


def test_zsh_and_fish_call_backs_answer_with_commands() -> None:
    zsh = run(
        env={
            "_ARTIFACTIZE_COMPLETE": "complete_zsh",
            "_TYPER_COMPLETE_ARGS": "artifactize config ch",
        }
    )
    assert zsh.returncode == 0 and '"check":"Validate every .artf declaration."' in zsh.stdout
    fish = run(
        env={
            "_ARTIFACTIZE_COMPLETE": "complete_fish",
            "_TYPER_COMPLETE_FISH_ACTION": "get-args",
            "_TYPER_COMPLETE_ARGS": "artifactize ver",
        }
    )
    assert fish.returncode == 0 and fish.stdout.startswith("verify\t")
