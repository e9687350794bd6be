"""Real workspaces under ``tmp_path``: ``.artf`` declarations written as TOML, files,
snapshots, and tool ports with the real POSIX adapters."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.adapters.posix.process import PosixProcessRunner
from artifactize.adapters.posix.programs import PosixProgramFinder
from artifactize.adapters.posix.scratch import PosixScratchSpace
from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.domain.tools.registry import ToolPorts
from tests.fakes.threads import THREADS


def toml_value(value: Any) -> str:
    """A Python value as an inline TOML value (tables and arrays on one line)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise TypeError(value)


def declare(path: Path, data: dict[str, Any]) -> None:
    """Write a declaration: ``path`` is a folder (``index.artf``) or an ``.artf`` file."""
    target = path if path.suffix == ".artf" else path / "index.artf"
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{json.dumps(key)} = {toml_value(value)}" for key, value in data.items()]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write(path: Path, data: bytes | str) -> Path:
    """Write ``data`` (text as UTF-8) at ``path``, creating its parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def remove_large_files(root: Path) -> None:
    """Keep the disk use of retained pytest trees modest: drop every file of 1 MiB or more."""
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink() and path.stat().st_size >= 1024 * 1024:
                path.unlink()


def entries_under(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under ``root`` (not ``root`` itself), without following links."""
    found: dict[str, tuple[object, ...]] = {}
    for directory, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(directory) / name
            info = os.lstat(path)
            rel = path.relative_to(root).as_posix()
            if stat.S_ISREG(info.st_mode):
                found[rel] = ("file", info.st_mtime_ns, hashlib.sha256(path.read_bytes()).digest())
            else:
                found[rel] = (stat.S_IFMT(info.st_mode), info.st_mtime_ns)
    return found


def real_tool_ports(environment: Mapping[str, str]) -> ToolPorts:
    """Tool ports with every real POSIX adapter, command tools included."""
    return ToolPorts(
        PosixFilesystem(),
        RyRegexEngine(),
        PosixProcessRunner(),
        environment,
        programs=PosixProgramFinder(),
        scratch=PosixScratchSpace(),
        threads=THREADS,
    )
