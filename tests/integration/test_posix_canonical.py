"""The kernel's canonical names (``adapters/posix/canonical.py``) and ``open_root``'s single
open: each answer equals what ``os.path.realpath`` or the walk from ``/`` gives, and where
the kernel cannot be sure the answer is None (the caller then resolves the portable way)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from artifactize.adapters.posix.canonical import canonical_directory_path, canonical_path
from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.adapters.posix.no_links_open import WALKS_FIRST, open_directory_without_links
from artifactize.ports.filesystem import FilesystemError, SymlinkRefused
from tests.support.processes import descriptors_opened_since, open_descriptors

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir() or not getattr(os, "O_PATH", 0),
    reason="the kernel's names come from /proc with O_PATH (Linux)",
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``real/sub/tool`` (a file), ``alias`` -> ``real``, ``tool-link`` -> ``real/sub/tool``."""
    root = Path(os.path.realpath(tmp_path))
    (root / "real" / "sub").mkdir(parents=True)
    (root / "real" / "sub" / "tool").write_text("#!/bin/sh\n")
    (root / "alias").symlink_to(root / "real")
    (root / "tool-link").symlink_to(root / "real" / "sub" / "tool")
    return root


def test_a_folder_reached_through_a_link_has_its_real_name(tree: Path) -> None:
    for path in (tree / "alias" / "sub", tree / "real" / "sub", tree / "alias"):
        assert canonical_directory_path(str(path)) == os.path.realpath(path)


def test_a_file_reached_through_links_has_its_real_name(tree: Path) -> None:
    for path in (tree / "tool-link", tree / "alias" / "sub" / "tool"):
        assert canonical_path(str(path)) == os.path.realpath(path)


def test_a_relative_path_is_named_from_the_working_folder(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree / "alias")
    assert canonical_directory_path("sub") == str(tree / "real" / "sub")


def test_no_answer_where_the_kernel_cannot_name_a_folder(tree: Path) -> None:
    before = open_descriptors()
    assert canonical_directory_path(str(tree / "missing")) is None
    assert canonical_directory_path(str(tree / "real" / "sub" / "tool")) is None  # a file
    assert canonical_directory_path("bad\0path") is None
    assert canonical_path(str(tree / "missing")) is None
    assert descriptors_opened_since(before) == set()


