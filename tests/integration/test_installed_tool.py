"""artifactize installed as a tool, as a user installs it (issue 24), and the false GREEN it
must never give.

One wheel is built (``python -m build``: the sdist, then the wheel from it) and installed
with ``uv tool install`` into a tool directory of this module's own; the same wheel is
installed with ``pipx`` and with pip into a venv that also holds PyPI's ``entrypoints``
package. Each runs ``--version``, ``config check`` and a ``verify`` of the bundled example
with nothing but the installed command and the system's ``PATH`` (no venv's ``bin``).

The false GREEN: a project with its own venv in which the project is installed (a ``.pth``
to its ``src``, as an editable install writes), whose checkout is broken, while another
interpreter first on ``PATH`` has a good copy of the same package (as artifactize's own
venv had of a library it depends on). A runtime eval that runs a bare ``python3`` imports
the good copy and comes out GREEN; the eval ``init`` writes runs the project's own
interpreter (``:/.venv/bin/python``) and comes out RED.

Building and installing takes 10-30 s (the packages come from uv's cache after the first
time): the module is marked ``slow``; ``make test`` runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.installed_tool import REPO_ROOT, InstalledTool, install
from tests.support.processes import no_process_left_behind as no_process_left_behind_in

pytestmark = [pytest.mark.slow, pytest.mark.process]  # the installed tool
TIMEOUT = 300


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> InstalledTool:
    return install(tmp_path_factory.mktemp("installed"))


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=5):
        yield


def environment(tmp_path: Path, path: str) -> dict[str, str]:
    keep = ("LANG", "LC_ALL", "TMPDIR")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(
        {
            "PATH": path,
            "HOME": str(home),
            "USER": "alice",
            "ARTIFACTIZE_STATE_HOME": str(tmp_path / "state"),
            "ARTIFACTIZE_REMOTE": "off",
        }
    )
    return env


def run(
    command: str, cwd: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )


def handbook(tmp_path: Path) -> Path:
    target = tmp_path / "handbook"
    shutil.copytree(REPO_ROOT / "examples" / "handbook", target)
    return target


def check_the_bundled_example(command: str, tmp_path: Path, path: str) -> None:
    """``--version``, ``config check`` and ``verify calc-tests`` of the bundled example."""
    env = environment(tmp_path, path)
    repo = handbook(tmp_path)
    version = run(command, repo, env, "--version")
    assert version.returncode == 0 and version.stdout.startswith("artifactize "), version
    checked = run(command, repo, env, "config", "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("Configuration OK: 6 Artifacts"), checked.stdout
    verified = run(command, repo, env, "--json", "verify", "calc-tests")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["status"] == "GREEN"


def test_the_build_makes_a_wheel_and_an_sdist_of_one_package(tool: InstalledTool) -> None:
    with zipfile.ZipFile(tool.wheel) as wheel:
        tops = {name.split("/")[0] for name in wheel.namelist()}
        assert "artifactize/domain/project/workspace.py" in wheel.namelist()
    assert {top for top in tops if not top.endswith(".dist-info")} == {"artifactize"}
    with tarfile.open(tool.sdist) as sdist:
        members = {member.name: member for member in sdist.getmembers()}
    (root,) = {name.split("/")[0] for name in members}
    domain = members[f"{root}/artifactize/domain/project/workspace.py"]
    assert domain.isfile()  # the layer folders' links are followed: real files


def test_uv_tool_install_gives_a_command_whose_interpreter_is_not_on_path(
    tool: InstalledTool, tmp_path: Path
) -> None:
    assert sorted(p.name for p in tool.bin.iterdir()) == ["artifactize"]
    path = tool.path()
    for entry in path.split(os.pathsep):
        python = Path(entry, "python")
        assert not (python.exists() and python.resolve().parent == tool.tools.resolve())
    check_the_bundled_example(tool.command, tmp_path, path)


def test_pipx_install_gives_a_working_command(tool: InstalledTool, tmp_path: Path) -> None:
    pipx = Path(sys.executable).parent / "pipx"
    env = {
        **os.environ,
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(tmp_path / "pipx-bin"),
        "PIPX_DEFAULT_PYTHON": str(Path(sys.base_prefix) / "bin" / "python3"),
    }
    env.pop("VIRTUAL_ENV", None)
    installed = subprocess.run(
        [str(pipx), "install", str(tool.wheel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert sorted(p.name for p in (tmp_path / "pipx-bin").iterdir()) == ["artifactize"]
    path = os.pathsep.join([str(tmp_path / "pipx-bin"), tool.path()])
    check_the_bundled_example(str(tmp_path / "pipx-bin" / "artifactize"), tmp_path, path)


def test_pip_into_a_venv_that_holds_pypis_entrypoints(tool: InstalledTool, tmp_path: Path) -> None:
    """Both import correctly: the wheel no longer installs a top-level ``entrypoints``, nor a
    ``domain`` or ``adapters`` that would shadow a project's own."""
    venv = tmp_path / "venv"
    # The venv without a pip of its own: this checkout's pip installs into it (pip's own
    # --python), a current pip where ensurepip gives 3.11's 23.2 (which took 2.6x the CPU,
    # and 3 s more to put itself into the venv). --no-compile: the installed modules' layout
    # is what is tested; the first run caches the bytecode of what it imports.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT
    )
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    pip += ["install", "--quiet", "--no-compile"]
    for what in (["entrypoints==0.4.2"], [str(tool.wheel)]):
        done = subprocess.run([*pip, *what], capture_output=True, text=True, timeout=TIMEOUT)
        assert done.returncode == 0, done.stdout + done.stderr
    # a project's own modules named like the layers import as themselves, beside the wheel
    (tmp_path / "domain.py").write_text("MINE = 'domain'\n", encoding="utf-8")
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "__init__.py").write_text("MINE = 'adapters'\n", encoding="utf-8")
    probe = (
        "import entrypoints, domain, adapters, artifactize.entrypoints.cli.app as app;"
        "assert (domain.MINE, adapters.MINE) == ('domain', 'adapters');"
        "print(entrypoints.__file__, hasattr(entrypoints, 'get_group_all'), app.__name__)"
    )
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
    )
    assert imported.returncode == 0, imported.stderr
    where, pypi, ours = imported.stdout.split()
    assert where.endswith("site-packages/entrypoints.py") and pypi == "True"
    assert ours == "artifactize.entrypoints.cli.app"
    check_the_bundled_example(str(venv / "bin" / "artifactize"), tmp_path, tool.path())


