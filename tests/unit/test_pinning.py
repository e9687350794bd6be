"""Execution-path pinning (seed 000, "When an Agent review starts…"), on the in-memory fake.

A file pins to the SHA-256 of its bytes; a directory to a SHA-256 over each file's or
symlink's relative path and digest (links contribute their target text, never followed).
Directories are only traversed: they add no digest and do not count, so empty directories
do not matter. At most 10,000 file/symlink entries are retained; once that many are, any
further entry fails. More than 1 GiB of file bytes, a missing path or a special file fails
with ``PinningError`` (``PREPARATION_FAILED``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from artifactize.domain.project.workspace import Workspace
from artifactize.domain.tools import pinning
from artifactize.domain.tools.pinning import (
    PIN_ENTRIES_MAX,
    PIN_FILE_BYTES_MAX,
    Pinner,
    PinningError,
    pin_execution_paths,
)
from artifactize.domain.use_cases.config_service import ConfigService
from tests.fakes.filesystem import MemoryFilesystem, Node, Special, Symlink
from tests.support.processes import nothing_left_behind as nothing_left_behind_in

ROOT_DECL = b'name = "a"\n'


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with nothing_left_behind_in(tmp_path_factory):
        yield


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def workspace(tree: dict[str, Node], declaration: bytes = ROOT_DECL) -> tuple[Workspace, Any]:
    full: dict[str, Node] = {"index.artf": declaration, **tree}
    filesystem = MemoryFilesystem({"/repo": full})
    return ConfigService(filesystem).load("/repo"), filesystem


def pin(tree: dict[str, Node], path: str) -> str:
    ws, fs = workspace(tree)
    return Pinner(ws, fs).pin(path)


def expected_directory_digest(records: Mapping[str, tuple[str, bytes]]) -> str:
    """The documented layout: sorted by UTF-8 path, ``path NUL kind NUL raw-digest``."""
    digest = hashlib.sha256()
    for path in sorted(records, key=lambda p: p.encode("utf-8")):
        kind, data = records[path]
        digest.update(
            path.encode("utf-8") + b"\0" + kind.encode() + b"\0" + hashlib.sha256(data).digest()
        )
    return digest.hexdigest()


def test_constants() -> None:
    assert PIN_ENTRIES_MAX == 10_000
    assert PIN_FILE_BYTES_MAX == 1024 * 1024 * 1024
    assert PinningError.code == "PREPARATION_FAILED"


# --- files ------------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"#!/bin/sh\necho hi\n", bytes(range(256)) * 100])
def test_a_file_pins_to_the_sha256_of_its_bytes(data: bytes) -> None:
    assert pin({"tools": {"harness": data}}, "tools/harness") == sha(data)


def test_a_top_level_file() -> None:
    assert pin({"rules.json": b"{}"}, "rules.json") == sha(b"{}")


# --- directories ------------------------------------------------------------------------------


def base_bin(**changes: Node | None) -> dict[str, Node]:
    """A fresh ``bin`` tree, with top-level entries replaced (``None`` removes one)."""
    bin_tree: dict[str, Node] = {
        "run": b"run-bytes",
        "lib": {"helper.py": b"print(1)\n", "deep": {"x": b"x"}},
        "current": Symlink("lib/helper.py"),
    }
    for name, node in changes.items():
        if node is None:
            bin_tree.pop(name)
        else:
            bin_tree[name] = node
    return {"bin": bin_tree}


BASE = base_bin()
tree_with = base_bin


def test_directory_digest_follows_the_documented_layout() -> None:
    assert pin(BASE, "bin") == expected_directory_digest(
        {
            "run": ("file", b"run-bytes"),
            "lib/helper.py": ("file", b"print(1)\n"),
            "lib/deep/x": ("file", b"x"),
            "current": ("symlink", b"lib/helper.py"),
        }
    )


def test_directory_pin_is_stable() -> None:
    first = pin(BASE, "bin")
    assert pin(BASE, "bin") == first
    assert pin(tree_with(), "bin") == first
    reordered: dict[str, Node] = {
        "bin": {
            "current": Symlink("lib/helper.py"),
            "lib": {"deep": {"x": b"x"}, "helper.py": b"print(1)\n"},
            "run": b"run-bytes",
        }
    }
    assert pin(reordered, "bin") == first


@pytest.mark.parametrize(
    "changed",
    [
        tree_with(run=b"run-bytez"),
        tree_with(run=b"run-bytes\n"),
        tree_with(run=None, ran=b"run-bytes"),
        tree_with(current=Symlink("lib/other.py")),
        tree_with(current=None, current2=Symlink("lib/helper.py")),
        tree_with(current=b"lib/helper.py"),
        tree_with(extra=b""),
        tree_with(lib={"helper.py": b"print(1)\n", "deep": {"y": b"x"}}),
        tree_with(lib={"helper.py": b"print(1)\n", "deep": {}, "x": b"x"}),
        tree_with(lib={"helper.py": b"print(2)\n", "deep": {"x": b"x"}}),
    ],
    ids=[
        "file-byte",
        "file-appended",
        "file-renamed",
        "link-target",
        "link-renamed",
        "link-became-file",
        "file-added",
        "nested-renamed",
        "moved-up",
        "nested-byte",
    ],
)
def test_directory_pin_changes_with_any_byte_name_or_link_target(
    changed: dict[str, Node],
) -> None:
    assert pin(changed, "bin") != pin(BASE, "bin")


@pytest.mark.parametrize(
    "changed",
    [
        tree_with(empty={}),
        tree_with(nested={"empty": {}, "also": {"deeper": {}}}),
        tree_with(lib={"helper.py": b"print(1)\n", "deep": {"x": b"x", "void": {}}}),
    ],
    ids=["empty-dir", "nested-empty-dirs", "empty-dir-deep"],
)
def test_empty_directories_do_not_count(changed: dict[str, Node]) -> None:
    assert pin(changed, "bin") == pin(BASE, "bin")


def test_an_empty_directory_pins_to_the_empty_digest() -> None:
    assert pin({"d": {"e": {}}}, "d") == hashlib.sha256(b"").hexdigest()


def test_symlinks_are_not_followed() -> None:
    """Only the link text counts: a dangling link, a link out of the workspace and a change
    of what a link points to are all fine and (the latter) invisible."""
    tree: dict[str, Node] = {
        "d": {"dangling": Symlink("missing"), "out": Symlink("/etc/passwd"), "in": Symlink("f")},
        "f": b"one",
    }
    before = pin(tree, "d")
    tree["f"] = b"two"
    assert pin(tree, "d") == before
    assert before == expected_directory_digest(
        {
            "dangling": ("symlink", b"missing"),
            "out": ("symlink", b"/etc/passwd"),
            "in": ("symlink", b"f"),
        }
    )


def test_the_digest_is_not_a_file_hash_of_the_same_bytes() -> None:
    assert pin({"d": {"f": b"x"}}, "d") != sha(b"x")


# --- failures ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tree", "path"),
    [
        ({}, "missing"),
        ({"d": {}}, "d/missing"),
        ({"f": b"x"}, "f/below"),
        ({"fifo": Special()}, "fifo"),
        ({"d": {"ok": b"x", "sock": Special()}}, "d"),
        ({"d": {"deep": {"sock": Special()}}}, "d"),
        ({"link": Symlink("f"), "f": b"x"}, "link"),
        ({"linkdir": Symlink("d"), "d": {"f": b"x"}}, "linkdir/f"),
        ({"linkdir": Symlink("d"), "d": {"f": b"x"}}, "linkdir"),
    ],
    ids=[
        "missing",
        "missing-below",
        "file-as-directory",
        "special",
        "special-inside",
        "special-deep",
        "symlink-path",
        "symlinked-component",
        "symlinked-directory",
    ],
)
def test_paths_that_cannot_be_pinned(tree: dict[str, Node], path: str) -> None:
    with pytest.raises(PinningError) as info:
        pin(tree, path)
    assert info.value.code == "PREPARATION_FAILED"


@pytest.mark.parametrize("path", ["", "/abs", "../up", "a/../b", "./a", "a//b", "a\\b", "c:x"])
def test_unsafe_paths_fail(path: str) -> None:
    with pytest.raises(PinningError):
        pin({"a": b"x", "b": b"y"}, path)


# --- the entry budget -------------------------------------------------------------------------


def files(count: int, prefix: str = "f") -> dict[str, Node]:
    return {f"{prefix}{i:05d}": b"" for i in range(count)}


def test_10000_retained_entries_pass() -> None:
    assert pin({"d": files(PIN_ENTRIES_MAX)}, "d")


def test_the_next_file_fails() -> None:
    with pytest.raises(PinningError):
        pin({"d": files(PIN_ENTRIES_MAX + 1)}, "d")


def test_the_next_symlink_fails() -> None:
    tree: dict[str, Node] = {"d": {**files(PIN_ENTRIES_MAX), "zz": Symlink("x")}}
    with pytest.raises(PinningError):
        pin(tree, "d")


def test_symlinks_count_like_files() -> None:
    tree: dict[str, Node] = {"d": {f"l{i:05d}": Symlink("t") for i in range(PIN_ENTRIES_MAX)}}
    assert pin(tree, "d")
    tree["d"]["zz"] = b""  # type: ignore[index]
    with pytest.raises(PinningError):
        pin(tree, "d")


def test_directories_do_not_count() -> None:
    """10,000 files spread over many directories, with empty ones visited first, pass."""
    spread: dict[str, Node] = {f"dir{i:03d}": files(100) for i in range(100)}
    spread.update({f"a-empty{i:03d}": {} for i in range(50)})  # sorted before the files
    assert pin({"d": spread}, "d")


def test_an_empty_directory_after_the_last_retained_entry_fails() -> None:
    """After 10,000 retained entries, encountering any further entry fails, a directory too."""
    with pytest.raises(PinningError):
        pin({"d": {**files(PIN_ENTRIES_MAX), "zz-empty": {}}}, "d")


def test_an_empty_directory_before_the_limit_is_free() -> None:
    assert pin({"d": {"00-empty": {}, **files(PIN_ENTRIES_MAX)}}, "d")


def test_the_budget_is_shared_by_every_path_of_a_review() -> None:
    tree: dict[str, Node] = {"a1": files(6000), "a2": files(4000), "extra": b"x"}
    ws, fs = workspace(tree)
    pinner = Pinner(ws, fs)
    pinner.pin("a1")
    pinner.pin("a2")
    with pytest.raises(PinningError):
        pinner.pin("extra")  # a file path counts as one entry too


def test_a_file_path_counts_as_one_entry() -> None:
    tree: dict[str, Node] = {"d": files(PIN_ENTRIES_MAX - 1), "f": b"x"}
    ws, fs = workspace(tree)
    pinner = Pinner(ws, fs)
    pinner.pin("d")
    assert pinner.pin("f") == sha(b"x")


# --- the byte budget --------------------------------------------------------------------------


def test_file_bytes_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinning, "PIN_FILE_BYTES_MAX", 100)
    assert pin({"f": b"x" * 100}, "f") == sha(b"x" * 100)
    with pytest.raises(PinningError):
        pin({"f": b"x" * 101}, "f")
    assert pin({"d": {"a": b"x" * 60, "b": b"y" * 40}}, "d")
    with pytest.raises(PinningError):
        pin({"d": {"a": b"x" * 60, "b": b"y" * 41}}, "d")


def test_file_bytes_are_counted_across_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinning, "PIN_FILE_BYTES_MAX", 100)
    ws, fs = workspace({"a": b"x" * 70, "b": b"y" * 30, "c": b"z"})
    pinner = Pinner(ws, fs)
    pinner.pin("a")
    pinner.pin("b")
    with pytest.raises(PinningError):
        pinner.pin("c")


def test_symlink_targets_are_not_file_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pinning, "PIN_FILE_BYTES_MAX", 10)
    assert pin({"d": {"l": Symlink("t" * 50)}}, "d")


# --- provenance keys --------------------------------------------------------------------------

DECLARATION = b"""name = "app"

