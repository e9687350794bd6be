"""artifactize built and installed as a user installs it: ``python -m build``, then
``uv tool install`` into a tool directory of the test's own (issue 24).

The checkout's sources are copied first (the layer folders, ``artifactize/``'s links to
them, ``pyproject.toml``, ``README.md``), so building writes nothing into the checkout and
two test workers building at once never share a folder. ``python -m build`` makes the sdist
and then the wheel from it, in an isolated environment (made by uv), as a release would.

The installed ``artifactize`` lives in ``bin`` alone: the tool's own interpreter stays in
the tool directory, never on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# artifactize/ and every layer folder it links to (ports, kernel, domain, adapters, ...).
LAYERS = tuple(
    sorted(link.name for link in (REPO_ROOT / "artifactize").iterdir() if link.is_symlink())
)
SOURCES = ("artifactize", *LAYERS)
BUILD_TIMEOUT_SECONDS = 600
UV = str(Path(sys.executable).parent / "uv")
# The interpreter this checkout's venv was made from: the tool gets a venv of its own on it.
BASE_PYTHON = str(Path(sys.base_prefix) / "bin" / "python3")


@dataclass(frozen=True)
class InstalledTool:
    dist: Path  # the wheel and the sdist
    tools: Path  # UV_TOOL_DIR: the tool's own environment
    bin: Path  # UV_TOOL_BIN_DIR: holds the artifactize command, nothing else

    @property
    def wheel(self) -> Path:
        (wheel,) = self.dist.glob("artifactize-*.whl")
        return wheel

    @property
    def sdist(self) -> Path:
        (sdist,) = self.dist.glob("artifactize-*.tar.gz")
        return sdist

    @property
    def command(self) -> str:
        return str(self.bin / "artifactize")

    def path(self) -> str:
        """``PATH`` with the tool's ``bin`` first and no virtual environment's ``bin`` on it
        (this checkout's ``.venv`` included): what a user who installed the tool has."""
        virtual = os.environ.get("VIRTUAL_ENV")
        kept = [
            entry
            for entry in os.environ.get("PATH", "").split(os.pathsep)
            if entry
            and not Path(entry, "pyvenv.cfg").exists()
            and not Path(entry).parent.joinpath("pyvenv.cfg").exists()
            and (virtual is None or not entry.startswith(virtual))
        ]
        return os.pathsep.join([str(self.bin), *kept])


def copy_sources(target: Path) -> Path:
    target.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        source = REPO_ROOT / name
        if name == "artifactize":  # its layer folders are links: copied as links
            shutil.copytree(source, target / name, symlinks=True, ignore=ignore)
        else:
            shutil.copytree(source, target / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / name, target / name)
    return target


def build(root: Path) -> Path:
    """The sdist and the wheel of a copy of this checkout, in ``root / "dist"``."""
    sources = copy_sources(root / "src")
    dist = root / "dist"
    subprocess.run(
        # uv makes build's isolated environments (1.4x less CPU than pip); the same build
        [sys.executable, "-m", "build", "--installer", "uv", "--outdir", str(dist), str(sources)],
        check=True,
        capture_output=True,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    return dist


def uv_tool_install(root: Path, wheel: Path) -> tuple[Path, Path]:
    """``uv tool install WHEEL`` into ``root``'s own tool and bin directories."""
    tools, bin_dir = root / "tools", root / "bin"
    environment = {
        **os.environ,
        "UV_TOOL_DIR": str(tools),
        "UV_TOOL_BIN_DIR": str(bin_dir),
        "UV_PYTHON_DOWNLOADS": "never",
    }
    environment.pop("VIRTUAL_ENV", None)
    subprocess.run(
        [UV, "tool", "install", "--python", BASE_PYTHON, str(wheel)],
        check=True,
        capture_output=True,
        env=environment,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    return tools, bin_dir


def install(root: Path) -> InstalledTool:
    dist = build(root)
    (wheel,) = dist.glob("artifactize-*.whl")
    tools, bin_dir = uv_tool_install(root, wheel)
    return InstalledTool(dist, tools, bin_dir)
