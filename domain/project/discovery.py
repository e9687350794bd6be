"""Discovery: walk the repository through pinned directory handles and read every ``.artf``.

The walk is depth-first in sorted name order. ``index.artf`` declares its folder (which
then owns every folder Artifact below it: nearest-folder children); ``NAME.ext.artf``
declares the regular file beside it. ``.git``, ``node_modules`` and whatever the root
``.artfignore`` lists are never entered, and directory symlinks are never followed.
Discovery parses and validates each file on its own; cross-file rules live in
``domain.workspace``.

With a file index (``ports.file_index``), a declaration file whose identity the index knows
is neither read nor parsed: its validated form and text come from the index
(``domain.declarations.codec``). Only declarations that validated are kept there; one
with problems is read and reported every time. A discovery without problems is kept there
whole as well (``_Kept``: git's untracked cache, for the tree): while the root, every
folder entered and every declaration keep their identities, the next discovery lists and
opens nothing, one no-follow stat each.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import pathspec

from artifactize.domain.declarations.codec import (
    DECLARATION_FORMAT,
    StoredFormError,
    decode_stored,
    encode_declaration,
)
from artifactize.domain.declarations.diagnostics import ConfigError, KeyProblems, Problem
from artifactize.domain.declarations.model import ArtifactKind, Declaration
from artifactize.domain.declarations.parse import parse_declaration
from artifactize.domain.declarations.toml_source import (
    KeyLocator,
    TomlSyntaxError,
    parse_toml,
    reject_non_json_values,
)
from artifactize.domain.logical_paths import logical_path_problem
from artifactize.domain.reviews.reuse.definition_hash import eval_def_hash
from artifactize.ports.file_index import FileIndex
from artifactize.ports.filesystem import (
    DirectoryHandle,
    DirEntry,
    EntryKind,
    FileIdentity,
    FilesystemError,
    FileTooLarge,
)

DECLARATION_MAX_BYTES = 8 * 1024 * 1024
ARTFIGNORE_MAX_BYTES = 1024 * 1024
FOLDER_DECLARATION = "index.artf"
DECLARATION_SUFFIX = ".artf"
IGNORE_FILE = ".artfignore"
NEVER_ENTERED = frozenset({".git", "node_modules"})
LEGACY_CONFIG = "artifactize.json"
LEGACY_IGNORE = ".artifactizeignore"


@dataclass(frozen=True)
class SourceFile:
    """A declaration's path and text, kept to point errors at lines after discovery."""

    path: str
    text: str

    def locate(self, key_path: str, message: str) -> Problem:
        line = KeyLocator(self.text).line_of(key_path) if key_path else None
        return Problem(self.path, line, key_path, message)


@dataclass(frozen=True)
class DeclaredArtifact:
    """An Artifact as one file declares it, before cross-file resolution."""

    declaration: Declaration
    source: SourceFile
    path: str  # workspace-relative: the folder, or the file for a file Artifact
    folder: str  # the working folder (the containing folder for a file Artifact)
    target: str | None  # the file name of a file Artifact
    owner: str | None  # workspace path of the nearest enclosing folder Artifact
    folder_entries: frozenset[str]  # names in the working folder, for mount alias clashes
    # Each eval's definition hash (``evalDefHash`` with its own profile), in the
    # declaration's order, when computed as it was parsed for the file index or kept there
    # with it; () when not (a ``status`` then computes it). Derived from ``declaration``,
    # an optimisation only: not part of what the Artifact is (equality).
    eval_hashes: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.declaration.name

    @property
    def kind(self) -> ArtifactKind:
        return self.declaration.kind


@dataclass
class Discovery:
    root_path: str
    artifacts: list[DeclaredArtifact] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # Folders below the root that are repositories of their own (they hold a ``.git``),
    # not walked unless asked (``enter_nested``): ``--repo /tmp`` is not every repository
    # below /tmp.
    nested_repositories: list[str] = field(default_factory=list)