# --- the false GREEN ----------------------------------------------------------------------

GOOD = "def total(prices):\n    return sum(prices)\n"
BROKEN = "def total(prices):\n    return sum(prices) + 1  # broken in the checkout\n"
TEST = (
    "import unittest\nfrom shop import total\n\n"
    "class Total(unittest.TestCase):\n"
    "    def test_total(self):\n        self.assertEqual(total([1, 2]), 3)\n"
)


def site_packages(venv: Path) -> Path:
    (found,) = venv.glob("lib/python3*/site-packages")
    return found


def broken_project(tmp_path: Path) -> tuple[Path, Path]:
    """The project (src layout, broken checkout, its own venv with it installed) and a
    decoy folder whose ``python3`` has a good copy of ``shop``."""
    repo = tmp_path / "shop"
    (repo / "src" / "shop").mkdir(parents=True)
    (repo / "src" / "shop" / "__init__.py").write_text(BROKEN, encoding="utf-8")
    (repo / "tests").mkdir()
    (repo / "tests" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "tests" / "test_total.py").write_text(TEST, encoding="utf-8")
    (repo / "pyproject.toml").write_text('[project]\nname = "shop"\n', encoding="utf-8")
    base = str(Path(sys.base_prefix) / "bin" / "python3")
    subprocess.run([base, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    (site_packages(repo / ".venv") / "shop.pth").write_text(f"{repo / 'src'}\n", encoding="utf-8")
    decoy = tmp_path / "decoy"
    subprocess.run([base, "-m", "venv", "--without-pip", str(decoy)], check=True)
    (site_packages(decoy) / "shop").mkdir()
    (site_packages(decoy) / "shop" / "__init__.py").write_text(GOOD, encoding="utf-8")
    return repo, decoy


def test_a_broken_checkout_is_red_with_the_eval_init_writes(
    tool: InstalledTool, tmp_path: Path
) -> None:
    repo, decoy = broken_project(tmp_path)
    # The decoy's python3 comes first on PATH, as artifactize's own venv did in the README.
    env = environment(tmp_path, os.pathsep.join([str(decoy / "bin"), tool.path()]))
    made = run(tool.command, repo, env, "--json", "init")
    assert made.returncode == 0, made.stderr
    tests = json.loads(made.stdout)["tests"]
    assert tests == [":/.venv/bin/python", "-m", "unittest", "discover", "-v"]
    assert run(tool.command, repo, env, "config", "check").returncode == 0
    verified = run(tool.command, repo, env, "--json", "verify", "shop/tests")
    assert verified.returncode == 1, verified.stdout + verified.stderr
    (request,) = json.loads(verified.stdout)["requests"]
    assert request["status"] == "RED", request
    assert "AssertionError: 4 != 3" in request["child"]["stderr"]
    assert request["program"]["path"] == f"{repo}/.venv/bin/python"
    assert request["program"]["warning"] is None

    # The same tests under a bare python3: the decoy's good copy, a false GREEN. This is
    # what `init` wrote before; the test above fails if it ever does again.
    declaration = repo / "index.artf"
    text = declaration.read_text(encoding="utf-8")
    declaration.write_text(text.replace('":/.venv/bin/python"', '"python3"'), encoding="utf-8")
    verified = run(tool.command, repo, env, "--json", "verify", "shop/tests")
    (request,) = json.loads(verified.stdout)["requests"]
    assert request["status"] == "GREEN", request


# --- the stand-in model, from the installed tool --------------------------------------------


def test_the_stand_in_runs_from_the_tool_whatever_python3_is_on_path(
    tool: InstalledTool, tmp_path: Path
) -> None:
    """A python3 first on PATH that cannot run anything: the stand-in needs none (it used to
    need the clone's venv, and die with ModuleNotFoundError: pydantic)."""
    broken = tmp_path / "broken-python"
    broken.mkdir()
    (broken / "python3").write_text("#!/bin/sh\nexit 97\n", encoding="utf-8")
    (broken / "python3").chmod(0o755)
    env = environment(tmp_path, os.pathsep.join([str(broken), tool.path()]))
    repo = handbook(tmp_path)
    verify = (tool.command, "--json", "verify", "--ignore-gates", "docs/accuracy")
    answered = run(tool.command, repo, env, "stand-in", "--", *verify)
    assert answered.returncode == 4, answered.stdout + answered.stderr  # the sign-off waits
    (request,) = json.loads(answered.stdout)["requests"]
    assert (request["evalId"], request["status"]) == ("docs/accuracy", "GREEN")
    called = sorted(call["name"] for call in request["toolCalls"])
    lines = answered.stderr.splitlines()
    said = [line for line in lines if line.startswith("stand-in: ")]
    assert said and all(line.endswith("(no model reviewed anything)") for line in said)
    assert [line for line in said if "calls" in line] == [
        line for line in said if line.split()[2] in called
    ]
    assert len(called) == len(set(called)) >= 3  # each Agent tool of the eval, once
    assert said[-1].startswith("stand-in: answers GREEN")