def test_a_name_that_no_longer_leads_to_the_folder_is_no_answer(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name read back is checked (same device and inode): one that names another entry
    (the folder moved or removed meanwhile) is refused, not trusted."""
    other = str(tree / "real")
    monkeypatch.setattr(os, "readlink", lambda _: other)
    assert canonical_directory_path(str(tree / "real" / "sub")) is None


def test_open_root_in_one_open_pins_the_canonical_folder(tree: Path) -> None:
    before = open_descriptors()
    with PosixFilesystem().open_root(str(tree / "real" / "sub")) as handle:
        assert handle.physical_path == str(tree / "real" / "sub")
        assert [entry.name for entry in handle.entries()] == ["tool"]
    assert descriptors_opened_since(before) == set()


def test_open_root_still_refuses_a_path_through_a_link(tree: Path) -> None:
    """The single open follows ``alias``; the kernel then names ``real/sub``, not the path
    asked for, so the walk from ``/`` decides, and refuses the link."""
    before = open_descriptors()
    with pytest.raises(SymlinkRefused):
        PosixFilesystem().open_root(str(tree / "alias" / "sub"))
    assert descriptors_opened_since(before) == set()


_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@pytest.fixture
def single_open(tmp_path: Path) -> bool:
    """Past the walks a process makes first: whether ``openat2`` is bound (else every
    ``open_root`` walks)."""
    for _ in range(WALKS_FIRST + 1):
        fd = open_directory_without_links(str(os.path.realpath(tmp_path)), _FLAGS)
        if fd is not None:
            os.close(fd)
            return True
    return False


def _other_mount_namespace(folder: Path) -> subprocess.Popen[bytes]:
    """A process in a mount namespace of its own where ``folder`` is a fresh tmpfs holding
    ``sub/deep/planted``; it prints ``ready`` once it is, then waits for its stdin to close."""
    script = (
        f"mount -t tmpfs none {folder} && mkdir -p {folder}/sub/deep && "
        f": > {folder}/sub/deep/planted && echo ready && exec cat >/dev/null"
    )
    unshare = ["unshare", "--mount", "--propagation", "private"]
    if os.getuid() != 0:
        unshare[1:1] = ["--user", "--map-root-user"]
    return subprocess.Popen(
        [*unshare, "sh", "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


@pytest.mark.process
def test_open_root_refuses_a_link_into_another_mount_namespace(
    tmp_path: Path, single_open: bool
) -> None:
    """``repo/sub`` swapped for a link through ``/proc/PID/root`` into another mount
    namespace, where the same path exists: the kernel names the folder opened there by its
    path in *that* namespace, which is exactly the path asked for, so a name check passes
    while the folder is not ours. The link must be refused (the walk's rule: no link
    anywhere on the way)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1)")
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    repo.mkdir()
    other = _other_mount_namespace(repo)
    assert other.stdout is not None and other.stdin is not None
    try:
        if other.stdout.readline() != b"ready\n":
            pytest.skip("no mount namespace can be made here (unshare refused)")
        (repo / "sub").symlink_to(f"/proc/{other.pid}/root{repo}/sub")
        assert (repo / "sub" / "deep" / "planted").exists()  # the other namespace's file
        before = open_descriptors()
        with pytest.raises(SymlinkRefused):
            PosixFilesystem().open_root(str(repo / "sub" / "deep"))
        assert descriptors_opened_since(before) == set()
    finally:
        other.stdin.close()
        other.wait(timeout=10)


def test_the_single_open_is_taken_for_a_plain_folder_and_never_through_a_link(
    tree: Path, single_open: bool
) -> None:
    """Past the first walks, ``openat2`` opens a canonical folder in one call (the fast path
    is really taken where the kernel has it) and refuses a path with a link on the way,
    leaving it to the walk."""
    if not single_open:
        pytest.skip("openat2 is not to be had here (the walk decides every time)")
    flags = _FLAGS
    fd = open_directory_without_links(str(tree / "real" / "sub"), flags)
    assert fd is not None
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(tree / "real" / "sub"))
    finally:
        os.close(fd)
    assert open_directory_without_links(str(tree / "alias" / "sub"), flags) is None
    assert open_directory_without_links(str(tree / "missing"), flags) is None
    assert open_directory_without_links("bad\0path", flags) is None


@pytest.mark.parametrize(
    "name",
    ["new\nline", os.fsdecode(b"not-utf8-\xff\xfe"), "gone (deleted)", " (deleted)", "x" * 255],
)
def test_hostile_folder_names_read_back_as_realpath_gives_them(tmp_path: Path, name: str) -> None:
    """The kernel's name is taken as bytes, not parsed: a newline, bytes that are not UTF-8
    (kept as surrogates, as ``realpath`` keeps them), a name that ends as a removed folder's
    name reads back, or the longest name, all come back as ``realpath`` gives them."""
    folder = Path(os.path.realpath(tmp_path)) / name
    folder.mkdir()
    (folder / "sub").mkdir()
    for path in (folder, folder / "sub"):
        assert canonical_directory_path(str(path)) == os.path.realpath(path)
        assert PosixFilesystem().canonical_directory(str(path)) == str(path)
        with PosixFilesystem().open_root(str(path)) as handle:
            assert handle.physical_path == str(path)