def discover(
    root: DirectoryHandle,
    root_path: str,
    *,
    enter_nested: bool = False,
    index: FileIndex | None = None,
    root_identity: FileIdentity | None = None,
) -> Discovery:
    """Walk the workspace under ``root``; raises ``ConfigError`` with every problem found.
    A folder below the root that holds a ``.git`` (another repository: a clone, a
    submodule, a worktree) is not entered unless ``enter_nested``. ``index``: declarations
    it knows are not read again (it is not saved here); with ``root_identity`` (the root
    folder's, taken before this walk), the whole discovery is kept there too (``_Kept``)."""
    result = Discovery(root_path)
    ignore, ignore_text = _load_ignore(root, result)
    kept = None
    if index is not None and root_identity is not None and not result.problems:
        context = _kept_context(enter_nested, ignore_text)
        kept = _Kept(index, root_identity, context, root.physical_path)
        if kept.recall(root, result):
            return result
    walker = _Walker(result, ignore, enter_nested=enter_nested, index=index, kept=kept)
    walker.walk(root, "", None)
    if not result.problems and not result.artifacts:
        result.problems.append(
            Problem(
                "",
                None,
                "",
                "Workspace must contain at least one .artf Artifact; none was found in the repository "
                "(declare a folder with index.artf, or a file with NAME.ext.artf)",
            )
        )
    if result.problems:
        raise ConfigError(result.problems)
    if kept is not None:
        kept.remember()
    return result


def _load_ignore(
    root: DirectoryHandle, result: Discovery
) -> tuple[pathspec.GitIgnoreSpec | None, str | None]:
    """The root ``.artfignore``'s rules and text (None, None: there is none)."""
    try:
        entry = root.entry(IGNORE_FILE)
    except FilesystemError:
        return None, None
    if entry.kind is not EntryKind.FILE:
        return None, None  # a symlinked .artfignore is not followed: treated as absent
    try:
        text = root.read_file(IGNORE_FILE, ARTFIGNORE_MAX_BYTES).decode("utf-8")
    except FileTooLarge:
        result.problems.append(Problem(IGNORE_FILE, None, "", "exceeds 1 MiB"))
        return None, None
    except (FilesystemError, UnicodeDecodeError) as exc:
        result.problems.append(Problem(IGNORE_FILE, None, "", f"cannot be read: {exc}"))
        return None, None
    return pathspec.GitIgnoreSpec.from_lines(text.splitlines()), text


KEPT_FORMAT = 1  # bump when a kept discovery's stored form or its context changes
KEPT_CONTEXT = "discovery|"  # a kept discovery's walk context (an Artifact walk's is hex)


def _kept_context(enter_nested: bool, ignore_text: str | None) -> str:
    """What a discovery depends on besides the identities it covers."""
    ignore = None if ignore_text is None else hashlib.sha256(ignore_text.encode()).hexdigest()
    context = json.dumps([KEPT_FORMAT, DECLARATION_FORMAT, enter_nested, ignore])
    return KEPT_CONTEXT + hashlib.sha256(context.encode()).hexdigest()


_STRING = frozenset({str})
_STRING_OR_NONE = frozenset({str, type(None)})


def _columns(rows: Any, width: int, optional: int = 0) -> list[tuple[Any, ...]] | None:
    """The columns of ``rows`` when it is a list of lists of ``width`` strings each (the last
    ``optional`` may be None); else None. Checked a column at a time through ``map``,
    ``zip`` and sets, which run in C: a kept discovery has a row per folder and per
    declaration, read by every warm load."""
    if type(rows) is not list or not set(map(type, rows)) <= {list}:
        return None
    if not set(map(len, rows)) <= {width}:
        return None
    columns = list(zip(*rows, strict=True)) if rows else [()] * width
    for at, column in enumerate(columns):
        if not set(map(type, column)) <= (_STRING_OR_NONE if at >= width - optional else _STRING):
            return None
    return columns


def _string_lists(values: Iterable[Any]) -> bool:
    """Whether every value is a list of strings."""
    values = list(values)
    return (
        set(map(type, values)) <= {list} and set(map(type, chain.from_iterable(values))) <= _STRING
    )


class KeptIdentities:
    """The folders a walk kept in the file index covered, each with its identity taken
    before it was listed (``_Kept`` here, ``artifactsum``'s kept walk): one that cannot be
    told leaves the walk not keepable."""

    def __init__(self) -> None:
        self.folders: list[tuple[str, FileIdentity]] = []
        self.keepable = True

    def folder(self, rel: str, identity: FileIdentity | None) -> None:
        if identity is None:
            self.keepable = False
        else:
            self.folders.append((rel, identity))


