"""Fingerprints (reference/declarations.md §3.1) on the in-memory filesystem.

Artifactsum: which files (named paths, the walk, child folders, ``*.artf``, built-in,
declared and ``.gitignore`` ignores), the hash layout, the manifest, the errors and every
limit; then the dispatch over the declared form and the script output rule.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from types import TracebackType

import pytest

from artifactize.domain.declarations.model import ScriptFingerprint
from artifactize.domain.project.workspace import Artifact, Workspace
from artifactize.domain.reviews.reuse.artifactsum import (
    ARTIFACTSUM_DEPTH_MAX,
    ARTIFACTSUM_ENTRIES_MAX,
    ARTIFACTSUM_FILE_BYTES_MAX,
    DEFAULT_LIMITS,
    GITIGNORE_BYTES_MAX,
    MANIFEST_BYTES_MAX,
    ArtifactsumLimits,
    GitignoreMemo,
    OpenFolders,
    _manifest_bytes_at_most,
    build_manifest,
)
from artifactize.domain.reviews.reuse.canonical_json import canonical_json
from artifactize.domain.reviews.reuse.fingerprints import (
    SCRIPT_OUTPUT_MAX_CHARS,
    ArtifactsumResult,
    FingerprintError,
    compute_artifactsum,
    compute_fingerprint,
    script_output_value,
)
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.ports.filesystem import DirectoryHandle, DirEntry, FileHandle, FileIdentity
from tests.fakes.filesystem import MemoryFilesystem, Node, Special, Symlink

GIB = 1024 * 1024 * 1024


def decl(name: str, body: str = "") -> bytes:
    return f'name = "{name}"\n{body}'.encode()


def load(tree: Mapping[str, Node]) -> tuple[Workspace, MemoryFilesystem]:
    filesystem = MemoryFilesystem({"/repo": tree})
    return ConfigService(filesystem).load("/repo"), filesystem


def artifactsum(
    tree: Mapping[str, Node], name: str = "a", limits: ArtifactsumLimits = DEFAULT_LIMITS
) -> ArtifactsumResult:
    workspace, filesystem = load(tree)
    result = compute_artifactsum(workspace, name, filesystem, limits=limits)
    assert filesystem.open_handles == 0
    assert filesystem.writes == []
    return result


def failure(
    tree: Mapping[str, Node], name: str = "a", limits: ArtifactsumLimits = DEFAULT_LIMITS
) -> str:
    workspace, filesystem = load(tree)
    with pytest.raises(FingerprintError) as caught:
        compute_artifactsum(workspace, name, filesystem, limits=limits)
    assert filesystem.open_handles == 0
    return caught.value.message


def expected(files: Mapping[str, bytes]) -> str:
    """The documented layout, by hand: sorted UTF-8 paths, ``path NUL sha256(bytes)``."""
    data = b"".join(
        path.encode() + b"\x00" + hashlib.sha256(files[path]).digest()
        for path in sorted(files, key=str.encode)
    )
    return "artifactsum:" + hashlib.sha256(data).hexdigest()


def assert_covers(
    tree: Mapping[str, Node], files: Mapping[str, bytes], name: str = "a"
) -> ArtifactsumResult:
    """The fingerprint is over exactly ``files`` (owner-relative path -> bytes)."""
    result = artifactsum(tree, name)
    assert sorted(result.manifest["files"]) == sorted(files)
    assert result.value == expected(files)
    return result


def folder(
    body: str = "", entries: Mapping[str, Node] | None = None, /, **named: Node
) -> dict[str, Node]:
    """A root folder Artifact ``a`` declared with ``body``, holding the given entries."""
    return {"index.artf": decl("a", body), **(entries or {}), **named}


# --- the hash ---------------------------------------------------------------------------------


def test_golden_value_follows_the_documented_byte_layout() -> None:
    tree = folder("", {"b.txt": b"bee", "a": {"z.md": b"zed"}, "a-b": b"dash", "a.b": b"dot"})
    # "/" (0x2f) sorts after "-" (0x2d) and "." (0x2e): the order is by path, not by walk.
    digest = hashlib.sha256()
    for path, data in (("a-b", b"dash"), ("a.b", b"dot"), ("a/z.md", b"zed"), ("b.txt", b"bee")):
        digest.update(path.encode() + b"\x00" + hashlib.sha256(data).digest())
    result = artifactsum(tree)
    assert result.value == "artifactsum:" + digest.hexdigest()
    assert result.value == expected(
        {"a-b": b"dash", "a.b": b"dot", "a/z.md": b"zed", "b.txt": b"bee"}
    )


def test_an_empty_folder_hashes_nothing() -> None:
    assert artifactsum(folder()).value == "artifactsum:" + hashlib.sha256(b"").hexdigest()


def test_the_same_tree_gives_the_same_value() -> None:
    assert artifactsum(folder(x=b"1", d={"y": b"2"})) == artifactsum(folder(x=b"1", d={"y": b"2"}))


@pytest.mark.parametrize(
    "changed",
    [
        folder(x=b"2", d={"y": b"2"}),  # one byte
        folder(x=b"1", d={"y": b"2", "z": b""}),  # an empty file added
        folder(X=b"1", d={"y": b"2"}),  # a rename
        folder(x=b"1", e={"y": b"2"}),  # a folder rename
        folder(x=b"12", d={"y": b""}),  # bytes moved between files
    ],
)
def test_any_content_or_name_change_changes_the_value(changed: dict[str, Node]) -> None:
    assert artifactsum(changed).value != artifactsum(folder(x=b"1", d={"y": b"2"})).value


def test_an_empty_folder_does_not_count() -> None:
    assert artifactsum(folder(x=b"1", empty={})).value == artifactsum(folder(x=b"1")).value


# --- the manifest -----------------------------------------------------------------------------


def test_manifest_lists_the_first_16_hex_of_each_file_digest() -> None:
    result = artifactsum(folder(x=b"1", d={"y": b"2"}))
    assert result.manifest == {
        "inputs": result.value,
        "files": {
            "d/y": hashlib.sha256(b"2").hexdigest()[:16],
            "x": hashlib.sha256(b"1").hexdigest()[:16],
        },
    }


def test_manifest_keeps_files_at_64_kib_and_drops_them_one_byte_past() -> None:
    assert MANIFEST_BYTES_MAX == 64 * 1024
    value = "artifactsum:" + "0" * 64
    digests = {"p": hashlib.sha256(b"").digest()}
    base = len(canonical_json(build_manifest(value, digests)))
    fill = MANIFEST_BYTES_MAX - base
    at_limit = {"p" + "x" * fill: digests["p"]}
    manifest = build_manifest(value, at_limit)
    assert len(canonical_json(manifest)) == MANIFEST_BYTES_MAX
    assert "files" in manifest
    assert build_manifest(value, {"p" + "x" * (fill + 1): digests["p"]}) == {"inputs": value}


def test_a_large_fingerprint_keeps_its_value_but_drops_the_file_list() -> None:
    files = {f"file-{i:05d}-{'x' * 40}": b"" for i in range(1200)}
    result = artifactsum(folder(d=dict(files)))
    assert result.manifest == {"inputs": result.value}
    assert result.value == expected({f"d/{name}": b"" for name in files})


# --- which files: the walk -------------------------------------------------------------------


def test_declarations_are_skipped_but_sidecar_targets_are_included() -> None:
    tree = folder(
        "", {"x.md": b"x", "x.md.artf": decl("x"), "d": {"note": b"n", "note.artf": decl("n")}}
    )
    assert_covers(tree, {"x.md": b"x", "d/note": b"n"})


def test_a_folder_named_like_a_declaration_is_walked() -> None:
    assert_covers(folder("", {"odd.artf": {"y": b"y"}}), {"odd.artf/y": b"y"})


def test_child_artifact_folders_are_skipped() -> None:
    tree = folder(
        plain={"p": b"p"},
        child={"index.artf": decl("c"), "c.txt": b"c"},
        deep={"er": {"index.artf": decl("d"), "d.txt": b"d"}, "keep": b"k"},
    )
    workspace, _ = load(tree)
    assert dict(workspace.artifact("a").children) == {"child": "c", "deep/er": "d"}
    assert_covers(tree, {"plain/p": b"p", "deep/keep": b"k"})
    assert_covers(tree, {"c.txt": b"c"}, name="c")


def test_a_child_artifact_walks_its_own_folder_with_owner_relative_paths() -> None:
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        "docs": {"index.artf": decl("docs"), "guide": {"a.md": b"a"}, "b.md": b"b"},
    }
    assert_covers(tree, {"guide/a.md": b"a", "b.md": b"b"}, name="docs")


@pytest.mark.parametrize(
    "entries",
    [
        {".git": {"HEAD": b"ref"}},
        {".git": b"gitdir: elsewhere"},
        {"__pycache__": {"m.cpython-311.pyc": b"c"}},
        {"m.pyc": b"c", "d": {"n.pyc": b"c"}},
        {"target": {"debug": {"bin": b"b"}}},
        {"node_modules": {"x": {"y.js": b"j"}}},
        {"d": {"node_modules": {"y.js": b"j"}, "target": {}}},
    ],
)
def test_builtin_ignores(entries: dict[str, Node]) -> None:
    assert_covers(folder(keep=b"k", **entries), {"keep": b"k"})


def test_folder_only_builtins_do_not_ignore_files_of_that_name() -> None:
    assert_covers(folder(target=b"t", node_modules=b"n"), {"target": b"t", "node_modules": b"n"})


def test_declared_ignore_globs_are_relative_to_the_owner() -> None:
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        "a": {
            "index.artf": decl(
                "a", 'fingerprint = { ignore = ["*.tmp", "/build", "docs/drafts/"] }'
            ),
            "x.tmp": b"",
            "build": {"o": b""},
            "sub": {"build": {"o": b"o"}, "y.tmp": b""},
            "docs": {"drafts": {"d": b""}, "final.md": b"f"},
        },
    }
    assert_covers(tree, {"sub/build/o": b"o", "docs/final.md": b"f"})


def test_declared_ignores_always_exclude_even_against_a_gitignore_negation() -> None:
    tree = folder(
        'fingerprint = { ignore = ["*.log"] }',
        {".gitignore": b"!keep.log\n", "keep.log": b"k", "x": b"x"},
    )
    assert_covers(tree, {".gitignore": b"!keep.log\n", "x": b"x"})


def test_gitignore_files_are_themselves_fingerprinted() -> None:
    assert_covers(folder("", {".gitignore": b"*.log\n", "a.log": b""}), {".gitignore": b"*.log\n"})


def test_a_root_gitignore_applies_to_an_artifact_below() -> None:
    tree: dict[str, Node] = {
        ".gitignore": b"*.log\n/sub/only-here\n",
        "index.artf": decl("root"),
        "sub": {"index.artf": decl("s"), "a.log": b"", "only-here": b"", "keep": b"k"},
    }
    assert_covers(tree, {"keep": b"k"}, name="s")


def test_the_nearest_gitignore_wins_and_may_negate() -> None:
    tree = folder(
        "",
        {
            ".gitignore": b"*.log\n!important\n",
            "a.log": b"",
            "d": {
                ".gitignore": b"!keep.log\nimportant\n",
                "keep.log": b"k",
                "drop.log": b"",
                "important": b"",
            },
            "important": b"i",
        },
    )
    assert_covers(
        tree,
        {
            ".gitignore": b"*.log\n!important\n",
            "d/.gitignore": b"!keep.log\nimportant\n",
            "d/keep.log": b"k",
            "important": b"i",
        },
    )


def test_a_gitignore_applies_only_below_its_folder() -> None:
    tree = folder(d={".gitignore": b"x\n", "x": b""}, x=b"x")
    assert_covers(tree, {"d/.gitignore": b"x\n", "x": b"x"})


def test_a_negation_cannot_re_include_a_file_of_an_excluded_folder() -> None:
    tree = folder("", {".gitignore": b"out/\n!out/keep\n", "out": {"keep": b"k"}})
    assert_covers(tree, {".gitignore": b"out/\n!out/keep\n"})


def test_a_gitignore_below_an_excluded_folder_is_never_read() -> None:
    tree = folder(
        "", {".gitignore": b"out/\n", "out": {".gitignore": b"x" * (GITIGNORE_BYTES_MAX + 1)}}
    )
    assert_covers(tree, {".gitignore": b"out/\n"})


def test_an_ancestor_gitignore_that_excludes_the_artifact_folder_hides_nothing_in_it() -> None:
    """The Artifact's own folder is never matched; what is inside is matched on its own path."""
    tree: dict[str, Node] = {
        ".gitignore": b"generated/\n",
        "index.artf": decl("root"),
        "generated": {"index.artf": decl("g"), "page.html": b"p"},
    }
    assert_covers(tree, {"page.html": b"p"}, name="g")


