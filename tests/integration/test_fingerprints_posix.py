"""Artifactsum on real files through the POSIX adapter: links, FIFOs, stability, leaks."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.domain.reviews.reuse.fingerprints import FingerprintError, compute_artifactsum
from artifactize.domain.reviews.reuse.keys import key_inputs
from artifactize.domain.use_cases.config_service import ConfigService
from tests.support.processes import descriptors_opened_since, open_descriptors
from tests.support.workspaces import declare, write

PROC_FD = Path("/proc/self/fd")


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    declare(root, {"name": "root"})
    declare(
        root / "docs",
        {
            "name": "docs",
            "evals": {
                "ok": {
                    "title": "t",
                    "profile": {"kind": "human"},
                    "payload": {"instruction": "Check {docs}."},
                }
            },
        },
    )
    write(root / "docs" / "guide.md", "# Guide\n")
    write(root / "docs" / "pages" / "a.md", "a\n")
    write(root / "docs" / ".gitignore", "*.log\n")
    write(root / "docs" / "run.log", "noise\n")
    write(root / "docs" / "__pycache__" / "m.pyc", b"\x00")
    return root


def artifactsum(root: Path, name: str = "docs") -> str:
    filesystem = PosixFilesystem()
    workspace = ConfigService(filesystem).load(str(root))
    return compute_artifactsum(workspace, name, filesystem).value


def failure(root: Path, name: str = "docs") -> str:
    filesystem = PosixFilesystem()
    workspace = ConfigService(filesystem).load(str(root))
    with pytest.raises(FingerprintError) as caught:
        compute_artifactsum(workspace, name, filesystem)
    return caught.value.message


def by_hand(files: dict[str, bytes]) -> str:
    data = b"".join(
        path.encode() + b"\0" + hashlib.sha256(files[path]).digest() for path in sorted(files)
    )
    return "artifactsum:" + hashlib.sha256(data).hexdigest()


def test_real_tree_matches_the_documented_layout(tmp_path: Path) -> None:
    root = repo(tmp_path)
    assert artifactsum(root) == by_hand(
        {".gitignore": b"*.log\n", "guide.md": b"# Guide\n", "pages/a.md": b"a\n"}
    )


def test_the_same_tree_hashed_twice_gives_the_same_value_and_leaks_nothing(
    tmp_path: Path,
) -> None:
    root = repo(tmp_path)
    first = artifactsum(root)
    before = open_descriptors()
    assert artifactsum(root) == first
    assert descriptors_opened_since(before) == set()


def test_touching_mtime_or_mode_only_changes_nothing(tmp_path: Path) -> None:
    root = repo(tmp_path)
    first = artifactsum(root)
    guide = root / "docs" / "guide.md"
    os.utime(guide, (1_000_000_000, 1_000_000_000))
    guide.chmod(0o600)
    assert artifactsum(root) == first


def test_editing_one_byte_changes_the_value(tmp_path: Path) -> None:
    root = repo(tmp_path)
    first = artifactsum(root)
    write(root / "docs" / "pages" / "a.md", "b\n")
    assert artifactsum(root) != first


def test_an_ignored_file_changing_changes_nothing(tmp_path: Path) -> None:
    root = repo(tmp_path)
    first = artifactsum(root)
    write(root / "docs" / "run.log", "other noise\n")
    assert artifactsum(root) == first


def test_a_real_symlink_is_an_error(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "docs" / "pages" / "link").symlink_to("a.md")
    assert failure(root) == (
        "Artifact `docs`: fingerprint file `pages/link` is a symbolic link; ignore it or remove it"
    )


def test_a_real_symlinked_folder_is_an_error_and_is_not_followed(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (root / "docs" / "outside").symlink_to(tmp_path)
    assert "fingerprint file `outside` is a symbolic link" in failure(root)


def test_a_real_fifo_is_an_error_and_is_never_opened(tmp_path: Path) -> None:
    root = repo(tmp_path)
    os.mkfifo(root / "docs" / "pipe")  # opening it for reading would block: it must not be
    assert failure(root) == (
        "Artifact `docs`: fingerprint file `pipe` is a special file (a FIFO, socket or device); "
        "ignore it or remove it"
    )


def test_an_ignored_fifo_and_symlink_are_fine(tmp_path: Path) -> None:
    root = repo(tmp_path)
    first = artifactsum(root)
    os.mkfifo(root / "docs" / "pipe.log")
    (root / "docs" / "link.log").symlink_to("guide.md")
    assert artifactsum(root) == first


def test_the_key_follows_the_files(tmp_path: Path) -> None:
    root = repo(tmp_path)
    filesystem = PosixFilesystem()
    workspace = ConfigService(filesystem).load(str(root))
    first = key_inputs(workspace, "docs/ok", filesystem)
    assert first.key is not None
    assert key_inputs(workspace, "docs/ok", filesystem).key == first.key
    write(root / "docs" / "guide.md", "# Guide!\n")
    assert key_inputs(workspace, "docs/ok", filesystem).key != first.key