class _Kept(KeptIdentities):
    """A whole discovery as the file index keeps it (git's untracked cache, for the tree).

    Keyed by the root folder's identity and a digest of what else the walk depends on
    (``enter_nested``, the ``.artfignore`` text, the declaration format). The stored form:
    every folder entered below the root with its identity taken *before* it was listed, the
    nested repositories found, and each declaration with its identity, parse context and
    place, and its folder's entry names. Kept only when the discovery found no problem and
    every identity is known and safely old (the index's racy rule). ``recall`` trusts it
    only while every identity is unchanged — one no-follow stat each, by path from the root
    (a folder on the way replaced, by a link or anything, changes its parent's identity, and
    every parent is checked) — and the index knows every declaration; it lists and opens
    nothing. Any doubt: the walk runs as without it."""

    def __init__(
        self, index: FileIndex, identity: FileIdentity, context: str, physical: str
    ) -> None:
        super().__init__()
        self.index = index
        self.identity = identity
        self.context = context
        self.physical = physical
        self.declarations: list[tuple[FileIdentity, list[str | None]]] = []
        self.names: dict[str, list[str]] = {}
        self.nested: list[str] = []

    def declared(
        self, identity: FileIdentity | None, context: str, artifact: DeclaredArtifact
    ) -> None:
        if identity is None:
            self.keepable = False
            return
        a = artifact
        row = [a.source.path, identity.key(), context, a.path, a.folder, a.target, a.owner]
        self.declarations.append((identity, row))
        self.names.setdefault(a.folder, sorted(a.folder_entries))

    def remember(self) -> None:
        if not self.keepable:
            return
        stored = json.dumps(
            {
                "folders": [[rel, identity.key()] for rel, identity in self.folders],
                "nested": self.nested,
                "names": self.names,
                "declarations": [row for _, row in self.declarations],
            },
            ensure_ascii=False,
        )
        try:  # a name that is not UTF-8 is walked, but cannot be stored
            stored.encode("utf-8")
            self.physical.encode("utf-8")
        except UnicodeEncodeError:
            return
        covered = [
            self.identity,
            *(identity for _, identity in self.folders),
            *(identity for identity, _ in self.declarations),
        ]
        self.index.remember_walk(self.identity, self.context, self.physical, stored, covered)

    def recall(self, root: DirectoryHandle, result: Discovery) -> bool:
        """Fill ``result`` from the kept discovery when all it covered is unchanged."""
        stored = self.index.walk(self.identity, self.context)
        if stored is None:
            return False
        try:
            kept = json.loads(stored)
            folders, nested = kept["folders"], kept["nested"]
            names, declared = kept["names"], kept["declarations"]
        except (ValueError, KeyError, TypeError):
            return False
        columns = _columns(declared, 7, optional=2)
        if not (
            _columns(folders, 2) is not None
            and _string_lists([nested])
            and isinstance(names, dict)
            and _string_lists(names.values())
            and columns is not None
            and set(columns[4]) <= names.keys()  # each declaring folder's names
        ):
            return False
        if not _unchanged(
            root.identities_below([rel for rel, _ in folders], folders=True), folders
        ):
            return False
        files = root.identities_below([row[0] for row in declared], folders=False)
        if not _unchanged(files, declared):
            return False
        entries = {folder: frozenset(items) for folder, items in names.items()}
        artifacts = []
        for identity, (path, _, context, where, folder, target, owner) in zip(
            files, declared, strict=True
        ):
            assert identity is not None  # checked by _unchanged
            known = _stored_declaration(self.index, identity, context)
            if known is None:
                return False
            declaration, text, hashes = known
            source = SourceFile(path, text)
            artifacts.append(
                DeclaredArtifact(
                    declaration, source, where, folder, target, owner, entries[folder], hashes
                )
            )
        result.artifacts.extend(artifacts)
        result.nested_repositories.extend(nested)
        return True