# --- which files: named paths -----------------------------------------------------------------


def test_named_paths_narrow_the_fingerprint() -> None:
    tree = folder(
        'fingerprint = { files = ["pages", "openapi.yaml"] }',
        pages={"p.md": b"p", "sub": {"q.md": b"q"}},
        **{"openapi.yaml": b"o", "other.md": b""},
    )
    assert_covers(tree, {"pages/p.md": b"p", "pages/sub/q.md": b"q", "openapi.yaml": b"o"})


def test_overlapping_named_paths_count_each_file_once() -> None:
    tree = folder('fingerprint = { files = [".", "d", "d/x"] }', d={"x": b"x"}, y=b"y")
    assert_covers(tree, {"d/x": b"x", "y": b"y"})


def test_explicitly_named_files_are_never_ignored() -> None:
    tree = folder(
        'fingerprint = { files = ["a.log", "m.pyc", "d/b.tmp"], ignore = ["*.tmp"] }',
        {".gitignore": b"*.log\nd/\n", "a.log": b"a", "m.pyc": b"m", "d": {"b.tmp": b"b"}},
    )
    assert_covers(tree, {"a.log": b"a", "m.pyc": b"m", "d/b.tmp": b"b"})


def test_a_named_folder_is_walked_even_when_an_ignore_rule_excludes_it() -> None:
    tree = folder(
        'fingerprint = { files = ["build"] }',
        {".gitignore": b"build/\n*.o\n", "build": {"app": b"a", "x.o": b""}},
    )
    assert_covers(tree, {"build/app": b"a"})


def test_gitignores_between_the_owner_and_a_named_folder_apply() -> None:
    tree = folder(
        'fingerprint = { files = ["a/b"] }',
        a={".gitignore": b"*.tmp\n", "b": {"x.tmp": b"", "y": b"y"}, "z": b"z"},
    )
    assert_covers(tree, {"a/b/y": b"y"})


def test_a_file_artifact_fingerprints_only_its_target() -> None:
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        "api": {"diagram.svg": b"<svg/>", "diagram.svg.artf": decl("diagram"), "other": b"o"},
    }
    assert_covers(tree, {"diagram.svg": b"<svg/>"}, name="diagram")


def test_a_file_artifact_never_reads_a_gitignore() -> None:
    tree = {
        ".gitignore": b"#" * (GITIGNORE_BYTES_MAX + 1),
        "f.md": b"f",
        "f.md.artf": decl("f"),
    }
    assert_covers(tree, {"f.md": b"f"}, name="f")


def test_the_folder_fingerprint_includes_a_neighbouring_file_artifact_target() -> None:
    tree = folder("", {"f.md": b"f", "f.md.artf": decl("f")})
    assert_covers(tree, {"f.md": b"f"})


def test_a_missing_named_path_is_an_error() -> None:
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        "d": {"index.artf": decl("a", 'fingerprint = { files = ["x/y"] }')},
    }
    assert failure(tree) == (
        "Artifact `a`: fingerprint path `x/y` does not exist in `d`; "
        "each path of `fingerprint.files` must exist"
    )


def test_a_named_path_through_a_file_is_an_error() -> None:
    message = failure(folder('fingerprint = { files = ["x/y"] }', x=b""))
    assert message == (
        "Artifact `a`: fingerprint path `x/y` does not exist: `x` is a file, not a folder"
    )


@pytest.mark.parametrize(
    ("node", "what"),
    [
        (Symlink("real"), "a symbolic link"),
        (Special(), "a special file (a FIFO, socket or device)"),
    ],
)
def test_a_named_link_or_special_file_is_an_error(node: Node, what: str) -> None:
    message = failure(folder('fingerprint = { files = ["d/x"] }', d={"x": node}, real=b""))
    assert message == (
        f"Artifact `a`: fingerprint path `d/x` is {what}; fingerprints include only "
        "regular files and folders, and links are never followed"
    )


def test_a_named_path_below_a_linked_folder_is_an_error() -> None:
    message = failure(folder('fingerprint = { files = ["l/x"] }', l=Symlink("d"), d={"x": b""}))
    assert "fingerprint path `l` is a symbolic link" in message


def test_a_missing_file_artifact_target_is_an_error() -> None:
    tree: dict[str, Node] = {"f.md": b"f", "f.md.artf": decl("f")}
    workspace, filesystem = load(tree)
    del tree["f.md"]
    with pytest.raises(FingerprintError, match=r"fingerprint path `f\.md` does not exist"):
        compute_artifactsum(workspace, "f", filesystem)
    assert filesystem.open_handles == 0


def test_a_vanished_artifact_folder_is_an_error() -> None:
    tree: dict[str, Node] = {"index.artf": decl("root"), "d": {"index.artf": decl("a")}}
    workspace, filesystem = load(tree)
    del tree["d"]
    with pytest.raises(FingerprintError) as caught:
        compute_artifactsum(workspace, "a", filesystem)
    assert caught.value.message.startswith("Artifact `a`: cannot open its folder `d`: ")
    assert filesystem.open_handles == 0


# --- links, special files, names ----------------------------------------------------------------


def test_a_symlink_in_the_walk_is_an_error() -> None:
    message = failure(folder(x={"link": Symlink("../y")}, y=b""))
    assert message == (
        "Artifact `a`: fingerprint file `x/link` is a symbolic link; ignore it or remove it"
    )


def test_a_linked_folder_in_the_walk_is_an_error() -> None:
    assert "`d` is a symbolic link" in failure(folder(d=Symlink("/etc")))


def test_a_special_file_in_the_walk_is_an_error() -> None:
    assert failure(folder(x={"fifo": Special()})) == (
        "Artifact `a`: fingerprint file `x/fifo` is a special file (a FIFO, socket or device); "
        "ignore it or remove it"
    )


def test_ignored_links_and_special_files_are_fine() -> None:
    tree = folder(
        'fingerprint = { ignore = ["sock"] }',
        {".gitignore": b"link\n", "link": Symlink("x"), "sock": Special(), "x": b"x"},
    )
    assert_covers(tree, {".gitignore": b"link\n", "x": b"x"})


def test_a_linked_gitignore_is_not_followed_and_is_reported_unless_ignored() -> None:
    assert "`.gitignore` is a symbolic link" in failure(folder("", {".gitignore": Symlink("x")}))
    tree = folder('fingerprint = { ignore = [".gitignore"] }', {".gitignore": Symlink("x")})
    assert_covers(tree, {})


def test_a_file_name_that_is_not_utf8_is_an_error_unless_ignored() -> None:
    name = b"caf\xe9".decode("utf-8", "surrogateescape")
    message = failure(folder("", {name: b""}))
    assert message == (
        "Artifact `a`: fingerprint file `caf\\xe9` has a name that is not valid UTF-8; "
        "rename it or ignore it"
    )
    assert_covers(folder("", {".gitignore": b"caf*\n", name: b""}), {".gitignore": b"caf*\n"})


def test_an_artifact_without_artifactsum_is_refused() -> None:
    message = failure(folder("fingerprint = false"))
    assert message == "Artifact `a`: it does not declare an artifactsum fingerprint"


# --- limits -----------------------------------------------------------------------------------


def test_limit_constants() -> None:
    assert ARTIFACTSUM_ENTRIES_MAX == 10_000
    assert ARTIFACTSUM_FILE_BYTES_MAX == GIB
    assert GITIGNORE_BYTES_MAX == 1024 * 1024
    assert ARTIFACTSUM_DEPTH_MAX == 256


def many_files(count: int) -> dict[str, Node]:
    return {f"f{i:05d}": b"" for i in range(count)}


def test_ten_thousand_files_are_fine() -> None:
    result = artifactsum(folder(d=many_files(ARTIFACTSUM_ENTRIES_MAX)))
    assert result.value == expected({f"d/f{i:05d}": b"" for i in range(ARTIFACTSUM_ENTRIES_MAX)})


def test_one_file_more_is_an_error() -> None:
    message = failure(folder(d=many_files(ARTIFACTSUM_ENTRIES_MAX + 1)))
    assert message == (
        f"Artifact `a`: fingerprint covers more than 10,000 files (at `d/f{ARTIFACTSUM_ENTRIES_MAX:05d}`); "
        "ignore some or narrow `fingerprint.files`"
    )


def test_ignored_and_declaration_files_do_not_count() -> None:
    tree = folder(
        d=many_files(ARTIFACTSUM_ENTRIES_MAX - 1),
        **{"x.pyc": b"", "y.md": b"", "y.md.artf": decl("y")},
    )
    files = {f"d/f{i:05d}": b"" for i in range(ARTIFACTSUM_ENTRIES_MAX - 1)}
    assert artifactsum(tree).value == expected({**files, "y.md": b""})


def test_file_bytes_at_the_limit_are_fine_and_one_past_is_an_error() -> None:
    limits = ArtifactsumLimits(file_bytes=10)
    assert artifactsum(folder(x=b"12345", y=b"12345"), limits=limits)
    message = failure(folder(x=b"12345", y=b"123456"), limits=limits)
    assert message == (
        "Artifact `a`: fingerprint covers more than 10 bytes of file bytes (at `y`); "
        "ignore some or narrow `fingerprint.files`"
    )


def test_declaration_bytes_are_not_file_bytes() -> None:
    limits = ArtifactsumLimits(file_bytes=1)
    assert artifactsum(folder(x=b"1"), limits=limits)


def test_gitignore_at_1_mib_is_fine_and_one_byte_more_is_an_error() -> None:
    at_limit = b"#" * GITIGNORE_BYTES_MAX
    assert_covers(folder("", {".gitignore": at_limit}), {".gitignore": at_limit})
    message = failure(folder(d={".gitignore": at_limit + b"#"}))
    assert message == (
        "Artifact `a`: `d/.gitignore` (workspace path) is larger than 1 MiB; "
        "a .gitignore read by a fingerprint is capped at 1 MiB"
    )


def test_an_oversized_gitignore_above_the_artifact_is_an_error() -> None:
    tree: dict[str, Node] = {
        ".gitignore": b"#" * (GITIGNORE_BYTES_MAX + 1),
        "index.artf": decl("root"),
        "d": {"index.artf": decl("a")},
    }
    assert "`.gitignore` (workspace path) is larger than 1 MiB" in failure(tree)


def nested(depth: int) -> Node:
    node: Node = {"leaf": b"l"}
    for _ in range(depth):
        node = {"n": node}
    return node


def test_nesting_at_the_depth_limit_is_fine_and_one_deeper_is_an_error() -> None:
    limits = ArtifactsumLimits(depth=3)
    assert artifactsum(folder(top=nested(2)), limits=limits)  # top/n/n: three folders
    message = failure(folder(top=nested(3)), limits=limits)
    assert message == (
        "Artifact `a`: fingerprint folder `top/n/n/n` is nested more than 3 folders deep; "
        "ignore it or narrow `fingerprint.files`"
    )


# A filesystem whose files report a chosen size, to test the 1 GiB limit without 1 GiB.


class SizedFile:
    def __init__(self, size: int, data: bytes) -> None:
        self._size = size
        self._data = data
        self.reads = 0

    @property
    def size(self) -> int:
        return self._size

    @property
    def identity(self) -> FileIdentity | None:
        return None

    def read(self, max_bytes: int) -> bytes:
        self.reads += 1
        chunk, self._data = self._data[:max_bytes], self._data[max_bytes:]
        return chunk

    def close(self) -> None:
        pass

    def __enter__(self) -> FileHandle:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        pass


class SizedDirectory:
    def __init__(self, inner: DirectoryHandle, files: Mapping[str, SizedFile]) -> None:
        self.inner = inner
        self.files = files

    @property
    def physical_path(self) -> str:
        return self.inner.physical_path

    def entries(self, at_most: int | None = None) -> list[DirEntry]:
        return self.inner.entries(at_most)

    def entry(self, name: str) -> DirEntry:
        return self.inner.entry(name)

    def open_directory(self, name: str) -> DirectoryHandle:
        return SizedDirectory(self.inner.open_directory(name), self.files)

    def identity(self, name: str) -> FileIdentity | None:
        return None

    def folder_identity(self, name: str) -> FileIdentity | None:
        return None

    def opened_identity(self) -> FileIdentity | None:
        return None

    def identities_below(self, paths: Sequence[str], *, folders: bool) -> list[FileIdentity | None]:
        return [None] * len(paths)

    def identity_keys_below(self, paths: Sequence[str], *, folders: bool) -> list[str | None]:
        return [None] * len(paths)

    def read_file(self, name: str, max_bytes: int) -> bytes:
        return self.inner.read_file(name, max_bytes)

    def read_listed_file(self, name: str, max_bytes: int) -> bytes:
        return self.inner.read_listed_file(name, max_bytes)

    def open_file(self, name: str) -> FileHandle:
        self.inner.open_file(name).close()  # the real checks
        return self.files.get(name) or self.inner.open_file(name)

    def open_listed_file(self, name: str) -> FileHandle:
        return self.open_file(name)

    def read_link(self, name: str) -> str:
        return self.inner.read_link(name)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> DirectoryHandle:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class SizedFilesystem:
    def __init__(self, inner: MemoryFilesystem, files: Mapping[str, SizedFile]) -> None:
        self.inner = inner
        self.files = files

    def canonical_directory(self, path: str) -> str:
        return self.inner.canonical_directory(path)

    def open_root(self, canonical_path: str) -> DirectoryHandle:
        return SizedDirectory(self.inner.open_root(canonical_path), self.files)


def sized_failure(
    files: Mapping[str, SizedFile], limits: ArtifactsumLimits = DEFAULT_LIMITS
) -> str:
    workspace, memory = load(folder("", {name: b"" for name in files}, small=b"12"))
    with pytest.raises(FingerprintError) as caught:
        compute_artifactsum(workspace, "a", SizedFilesystem(memory, files), limits=limits)
    assert memory.open_handles == 0
    return caught.value.message


def test_a_file_reporting_more_than_1_gib_in_total_fails_before_it_is_read() -> None:
    big = SizedFile(GIB - 1, b"")  # "big" sorts before "small" (2 bytes): 1 GiB + 1 in all
    message = sized_failure({"big": big})
    assert message == (
        "Artifact `a`: fingerprint covers more than 1 GiB of file bytes (at `small`); "
        "ignore some or narrow `fingerprint.files`"
    )
    huge = SizedFile(GIB + 1, b"")
    assert "more than 1 GiB of file bytes (at `huge`)" in sized_failure({"huge": huge})
    assert huge.reads == 0


def test_a_file_reporting_exactly_1_gib_in_total_passes_the_size_check() -> None:
    workspace, memory = load(folder(big=b"", small=b"12"))
    files = {"big": SizedFile(GIB - 2, b"")}
    result = compute_artifactsum(workspace, "a", SizedFilesystem(memory, files))
    assert result.value == expected({"big": b"", "small": b"12"})


def test_bytes_read_count_even_when_the_file_grew_after_it_was_opened() -> None:
    grown = SizedFile(0, b"x" * 11)
    message = sized_failure({"grown": grown}, ArtifactsumLimits(file_bytes=10))
    assert "more than 10 bytes of file bytes (at `grown`)" in message


# --- the declared form ------------------------------------------------------------------------


class FakeScripts:
    def __init__(self, stdout: bytes) -> None:
        self.stdout = stdout
        self.calls: list[tuple[str, ScriptFingerprint]] = []

    def run(self, workspace: Workspace, artifact: Artifact, script: ScriptFingerprint) -> bytes:
        self.calls.append((artifact.name, script))
        return self.stdout


SCRIPT = 'fingerprint = { script = { command = "./fp.sh", args = ["--all"] } }'


def test_fingerprint_false_has_no_fingerprint() -> None:
    workspace, filesystem = load(folder("fingerprint = false", x=b"x"))
    assert compute_fingerprint(workspace, "a", filesystem) is None
    assert filesystem.open_root_calls == 1  # only the load


@pytest.mark.parametrize(
    "paths",
    [
        ["a"],
        ["src/f0.py", "src/f1.py", "é/ü.txt"],
        ["\x00\x01\x1f", '"q"', "\\back", "\u2028", "😀" * 3],
        [f"d{i}/" + "\x07" * i for i in range(40)],
    ],
)
def test_the_manifest_size_bound_is_never_below_the_canonical_size(paths: list[str]) -> None:
    """``build_manifest`` computes the exact size only when a cheap bound exceeds the cap:
    the bound must hold for any path (escaped control characters, quotes, non-ASCII)."""
    value = "artifactsum:" + "0" * 64
    digests = {
        path: hashlib.sha256(path.encode("utf-8", "surrogateescape")).digest() for path in paths
    }
    manifest = build_manifest(value, digests)
    exact = len(canonical_json(manifest))
    assert _manifest_bytes_at_most(value, manifest["files"]) >= exact
    for cap in (exact - 1, exact):  # around the exact size the answer is the exact one
        expected = manifest if exact <= cap else {"inputs": value}
        assert build_manifest(value, digests, cap) == expected


def test_artifactsum_form_gives_value_and_manifest() -> None:
    workspace, filesystem = load(folder(x=b"x"))
    computed = compute_fingerprint(workspace, "a", filesystem)
    assert computed is not None
    assert computed.value == expected({"x": b"x"})
    assert computed.manifest == {
        "inputs": computed.value,
        "files": {"x": hashlib.sha256(b"x").hexdigest()[:16]},
    }


def test_script_form_without_a_runner_is_not_supported() -> None:
    workspace, filesystem = load(folder(SCRIPT, **{"fp.sh": b""}))
    with pytest.raises(FingerprintError) as caught:
        compute_fingerprint(workspace, "a", filesystem)
    assert caught.value.message == (
        "Artifact `a`: fingerprint scripts are not supported in this version"
    )


def test_script_form_runs_the_script_and_keeps_its_literal_value() -> None:
    workspace, filesystem = load(folder(SCRIPT, **{"fp.sh": b""}))
    scripts = FakeScripts(b"v1:abc-DEF_9.z\n")
    computed = compute_fingerprint(workspace, "a", filesystem, scripts)
    assert computed is not None
    assert computed.value == "v1:abc-DEF_9.z"
    assert computed.manifest is None
    assert scripts.calls == [("a", ScriptFingerprint("./fp.sh", ("--all",), ()))]


def test_bad_script_output_names_the_artifact() -> None:
    workspace, filesystem = load(folder(SCRIPT, **{"fp.sh": b""}))
    with pytest.raises(FingerprintError) as caught:
        compute_fingerprint(workspace, "a", filesystem, FakeScripts(b" x\n"))
    assert caught.value.message.startswith("Artifact `a`: fingerprint script output must be ")


@pytest.mark.parametrize(
    ("stdout", "value"),
    [
        (b"a", "a"),
        (b"a\n", "a"),
        (b"Az09._:-", "Az09._:-"),
        (b"x" * SCRIPT_OUTPUT_MAX_CHARS, "x" * 128),
        (b"x" * SCRIPT_OUTPUT_MAX_CHARS + b"\n", "x" * 128),
    ],
)
def test_script_output_accepted(stdout: bytes, value: str) -> None:
    assert script_output_value(stdout) == value


@pytest.mark.parametrize(
    ("stdout", "problem"),
    [
        (b"", "it is empty"),
        (b"\n", "it is empty"),
        (b"x" * (SCRIPT_OUTPUT_MAX_CHARS + 1), "it has 129 characters"),
        (b"x" * (SCRIPT_OUTPUT_MAX_CHARS + 1) + b"\n", "it has 129 characters"),
        (b"abc\n\n", "byte 4 is b'\\n'"),
        (b"abc\r\n", "byte 4 is b'\\r'"),
        (b" abc", "byte 1 is b' '"),
        (b"abc ", "byte 4 is b' '"),
        (b"a/b", "byte 2 is b'/'"),
        ("é".encode(), "byte 1 is b'\\xc3'"),
    ],
)
def test_script_output_refused(stdout: bytes, problem: str) -> None:
    with pytest.raises(FingerprintError) as caught:
        script_output_value(stdout)
    assert caught.value.message == (
        "fingerprint script output must be 1-128 characters of [A-Za-z0-9._:-], optionally "
        f"followed by one line feed, and is not trimmed; {problem}"
    )


def test_a_shared_gitignore_memo_reads_each_gitignore_once_with_the_same_values() -> None:
    """``status`` and ``verify`` compute many Artifacts' fingerprints with one memo of the
    ``.gitignore`` files read (``GitignoreMemo``): the same values as computing each on its
    own, and an ancestor's ``.gitignore`` read once, not once per Artifact."""
    modules: dict[str, Node] = {
        f"m{i}": {
            "index.artf": decl(f"m{i}"),
            ".gitignore": b"!keep.log\n" if i % 2 else b"",
            "a.log": b"",
            "keep.log": f"k{i}".encode(),
            "src": {
                "x.py": f"x{i}".encode(),
                "build": {"o": b""},
                "t": {"index.artf": decl(f"t{i}")},
            },
        }
        for i in range(6)
    }
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        ".gitignore": b"*.log\nbuild/\n",
        "mods": {".gitignore": b"# nothing\n", **modules},
    }
    workspace, filesystem = load(tree)
    names = sorted(workspace.artifacts)
    alone = {name: compute_artifactsum(workspace, name, filesystem) for name in names}
    reads_alone = filesystem.read_file_calls
    memo: GitignoreMemo = {}
    shared = {
        name: compute_artifactsum(workspace, name, filesystem, gitignores=memo) for name in names
    }
    assert shared == alone
    assert memo[""] is not None and memo["mods"] is not None
    gitignores = 2 + 6  # the root's, mods', and each module's own: once each
    assert filesystem.read_file_calls - reads_alone == gitignores
    assert filesystem.open_handles == 0


def test_a_walked_folder_without_a_gitignore_in_its_listing_is_not_asked_for_one() -> None:
    """The walk lists each folder anyway: a ``.gitignore`` absent from that listing is not
    looked up again (one stat per folder, answered "not found", at 1,000 Artifacts a tenth
    of a warm ``status``); one present is read and applied, in any folder of the walk."""
    files: dict[str, Node] = {"x.py": b"x", "y.log": b"y"}
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        "a": {"index.artf": decl("a"), "p": dict(files), "q": {"r": dict(files)}},
        "b": {"index.artf": decl("b"), "p": {".gitignore": b"*.log\n", **files}},
    }
    workspace, filesystem = load(tree)
    memo: GitignoreMemo = {}
    walked_a = compute_artifactsum(workspace, "a", filesystem, gitignores=memo)
    assert filesystem.entry_calls.count(".gitignore") == 1  # the root's: an ancestor, unlisted
    assert sorted(walked_a.manifest["files"]) == [f"{d}/{f}" for d in ("p", "q/r") for f in files]
    walked_b = compute_artifactsum(workspace, "b", filesystem, gitignores=memo)
    assert filesystem.entry_calls.count(".gitignore") == 2  # b/p's, listed: read
    assert sorted(walked_b.manifest["files"]) == ["p/.gitignore", "p/x.py"]
    assert memo.pop("b/p") is not None
    assert memo == {"": None, "a": None, "a/p": None, "a/q": None, "a/q/r": None, "b": None}
    assert filesystem.open_handles == 0


def test_open_folders_share_the_root_and_ancestors_with_the_same_values() -> None:
    """``OpenFolders`` holds the root and the owners' ancestors open across Artifacts' walks:
    the same values as each walk opening its own, the root opened once, at most ``limit``
    held (the rest opened per walk as before), and every one closed at the end."""
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        "mods": {
            f"m{i}": {"index.artf": decl(f"m{i}"), "x.py": f"x{i}".encode(), "t": {"y": b"y"}}
            for i in range(5)
        },
    }
    workspace, filesystem = load(tree)
    names = sorted(workspace.artifacts)
    before = filesystem.open_root_calls
    alone = {name: compute_artifactsum(workspace, name, filesystem) for name in names}
    assert filesystem.open_root_calls - before == len(names)  # one per walk on its own
    for limit, roots in ((64, 1), (1, 1), (0, len(names))):
        opened = filesystem.open_root_calls
        with OpenFolders(limit) as folders:
            shared = {
                name: compute_artifactsum(workspace, name, filesystem, folders=folders)
                for name in names
            }
            assert filesystem.open_handles == min(limit, 2 + 5)  # root, mods, the five
        assert shared == alone
        assert filesystem.open_root_calls - opened == roots
        assert filesystem.open_handles == 0


def test_the_own_gitignore_of_an_artifact_below_the_root_applies_to_its_paths() -> None:
    """An Artifact's own folder's ``.gitignore`` matched each path with one character cut
    off (``keep`` seen as ``eep``): it excluded what it did not name and kept what it did."""
    tree: dict[str, Node] = {
        "index.artf": decl("root"),
        ".gitignore": b"*.log\n",
        "sub": {
            "index.artf": decl("s"),
            ".gitignore": b"/keep\nx*\n!keep.log\n",
            "keep": b"k",
            "x1": b"",
            "eep": b"e",
            "a.log": b"",
            "keep.log": b"l",
            "d": {"keep": b"d"},
        },
    }
    assert_covers(
        tree,
        {".gitignore": b"/keep\nx*\n!keep.log\n", "eep": b"e", "keep.log": b"l", "d/keep": b"d"},
        name="s",
    )
