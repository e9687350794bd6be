"""``artifactize init`` through the real CLI (issue 12, Build 6): a small Python, JavaScript,
Rust and Go project each, then ``config check`` and ``verify`` of the runtime eval, which
must be GREEN; the Python one goes on to a submitted Human sign-off. Never overwrites.

Runtime evals inherit only ``PATH`` and ``LANG``: rustup's ``cargo`` proxy needs its home,
so the Rust project runs with the toolchain's own ``bin`` on ``PATH``. Without a Go
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

from tests.support.processes import no_process_left_behind as no_process_left_behind_in

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI = (sys.executable, "-m", "artifactize.entrypoints.cli.app")


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


def run(
    repo: Path, tmp_path: Path, *args: str, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARTIFACTIZE_")}
    env.update(
        {
            "ARTIFACTIZE_STATE_HOME": str(tmp_path / "state"),
            "ARTIFACTIZE_REMOTE": "off",
            "USER": "alice",
            "PATH": path or os.environ["PATH"],
        }
    )
    return subprocess.run(
        [*CLI, "--repo", str(repo), *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=600,
    )


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
    report = init_check_verify(
        repo, tmp_path, "python", ["python3", "-m", "unittest", "discover", "-v"]
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
    assert "__pycache__/" in ignore and ".venv/" in ignore


def test_pytest_is_chosen_when_the_project_uses_it(tmp_path: Path) -> None:
    repo = write(tmp_path / "p", {"pyproject.toml": "[tool.pytest.ini_options]\n"})
    made = run(repo, tmp_path, "--json", "init")
    assert json.loads(made.stdout)["tests"] == ["python3", "-m", "pytest", "-q"]


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_javascript_project(tmp_path: Path) -> None:
    repo = write(
        tmp_path / "web-app",
        {
            "package.json": json.dumps({"name": "web-app", "scripts": {"test": "node test.js"}}),
            "test.js": "const assert = require('assert');\nassert.strictEqual(1 + 1, 2);\n",
        },
    )
    init_check_verify(repo, tmp_path, "javascript", ["npm", "test"])


def rust_path() -> str | None:
    """``PATH`` with the Rust toolchain's own bin first (rustup proxies need RUSTUP_HOME)."""
    if shutil.which("cargo") is None:
        return None
    rustc = shutil.which("rustc")
    sysroot = subprocess.run(
        [rustc or "rustc", "--print", "sysroot"], capture_output=True, text=True, timeout=60
    ).stdout.strip()
    if not sysroot:
        return None
    return f"{sysroot}/bin:{os.environ['PATH']}"


@pytest.mark.skipif(rust_path() is None, reason="no Rust toolchain")
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
    path = rust_path()
    assert path is not None
    # A crate keeps its Cargo.lock (cargo test would write one into the reviewed tree,
    # changing its fingerprint mid-review: INPUT_CHANGED).
    subprocess.run(
        ["cargo", "generate-lockfile", "--offline"],
        cwd=repo,
        env={**os.environ, "PATH": path},
        check=True,
        capture_output=True,
        timeout=120,
    )
    init_check_verify(repo, tmp_path, "rust", ["cargo", "test"], path=path)
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
        "No Python, JavaScript/TypeScript, Rust or Go project found"
    )
    assert sorted(p.name for p in repo.iterdir()) == ["notes.txt"]