[views.agent_tools.coverage]
description = "Coverage"
command = "tools/cover"
args = []
protocol = "json"
execution_paths = ["tools/cover", "rules"]

[views.agent_tools.plain]
description = "No paths"
command = "tools/cover"
args = []
protocol = "plain"

[views.agent_tools.read]
builtin = "read"

[views.agent_sessions.app]
start = { command = "tools/harness", args = ["start"], execution_paths = ["tools/harness"] }
stop = { command = "tools/harness", args = ["stop"], execution_paths = ["tools/harness", "rules"] }

[views.agent_sessions.quiet]
start = { command = "tools/harness", args = ["start"] }
stop = { command = "tools/harness", args = ["stop"] }
"""


def test_pins_by_registered_tool_and_session_keys() -> None:
    tree: dict[str, Node] = {
        "tools": {"cover": b"cover-bytes", "harness": b"harness-bytes"},
        "rules": {"r.json": b"{}"},
    }
    ws, fs = workspace(tree, DECLARATION)
    pins = pin_execution_paths(ws, fs, ("app",))
    rules = expected_directory_digest({"r.json": ("file", b"{}")})
    assert pins == {
        "coverage_app": {"tools/cover": sha(b"cover-bytes"), "rules": rules},
        "app_app.start": {"tools/harness": sha(b"harness-bytes")},
        "app_app.stop": {"tools/harness": sha(b"harness-bytes"), "rules": rules},
    }
    assert list(pins["coverage_app"]) == ["tools/cover", "rules"], "declared order"


def test_artifacts_outside_the_scope_are_not_pinned() -> None:
    tree: dict[str, Node] = {"tools": {"cover": b"c", "harness": b"h"}, "rules": {}}
    ws, fs = workspace(tree, DECLARATION)
    assert pin_execution_paths(ws, fs, ()) == {}


def test_a_missing_execution_path_fails_the_review() -> None:
    tree: dict[str, Node] = {"tools": {"cover": b"c"}, "rules": {}}
    ws, fs = workspace(tree, DECLARATION)
    with pytest.raises(PinningError):
        pin_execution_paths(ws, fs, ("app",))


def test_pinning_reads_without_writing_or_leaking_handles() -> None:
    ws, fs = workspace(BASE)
    Pinner(ws, fs).pin("bin")
    assert fs.writes == []
    assert fs.open_handles == 0
    with pytest.raises(PinningError):
        Pinner(ws, fs).pin("bin/missing")
    assert fs.open_handles == 0