def _stored_declaration(
    index: FileIndex, identity: FileIdentity, context: str
) -> tuple[Declaration, str, tuple[str, ...]] | None:
    """The declaration, text and eval hashes the index keeps for ``identity`` in
    ``context``; None when it keeps none, or one this version cannot read."""
    stored = index.declaration(identity, context)
    if stored is None:
        return None
    try:
        return decode_stored(stored)
    except StoredFormError:
        return None


def _eval_hashes(declaration: Declaration) -> tuple[str, ...]:
    """Each eval's definition hash, kept with the declaration in the file index (a warm
    ``status`` hashes no unchanged definition again); () when one has no canonical form
    (its key then fails where it is computed, as without the index)."""
    try:
        return tuple(eval_def_hash(item) for item in declaration.evals)
    except ValueError:  # CanonicalJsonError
        return ()


def _unchanged(found: Sequence[FileIdentity | None], rows: Sequence[list[Any]]) -> bool:
    """Whether each identity found is the one its row (``[path, key, ...]``) kept."""
    return all(
        identity is not None and identity.key() == row[1]
        for identity, row in zip(found, rows, strict=True)
    )


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


REPOSITORY_MARKER = ".git"  # a folder or, in a submodule or worktree, a file


class _Walker:
    def __init__(
        self,
        result: Discovery,
        ignore: pathspec.GitIgnoreSpec | None,
        *,
        enter_nested: bool,
        index: FileIndex | None = None,
        kept: _Kept | None = None,
    ) -> None:
        self.result = result
        self.ignore = ignore
        self.enter_nested = enter_nested
        self.index = index
        self.kept = kept  # what keeps this discovery in the index (told what the walk saw)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        if self.ignore is None:
            return False
        return bool(self.ignore.match_file(rel + "/" if is_dir else rel))

    def problem(self, path: str, message: str) -> None:
        self.result.problems.append(Problem(path, None, "", message))

    def walk(self, handle: DirectoryHandle, rel: str, owner: str | None) -> None:
        entries = handle.entries()
        names = frozenset(e.name for e in entries)
        if rel and REPOSITORY_MARKER in names and not self.enter_nested:
            self.result.nested_repositories.append(rel)
            if self.kept is not None:
                self.kept.nested.append(rel)
            return
        by_name = {e.name: e for e in entries}
        self._legacy_files(rel, by_name)
        index = by_name.get(FOLDER_DECLARATION)
        if index is not None and not self.ignored(_join(rel, FOLDER_DECLARATION), False):
            declared = self._folder_artifact(handle, rel, owner, index, names)
            if declared is not None or index.kind is EntryKind.FILE:
                owner = rel
        for entry in self._sidecars(rel, entries):
            self._file_artifact(handle, rel, owner, entry, by_name, names)
        for entry in entries:
            if entry.kind is not EntryKind.DIRECTORY or entry.name in NEVER_ENTERED:
                continue
            child_rel = _join(rel, entry.name)
            if self.ignored(child_rel, True):
                continue
            try:
                with handle.open_directory(entry.name) as child:
                    if self.kept is not None:  # the stat that checked it, before it was opened
                        self.kept.folder(child_rel, child.opened_identity())
                    self.walk(child, child_rel, owner)
            except FilesystemError as exc:
                self.problem(child_rel, f"cannot be walked: {exc.message}")

    def _legacy_files(self, rel: str, by_name: dict[str, DirEntry]) -> None:
        legacy = by_name.get(LEGACY_CONFIG)
        path = _join(rel, LEGACY_CONFIG)
        if legacy is not None and legacy.kind is EntryKind.FILE and not self.ignored(path, False):
            self.problem(
                path, "this file is no longer read; declare the Artifact in index.artf (TOML)"
            )
        if rel == "" and LEGACY_IGNORE in by_name:
            self.problem(
                LEGACY_IGNORE, "renamed to .artfignore; rename this file, it is no longer read"
            )

    def _sidecars(self, rel: str, entries: list[DirEntry]) -> Iterator[DirEntry]:
        for entry in entries:
            name = entry.name
            if not name.endswith(DECLARATION_SUFFIX) or name == FOLDER_DECLARATION:
                continue
            if entry.kind is EntryKind.DIRECTORY:
                continue  # a folder named x.artf is walked, not parsed
            if self.ignored(_join(rel, name), False):
                continue
            yield entry

    def _declaration(
        self,
        handle: DirectoryHandle,
        rel: str,
        entry: DirEntry,
        kind: ArtifactKind,
        target: str | None,
        is_root: bool,
    ) -> tuple[Declaration, SourceFile, FileIdentity | None, str, tuple[str, ...]] | None:
        """The validated declaration of ``entry`` and its source: from the index when it
        knows the file, else read, parsed, validated (and then given to the index, with its
        evals' definition hashes); with the identity it was known or read by (None: not
        told, or not kept), the context it was parsed in and the hashes (() without an
        index)."""
        context = f"{DECLARATION_FORMAT}|{kind.value}|{target or ''}|{int(is_root)}"
        if self.index is not None and entry.kind is EntryKind.FILE:
            known = self._indexed(handle, rel, entry, context)
            if known is not None:
                return known
        identity: list[FileIdentity | None] | None = None if self.index is None else [None]
        source = self._read(handle, rel, entry, identity)
        if source is None:
            return None
        declaration = self._parse(source, kind, target, is_root)
        if declaration is None:
            return None
        read = None if identity is None else identity[0]
        hashes: tuple[str, ...] = ()
        if self.index is not None and read is not None:
            hashes = _eval_hashes(declaration)
            stored = encode_declaration(declaration, source.text, hashes)
            if stored is None:  # not storable: read every time, and no discovery is kept
                read = None
            else:
                physical = f"{handle.physical_path.rstrip('/')}/{entry.name}"
                self.index.remember_declaration(read, context, physical, stored)
        return declaration, source, read, context, hashes

    def _indexed(
        self, handle: DirectoryHandle, rel: str, entry: DirEntry, context: str
    ) -> tuple[Declaration, SourceFile, FileIdentity, str, tuple[str, ...]] | None:
        assert self.index is not None
        identity = handle.identity(entry.name)
        if identity is None or identity.size > DECLARATION_MAX_BYTES:
            return None
        known = _stored_declaration(self.index, identity, context)
        if known is None:
            return None  # read and parsed again, as if the index did not know it
        declaration, text, hashes = known
        return declaration, SourceFile(_join(rel, entry.name), text), identity, context, hashes

    def _read(
        self,
        handle: DirectoryHandle,
        rel: str,
        entry: DirEntry,
        identity: list[FileIdentity | None] | None = None,
    ) -> SourceFile | None:
        """The file's text; with ``identity``, also the identity of the file read."""
        path = _join(rel, entry.name)
        if entry.kind is not EntryKind.FILE:
            self.problem(
                path, f"a declaration must be a regular file, not {_kind_text(entry.kind)}"
            )
            return None
        try:
            if identity is None:
                data = handle.read_file(entry.name, DECLARATION_MAX_BYTES)
            else:
                data = _read_with_identity(handle, entry.name, identity)
        except FileTooLarge:
            self.problem(path, f"declaration exceeds {DECLARATION_MAX_BYTES // (1024 * 1024)} MiB")
            return None
        except FilesystemError as exc:
            self.problem(path, f"cannot be read: {exc.message}")
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.problem(path, f"invalid TOML: not valid UTF-8 (byte {exc.start})")
            return None
        return SourceFile(path, text)

    def _parse(
        self, source: SourceFile, kind: ArtifactKind, target: str | None, is_root: bool
    ) -> Declaration | None:
        try:
            document = parse_toml(source.text)
        except TomlSyntaxError as exc:
            column = f" at column {exc.column}" if exc.column is not None else ""
            self.result.problems.append(
                Problem(source.path, exc.line, "", f"invalid TOML{column}: {exc.message}")
            )
            return None
        problems = KeyProblems()
        reject_non_json_values(document, "", problems)
        declaration = None
        if not problems:
            declaration = parse_declaration(
                document, kind, target=target, is_root=is_root, problems=problems
            )
        if problems:
            locator = KeyLocator(source.text)
            for key_path, message in problems.items:
                line = locator.line_of(key_path) if key_path else None
                self.result.problems.append(Problem(source.path, line, key_path, message))
            return None
        return declaration

    def _folder_artifact(
        self,
        handle: DirectoryHandle,
        rel: str,
        owner: str | None,
        entry: DirEntry,
        names: frozenset[str],
    ) -> DeclaredArtifact | None:
        found = self._declaration(handle, rel, entry, ArtifactKind.FOLDER, None, rel == "")
        if found is None:
            return None
        declaration, source, identity, context, hashes = found
        declared = DeclaredArtifact(declaration, source, rel, rel, None, owner, names, hashes)
        self._append(declared, identity, context)
        return declared

    def _append(
        self, declared: DeclaredArtifact, identity: FileIdentity | None, context: str
    ) -> None:
        self.result.artifacts.append(declared)
        if self.kept is not None:
            self.kept.declared(identity, context, declared)

    def _file_artifact(
        self,
        handle: DirectoryHandle,
        rel: str,
        owner: str | None,
        entry: DirEntry,
        by_name: dict[str, DirEntry],
        names: frozenset[str],
    ) -> None:
        path = _join(rel, entry.name)
        target = entry.name[: -len(DECLARATION_SUFFIX)]
        problem = _sidecar_target_problem(target, by_name.get(target))
        if problem is not None and target not in by_name:
            problem += _sidecar_suggestion(entry.name, target, by_name)
        if problem is not None:
            self.problem(path, problem)
            return
        found = self._declaration(handle, rel, entry, ArtifactKind.FILE, target, False)
        if found is None:
            return
        declaration, source, identity, context, hashes = found
        declared = DeclaredArtifact(
            declaration, source, _join(rel, target), rel, target, owner, names, hashes
        )
        self._append(declared, identity, context)