def test_a_removed_folder_has_no_name_even_where_its_deleted_name_exists(tmp_path: Path) -> None:
    """A folder removed while open reads back from ``/proc`` as ``… (deleted)``; a folder
    planted under that very name is another inode, so the kernel's name is refused and the
    path (``/proc/self/fd/N`` of the removed folder) resolves as ``realpath`` would."""
    root = Path(os.path.realpath(tmp_path))
    (root / "gone").mkdir()
    fd = os.open(root / "gone", os.O_RDONLY | os.O_DIRECTORY)
    try:
        (root / "gone").rmdir()
        (root / "gone (deleted)").mkdir()  # the name the kernel gives the removed folder
        assert canonical_directory_path(f"/proc/self/fd/{fd}") is None
    finally:
        os.close(fd)


def test_a_folder_deeper_than_path_max_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past PATH_MAX the kernel cannot name the folder (``ENAMETOOLONG``): no answer, and
    ``canonical_directory`` falls back to ``realpath`` and refuses the path with the system's
    words, as before."""
    monkeypatch.chdir(os.path.realpath(tmp_path))
    while len(os.getcwd()) < 4200:
        os.mkdir("d" * 200)
        os.chdir("d" * 200)
    os.mkdir("leaf")
    assert canonical_directory_path("leaf") is None
    with pytest.raises(FilesystemError, match="File name too long"):
        PosixFilesystem().canonical_directory("leaf")


@pytest.mark.process
def test_canonical_names_refuse_a_folder_of_another_mount_namespace(tmp_path: Path) -> None:
    """Through ``/proc/PID/root`` the kernel names a folder by its path in *its* mount
    namespace; here that path names another folder (device and inode differ), so there is no
    answer and ``realpath`` decides (its answer is the link's text, resolved)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1)")
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    repo.mkdir()
    (repo / "sub" / "deep").mkdir(parents=True)
    other = _other_mount_namespace(repo)
    assert other.stdout is not None and other.stdin is not None
    try:
        if other.stdout.readline() != b"ready\n":
            pytest.skip("no mount namespace can be made here (unshare refused)")
        through = f"/proc/{other.pid}/root{repo}/sub/deep"
        assert (Path(through) / "planted").exists()
        assert canonical_directory_path(through) is None
        assert canonical_directory_path(str(repo / "sub" / "deep")) == str(repo / "sub" / "deep")
    finally:
        other.stdin.close()
        other.wait(timeout=10)


WITHOUT_PROC = """
import os, sys
from artifactize.adapters.posix.canonical import canonical_directory_path, canonical_path
from artifactize.adapters.posix.filesystem import PosixFilesystem
alias, real = sys.argv[1], sys.argv[2]
assert not os.path.exists("/proc/self/fd")
assert canonical_directory_path(alias) is None and canonical_path(alias) is None
filesystem = PosixFilesystem()
assert filesystem.canonical_directory(alias) == real
for _ in range(20):  # past the first walks: openat2 needs no /proc either
    with filesystem.open_root(real) as handle:
        assert handle.entries()[0].name == "tool"
print("ok")
"""


@pytest.mark.process
def test_without_proc_the_names_come_from_realpath(tree: Path) -> None:
    """``/proc`` hidden (an empty tmpfs over it, in a mount namespace of its own): the
    kernel's names give no answer, ``canonical_directory`` resolves with ``realpath`` and
    ``open_root`` still pins the folder."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1)")
    unshare = ["unshare", "--mount", "--propagation", "private"]
    if os.getuid() != 0:
        unshare[1:1] = ["--user", "--map-root-user"]
    script = 'mount -t tmpfs none /proc && exec "$0" -c "$1" "$2" "$3"'
    repo = str(Path(__file__).resolve().parents[2])
    paths = [str(tree / "alias" / "sub"), str(tree / "real" / "sub")]
    done = subprocess.run(
        [*unshare, "sh", "-c", script, sys.executable, WITHOUT_PROC, *paths],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=repo,
        check=False,
    )
    if done.stderr.startswith(("unshare:", "mount:")):  # not Python's: no namespace here
        pytest.skip(f"no mount namespace can be made here: {done.stderr.strip()}")
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr
