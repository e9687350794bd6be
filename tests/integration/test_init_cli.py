"""``artifactize init`` through the real CLI (issues 12 and 24): a small Python,
JavaScript, Rust, Go and Gradle project each, then ``config check`` and ``verify`` of the
runtime eval, which must be GREEN and run the project's own toolchain (a Python project's
own venv, ``:/.venv/bin/python``; a Node project's ``node_modules/.bin``; a Gradle
project's wrapper); the Python one goes on to a submitted Human sign-off. When init cannot
tell which program runs the tests, the eval is written commented out under what to fill
in. Never overwrites.

The Rust project runs with the system's ``PATH`` as it is: rustup's ``cargo`` proxy finds
its toolchain through the RUSTUP_HOME and CARGO_HOME a runtime eval is given. Without a Go
toolchain on the machine, a stand-in ``go`` on ``PATH`` checks the arguments it is given.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import CliResult, run_cli
from tests.support.processes import no_process_left_behind as no_process_left_behind_in

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


def run(repo: Path, tmp_path: Path, *args: str, path: str | None = None) -> CliResult:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    env.update(
        {
            "ARTIFACTIZE_STATE_HOME": str(tmp_path / "state"),
            "ARTIFACTIZE_REMOTE": "off",
            "USER": "alice",
            "PATH": path or os.environ["PATH"],
        }
    )
    return run_cli("--repo", str(repo), *args, cwd=REPO_ROOT, env=env)


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def init_check_verify(
    repo: Path, tmp_path: Path, language: str, tests: list[str], path: str | None = None
) -> dict[str, Any]:
    made = run(repo, tmp_path, "--json", "init", path=path)
    assert made.returncode == 0, made.stdout + made.stderr
    report: dict[str, Any] = json.loads(made.stdout)
    assert (report["project"], report["tests"]) == (language, tests)
    assert [w["path"] for w in report["written"]] == [".artfignore", "index.artf"]
    checked = run(repo, tmp_path, "config", "check", path=path)
    assert checked.returncode == 0, checked.stderr
    assert "3 evals (runtime 1, agent 1, human 1)" in checked.stdout
    name = report["name"]
    verified = run(repo, tmp_path, "--json", "verify", f"{name}/tests", path=path)
    assert verified.returncode == 4, verified.stdout + verified.stderr  # review, sign-off left
    (request,) = json.loads(verified.stdout)["requests"]
    assert request["status"] == "GREEN", request
    return report


def venv(repo: Path, folder: str = ".venv") -> None:
    """The project's own virtual environment (no pip: the tests need only the stdlib)."""
    base = str(Path(sys.base_prefix) / "bin" / "python3")
    subprocess.run([base, "-m", "venv", "--without-pip", str(repo / folder)], check=True)


def test_a_python_project_reaches_a_green_runtime_eval_and_a_human_sign_off(
    tmp_path: Path,
) -> None:
    repo = write(
        tmp_path / "shop",
        {
            "pyproject.toml": '[project]\nname = "shop"\n',
            "README.md": "# Shop\n",
            "shop.py": "def total(prices):\n    return sum(prices)\n",
            "tests/__init__.py": "",
            "tests/test_shop.py": (
                "import unittest\nfrom shop import total\n\n"
                "class Total(unittest.TestCase):\n"
                "    def test_total(self):\n        self.assertEqual(total([1, 2]), 3)\n"
            ),
        },
    )
    venv(repo)
    report = init_check_verify(
        repo, tmp_path, "python", [":/.venv/bin/python", "-m", "unittest", "discover", "-v"]
    )
    assert report["name"] == "shop"
    asked = run(repo, tmp_path, "verify", "shop/signoff")
    assert asked.returncode == 4
    request_id = run(repo, tmp_path, "request", "list", "--waiting", "--ids").stdout.strip()
    assert run(repo, tmp_path, "request", "claim", request_id).returncode == 0
    readme = run(repo, tmp_path, "request", "tool", request_id, "readme_shop")
    assert readme.returncode == 0 and "# Shop" in readme.stdout
    submitted = run(
        repo, tmp_path, "request", "submit", request_id, "--verdict", "GREEN",
        "--fields", '{"approved": true}',
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    assert f"shop/signoff [{request_id}]: GREEN" in submitted.stdout  # the short answer
    ignore = (repo / ".artfignore").read_text(encoding="utf-8").splitlines()
    assert "__pycache__/" in ignore and ".venv" in ignore  # a folder or a link


def test_pytest_is_chosen_when_the_project_uses_it(tmp_path: Path) -> None:
    repo = write(tmp_path / "p", {"pyproject.toml": "[tool.pytest.ini_options]\n"})
    venv(repo, "venv")
    made = run(repo, tmp_path, "--json", "init")
    assert json.loads(made.stdout)["tests"] == [":/venv/bin/python", "-m", "pytest", "-q"]


@pytest.mark.parametrize("probe", [".venv/bin/pytest", "tests/conftest.py"])
def test_pytest_is_chosen_when_only_its_venv_or_tests_folder_says_so(
    tmp_path: Path, probe: str
) -> None:
    """packaging's sdist in the field: pytest-style tests, pytest named only in
    tests/requirements.txt. unittest found no test there and exited 0 (Python 3.11): a
    false GREEN."""
    repo = write(
        tmp_path / "p",
        {
            "pyproject.toml": '[project]\nname = "p"\n',
            "tests/__init__.py": "",
            "tests/requirements.txt": "pytest\n",
            "tests/test_p.py": "def test_p():\n    assert False\n",
            ".venv/bin/python": "",
            probe: "",
        },
    )
    made = run(repo, tmp_path, "--json", "init")
    assert json.loads(made.stdout)["tests"] == [":/.venv/bin/python", "-m", "pytest", "-q"]


def test_a_venv_that_is_a_link_is_left_out_of_the_fingerprint(tmp_path: Path) -> None:
    """In the field, a project's .venv moved elsewhere and linked back: a `.venv/` pattern
    matches only a folder (gitignore's rule), so the fingerprint failed on the link its
    ignore list seemed to name. `:/` never follows a link (docs/runtime-evals.md): config
    check says so, and the eval runs once it names the interpreter by its absolute path."""
    repo = write(
        tmp_path / "linked",
        {
            "pyproject.toml": '[project]\nname = "linked"\n',
            "tests/__init__.py": "",
            "tests/test_ok.py": (
                "import unittest\n\nclass Ok(unittest.TestCase):\n"
                "    def test_ok(self):\n        self.assertTrue(True)\n"
            ),
        },
    )
    venv(tmp_path, "elsewhere-venv")
    (repo / ".venv").symlink_to(tmp_path / "elsewhere-venv")
    assert run(repo, tmp_path, "init").returncode == 0
    checked = run(repo, tmp_path, "config", "check")
    assert checked.returncode == 1
    assert "Program :/.venv/bin/python: .venv is a symbolic link" in checked.stderr
    declaration = repo / "index.artf"
    absolute = f'"{repo}/.venv/bin/python"'
    text = declaration.read_text(encoding="utf-8").replace('":/.venv/bin/python"', absolute)
    declaration.write_text(text, encoding="utf-8")
    verified = run(repo, tmp_path, "--json", "verify", "linked/tests")
    assert verified.returncode == 4, verified.stdout + verified.stderr
    (request,) = json.loads(verified.stdout)["requests"]
    assert request["status"] == "GREEN", request


@pytest.mark.parametrize(
    ("files", "fill_in"),
    [
        ({"setup.py": ""}, "No virtual environment found (.venv or venv)"),
        ({"pyproject.toml": "[tool.poetry]\n", "poetry.lock": ""}, "poetry env info --executable"),
        ({"pyproject.toml": "[tool.hatch.envs.default]\n"}, "hatch env find"),
        ({"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'},
         "package.json has no test script"),
        ({"build.gradle": ""}, "No gradlew found"),
    ],
)  # fmt: skip
def test_when_init_cannot_tell_it_says_what_to_fill_in(
    tmp_path: Path, files: dict[str, str], fill_in: str
) -> None:
    """Never a guessed python3: the eval is written commented out below the note."""
    repo = write(tmp_path / "p", files)
    made = run(repo, tmp_path, "--json", "init")
    assert made.returncode == 0, made.stderr
    report = json.loads(made.stdout)
    assert report["tests"] is None and "p/tests" not in report["evals"]
    text = (repo / "index.artf").read_text(encoding="utf-8")
    note = text[text.index("# TO FILL IN: ") : text.index("# [evals.tests]")]
    assert fill_in in note
    assert '# profile = { kind = "runtime", command = "FILL IN"' in text
    assert 'command = "python3"' not in text
    checked = run(repo, tmp_path, "config", "check")
    assert checked.returncode == 0, checked.stderr
    assert "2 evals (runtime 0, agent 1, human 1)" in checked.stdout


def test_a_uv_project_without_its_venv_yet_is_not_ready(tmp_path: Path) -> None:
    """uv keeps the environment in .venv: init names it, config check says it is missing."""
    repo = write(tmp_path / "p", {"pyproject.toml": "[project]\n", "uv.lock": ""})
    made = run(repo, tmp_path, "--json", "init")
    assert json.loads(made.stdout)["tests"][0] == ":/.venv/bin/python"
    assert "# Create .venv first: uv sync" in (repo / "index.artf").read_text(encoding="utf-8")
    checked = run(repo, tmp_path, "config", "check")
    assert checked.returncode == 1
    assert checked.stderr == (
        "error: index.artf:21: evals.tests.profile.command: Program :/.venv/bin/python: .venv "
        "does not exist; a program from the workspace root (:/path) is reached through plain "
        "folders, never a symbolic link, and is an executable file or a symbolic link to one "
        "as its last part.\n"
    )


def node_project(repo: Path, runner: str, script: str, index: str) -> Path:
    """A package whose test script is ``runner``, a program of its own node_modules/.bin
    (a link there, as npm installs it), running ``script``."""
    package = {"name": repo.name, "scripts": {"test": runner}}
    write(
        repo,
        {
            "package.json": json.dumps(package),
            "index.js": index,
            f"node_modules/{runner}/cli.js": script,
        },
    )
    (repo / "node_modules" / runner / "cli.js").chmod(0o755)
    (repo / "node_modules" / ".bin").mkdir()
    (repo / "node_modules" / ".bin" / runner).symlink_to(f"../{runner}/cli.js")
    return repo


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_javascript_project_runs_its_own_node_modules_bin(tmp_path: Path) -> None:
    """npm puts the project's node_modules/.bin first: its own test runner, a link there
    as npm installs it."""
    runner = "#!/usr/bin/env node\nrequire('assert').strictEqual(require('../../index.js'), 2);\n"
    repo = node_project(tmp_path / "web-app", "checkit", runner, "module.exports = 1 + 1;\n")
    init_check_verify(repo, tmp_path, "javascript", ["npm", "test"])
    (repo / "index.js").write_text("module.exports = 3;\n", encoding="utf-8")
    broken = run(repo, tmp_path, "--json", "verify", "web-app/tests")
    (request,) = json.loads(broken.stdout)["requests"]
    assert request["status"] == "RED", request


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_javascript_test_run_that_writes_its_coverage_is_green(tmp_path: Path) -> None:
    """minimist's `npm test` in the field runs nyc, which writes coverage/ and .nyc_output/
    into the repository: the fingerprint must not cover them, or every verify ends
    INPUT_CHANGED and never GREEN."""
    runner = (
        "#!/usr/bin/env node\nconst fs = require('fs');\n"
        "fs.mkdirSync('.nyc_output', {recursive: true});\n"
        "fs.writeFileSync('.nyc_output/' + Date.now() + '.json', '{}');\n"
        "fs.mkdirSync('coverage', {recursive: true});\n"
        "fs.writeFileSync('coverage/index.html', String(Date.now()));\n"
    )
    repo = node_project(tmp_path / "lib", "cover", runner, "module.exports = 1;\n")
    init_check_verify(repo, tmp_path, "javascript", ["npm", "test"])
    assert (repo / "coverage" / "index.html").is_file()


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_node_modules_linked_from_elsewhere_is_left_out_of_the_fingerprint(
    tmp_path: Path,
) -> None:
    """In the field, minimist's node_modules moved elsewhere and linked back: the built-in
    `node_modules/` ignore matches only a folder (a file of that name stays covered), so
    the fingerprint failed on the link; npm still runs the test script through it."""
    check = "require('assert').strictEqual(require(process.cwd() + '/index.js'), 2);\n"
    repo = node_project(
        tmp_path / "linked", "checkit", "#!/usr/bin/env node\n" + check, "module.exports = 2;\n"
    )
    (repo / "node_modules").rename(tmp_path / "installed")
    (repo / "node_modules").symlink_to(tmp_path / "installed")
    init_check_verify(repo, tmp_path, "javascript", ["npm", "test"])


def test_a_python_test_run_that_writes_its_coverage_is_green(tmp_path: Path) -> None:
    """pytest-cov (coverage.py) writes .coverage, .coverage.HOST.PID and htmlcov/ into the
    repository while the tests run: left out of the fingerprint like the venv."""
    writes = (
        "import os, unittest\n\n"
        "class Cover(unittest.TestCase):\n"
        "    def test_writes(self):\n"
        "        for name in ('.coverage', '.coverage.host.1'):\n"
        "            with open(name, 'w') as f:\n"
        "                f.write(str(os.getpid()))\n"
        "        os.makedirs('htmlcov', exist_ok=True)\n"
        "        with open('htmlcov/index.html', 'w') as f:\n"
        "            f.write(str(os.getpid()))\n"
    )
    repo = write(
        tmp_path / "cov",
        {"setup.py": "", "tests/__init__.py": "", "tests/test_cover.py": writes},
    )
    venv(repo)
    init_check_verify(
        repo, tmp_path, "python", [":/.venv/bin/python", "-m", "unittest", "discover", "-v"]
    )
    assert (repo / "htmlcov" / "index.html").is_file()


def test_a_gradle_project_runs_its_own_wrapper(tmp_path: Path) -> None:
    """``:/gradlew test``: the wrapper committed with the project (a stand-in here)."""
    repo = write(
        tmp_path / "jvm",
        {"build.gradle": "", "gradlew": '#!/bin/sh\n[ "$1" = test ] && [ -f build.gradle ]\n'},
    )
    (repo / "gradlew").chmod(0o755)
    init_check_verify(repo, tmp_path, "java", [":/gradlew", "test"])


@pytest.mark.skipif(shutil.which("cargo") is None, reason="no Rust toolchain")
def test_a_rust_project(tmp_path: Path) -> None:
    repo = write(
        tmp_path / "crate",
        {
            "Cargo.toml": '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n',
            "src/lib.rs": (
                "pub fn add(a: i32, b: i32) -> i32 { a + b }\n"
                "#[cfg(test)]\nmod tests {\n    #[test]\n"
                "    fn adds() { assert_eq!(super::add(1, 2), 3); }\n}\n"
            ),
        },
    )
    # A crate keeps its Cargo.lock (cargo test would write one into the reviewed tree,
    # changing its fingerprint mid-review: INPUT_CHANGED).
    subprocess.run(
        ["cargo", "generate-lockfile", "--offline"],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=120,
    )
    init_check_verify(repo, tmp_path, "rust", ["cargo", "test"])  # the system's PATH
    assert "target/" in (repo / ".artfignore").read_text(encoding="utf-8").splitlines()


def test_a_go_project(tmp_path: Path) -> None:
    repo = write(
        tmp_path / "gomod",
        {
            "go.mod": "module example.com/gomod\n\ngo 1.19\n",
            "add.go": "package gomod\n\nfunc Add(a, b int) int { return a + b }\n",
            "add_test.go": (
                'package gomod\n\nimport "testing"\n\n'
                "func TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal()\n\t}\n}\n"
            ),
        },
    )
    path = os.environ["PATH"]
    if shutil.which("go") is None:  # a stand-in that checks how it was called
        shim = tmp_path / "bin"
        shim.mkdir()
        (shim / "go").write_text(
            '#!/bin/sh\n[ "$1 $2" = "test ./..." ] && [ -f go.mod ] && [ -f add_test.go ]\n',
            encoding="utf-8",
        )
        (shim / "go").chmod(0o755)
        path = f"{shim}:{path}"
    init_check_verify(repo, tmp_path, "go", ["go", "test", "./..."], path=path)


def test_init_never_overwrites_and_writes_nothing_half(tmp_path: Path) -> None:
    repo = write(tmp_path / "r", {"go.mod": "module r\n", ".artfignore": "keep\n"})
    refused = run(repo, tmp_path, "init")
    assert refused.returncode == 2
    assert f"{repo / '.artfignore'} already exists; artifactize init never overwrites" in (
        refused.stderr
    )
    assert not (repo / "index.artf").exists()
    assert (repo / ".artfignore").read_text(encoding="utf-8") == "keep\n"
    (repo / ".artfignore").unlink()
    (repo / "index.artf").symlink_to(tmp_path / "elsewhere")  # a dangling link counts too
    assert run(repo, tmp_path, "init").returncode == 2
    assert not (tmp_path / "elsewhere").exists() and not (repo / ".artfignore").exists()


def test_a_folder_without_a_known_project_is_refused(tmp_path: Path) -> None:
    repo = write(tmp_path / "notes", {"notes.txt": "hello\n"})
    refused = run(repo, tmp_path, "--json", "init")
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["error"].startswith(
        "No Python, JavaScript/TypeScript, Rust, Go or Java project found"
    )
    assert sorted(p.name for p in repo.iterdir()) == ["notes.txt"]


IDNA = "idna==3.20"  # a real PyPI package whose sdist ships its tests (pytest, hypothesis)


@pytest.mark.slow
def test_a_real_pypi_package_in_its_own_venv_then_broken(tmp_path: Path) -> None:
    """idna's sdist, with its test tools in the project's own venv: GREEN, then RED once
    its checkout is broken (downloads from PyPI the first time, then uv's cache)."""
    downloads = tmp_path / "downloads"
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    fetched = subprocess.run(
        [*pip, "--no-binary", ":all:", IDNA, "-d", str(downloads)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if fetched.returncode != 0:
        pytest.skip(f"PyPI is not reachable: {fetched.stderr[-300:]}")
    (sdist,) = downloads.glob("idna-*.tar.gz")
    shutil.unpack_archive(sdist, tmp_path)
    repo = next(tmp_path.glob("idna-*/"))
    venv(repo)
    uv = str(Path(sys.executable).parent / "uv")
    installed = subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(repo / ".venv" / "bin" / "python"),
         "pytest==9.2.0", "hypothesis==6.170.17"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    report = init_check_verify(
        repo, tmp_path, "python", [":/.venv/bin/python", "-m", "pytest", "-q"]
    )
    core = repo / "idna" / "core.py"
    text = core.read_text(encoding="utf-8")
    broken = text + "\nraise ImportError('a broken checkout')\n"  # every test module fails
    assert broken != text
    core.write_text(broken, encoding="utf-8")
    red = run(repo, tmp_path, "--json", "verify", f"{report['name']}/tests")
    (request,) = json.loads(red.stdout)["requests"]
    assert request["status"] == "RED", request
    assert request["program"]["path"] == f"{repo}/.venv/bin/python"