def _read_with_identity(
    handle: DirectoryHandle, name: str, identity: list[FileIdentity | None]
) -> bytes:
    """``read_file``'s checks, through an open handle whose identity is kept (the identity
    of the bytes read, not of whatever the name points at a moment later)."""
    with handle.open_file(name) as file:
        identity[0] = file.identity
        data = file.read(DECLARATION_MAX_BYTES + 1) if file.size <= DECLARATION_MAX_BYTES else b""
        if file.size > DECLARATION_MAX_BYTES or len(data) > DECLARATION_MAX_BYTES:
            identity[0] = None
            raise FileTooLarge(name, f"`{name}` is too large", limit=DECLARATION_MAX_BYTES)
    return data


SIDECAR_SUGGESTIONS_MAX = 3  # candidates named in a "did you mean" hint


def _sidecar_suggestion(name: str, target: str, by_name: dict[str, DirEntry]) -> str:
    """``; did you mean diagram.png.artf (it declares diagram.png)?`` when files beside the
    sidecar start with its target and an extension; else nothing."""
    candidates = sorted(
        other
        for other, entry in by_name.items()
        if other.startswith(f"{target}.")
        and not other.endswith(DECLARATION_SUFFIX)
        and entry.kind is EntryKind.FILE
    )[:SIDECAR_SUGGESTIONS_MAX]
    if not candidates:
        return ""
    shown = " or ".join(f"{c}{DECLARATION_SUFFIX}" for c in candidates)
    return f"; a sidecar is named after the whole file name: rename {name} to {shown}"


def _sidecar_target_problem(target: str, entry: DirEntry | None) -> str | None:
    if target.endswith(DECLARATION_SUFFIX):
        return "a declaration cannot target another declaration (a name ending .artf.artf)"
    if target == "":
        return "a sidecar needs a target: name it after the file it declares (NAME.ext.artf)"
    if ":" in target or logical_path_problem(target) is not None:
        return f"the target name {target!r} is not a valid path"
    if entry is None:
        return f"declares the file {target!r}, which does not exist"
    if entry.kind is EntryKind.SYMLINK:
        return (
            f"declares {target!r}, which is a symbolic link; a file Artifact must be a regular file"
        )
    if entry.kind is not EntryKind.FILE:
        return f"declares {target!r}, which is {_kind_text(entry.kind)}, not a regular file"
    return None


def _kind_text(kind: EntryKind) -> str:
    """``EntryKind`` as a message says it: "a directory", "a special file (FIFO, ...)"."""
    return {
        EntryKind.FILE: "a regular file",
        EntryKind.DIRECTORY: "a directory",
        EntryKind.SYMLINK: "a symbolic link",
        EntryKind.OTHER: "a special file (a FIFO, socket or device)",
    }[kind]
