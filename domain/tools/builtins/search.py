"""The ``glob`` and ``grep`` built-ins: search a logical directory (or, for grep, one file)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wcmatch import glob as wcglob

from artifactize.domain.logical_paths import glob_pattern_problem
from artifactize.domain.text import compact_json_size
from artifactize.domain.tools.builtins.listing import NOT_A_DIRECTORY, join_logical
from artifactize.domain.tools.builtins.traversal import FoundFile, Traversal
from artifactize.domain.tools.context import BuiltinContext
from artifactize.domain.tools.locations import (
    SPECIAL_REFUSED,
    DirectoryChain,
    Location,
    open_directory_at,
    open_failure,
)
from artifactize.domain.tools.results import (
    BUILTIN_RESULT_MAX_BYTES,
    ToolError,
    ToolResult,
    bounded_json_result,
)
from artifactize.ports.filesystem import (
    DirectoryHandle,
    EntryKind,
    FilesystemError,
    FileTooLarge,
    NotRegularFile,
    SymlinkRefused,
)
from artifactize.ports.regex import CompiledRegex, RegexError

GLOB_RESULTS_MAX = 200
GREP_DEFAULT_RESULTS = 200
GREP_MAX_RESULTS = 200
GREP_FILE_MAX_BYTES = 8 * 1024 * 1024
GREP_TOTAL_MAX_BYTES = 64 * 1024 * 1024
REGEX_SIZE_LIMIT_BYTES = 2 * 1024 * 1024
_RESULT_OVERHEAD_BYTES = 1024
_BLOCK_CHARS = 16 * 1024  # searched at once (whole lines), in a file the prefilter matched
_GLOB_FLAGS = wcglob.GLOBSTAR | wcglob.DOTGLOB | wcglob.BRACE

GLOB_PATTERN_REFUSED = "Glob pattern must be relative without traversal components."
GLOB_NOT_A_DIRECTORY = "Glob path must be a directory."
INVALID_REGEX = "Invalid or oversized regex pattern."
GREP_NOT_REGULAR = "Grep requires regular files."


def compile_glob(pattern: str) -> Any:
    if glob_pattern_problem(pattern) is not None:
        raise ToolError(GLOB_PATTERN_REFUSED)
    if not _balanced_glob(pattern):
        raise ToolError("Invalid glob pattern.")
    try:
        return wcglob.compile(pattern, flags=_GLOB_FLAGS)
    except (ValueError, TypeError):
        raise ToolError("Invalid glob pattern.") from None


def _balanced_glob(pattern: str) -> bool:
    """Globset refuses an unclosed ``[`` class and unbalanced ``{``/``}``; wcmatch would not.

    After ``[`` (and an optional ``!``/``^``) a first ``]`` is a literal member.
    """
    depth = 0
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "[":
            start = index + 1
            if pattern[start : start + 1] in ("!", "^"):
                start += 1
            if pattern[start : start + 1] == "]":
                start += 1
            close = pattern.find("]", start)
            if close < 0:
                return False
            index = close + 1
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return False
            depth -= 1
        index += 1
    return depth == 0


def _search_root(context: BuiltinContext, requested: str) -> tuple[str, Location]:
    """The logical base that found paths are joined to ("" at a file Artifact's virtual root
    ``.``, whose files are named from the containing folder), and the location searched.
    The result still echoes the request path as given (the seed: the logical request path)."""
    location = context.locate(requested, allow_virtual_root=True)
    if location.is_file_artifact_root:
        return "", context.locate("")
    return requested, location


def _directory_kind(context: BuiltinContext, location: Location) -> EntryKind:
    if location.is_file_artifact_root or not location.components:
        return EntryKind.DIRECTORY
    try:
        with open_directory_at(
            context.filesystem, context.root_path, location.components[:-1]
        ) as parent:
            kind = parent.entry(location.components[-1]).kind
    except FilesystemError as exc:
        raise open_failure(exc, location.request_path, context.owner) from None
    if kind is EntryKind.SYMLINK:
        raise ToolError("Cannot open Artifact input without symlink traversal.")
    return kind


def _ownership(context: BuiltinContext, location: Location) -> dict[str, str]:
    """Every built-in result names the declaring Artifact and the one its path reached."""
    return {"artifactId": context.owner, "resolvedArtifactId": location.artifact.name}


def run_glob(context: BuiltinContext, args: dict[str, Any]) -> ToolResult:
    matcher = compile_glob(args["pattern"])
    requested = args.get("path", "")
    path, location = _search_root(context, requested)
    kind = _directory_kind(context, location)
    if kind is EntryKind.OTHER:
        raise ToolError(SPECIAL_REFUSED)
    if kind is not EntryKind.DIRECTORY:
        raise ToolError(GLOB_NOT_A_DIRECTORY)
    traversal = Traversal(context)
    matches = sorted(
        join_logical(path, found.relative)
        for found in traversal.files(location)
        if matcher.match(found.relative)
    )
    files: list[str] = []
    budget = _RESULT_OVERHEAD_BYTES + compact_json_size(requested)
    truncated = traversal.truncated
    for match in matches:
        budget += compact_json_size(match) + 1
        if len(files) == GLOB_RESULTS_MAX or budget > BUILTIN_RESULT_MAX_BYTES:
            truncated = True
            break
        files.append(match)
    return bounded_json_result(
        {
            **_ownership(context, location),
            "path": requested,
            "files": files,
            "truncated": truncated,
        }
    )


class _Grep:
    def __init__(
        self,
        context: BuiltinContext,
        regex: CompiledRegex,
        prefilter: CompiledRegex | None,
        limit: int,
    ) -> None:
        self.context = context
        self.regex = regex
        self.prefilter = prefilter
        self.limit = limit
        self.matches: list[dict[str, Any]] = []
        self.bytes_read = 0
        self.budget = _RESULT_OVERHEAD_BYTES
        self.truncated = False
        self.full = False
        # Sorted paths visit a folder's files in a row: keep its descriptor (and its
        # ancestors') open between files instead of re-walking from the root for each.
        self.directories = DirectoryChain(context.filesystem, context.root_path)

    def search(self, base: str, files: list[FoundFile]) -> None:
        """Search ``files`` in order until the results are full; a file's matches are named
        ``base/relative`` (``base`` alone when ``relative`` is empty: the file searched is the
        path asked for).

        One loop over the files, with what it calls per file bound once: this runs for every
        file of the tree (5,000 in the bench), and a call or attribute lookup saved here is
        saved per file."""
        check = self.context.cancellation.check
        open_directory = self.directories.open
        prefilter = None if self.prefilter is None else self.prefilter.is_match
        held: tuple[str, ...] | None = None  # the folder ``parent`` is: the walk gives a
        parent: DirectoryHandle | None = None  # folder's files one ``parents`` tuple
        for relative, parents, name in files:
            check()
            # Each file is read as listed: its entry was classified as a regular file by the
            # listing that found it (or by ``_directory_kind``), so it is opened no-follow,
            # checked regular on its descriptor and read in one call.
            try:
                if parents is not held or parent is None:
                    parent = open_directory(parents)
                    held = parents
                data = parent.read_listed_file(name, GREP_FILE_MAX_BYTES)
            except FileTooLarge:
                self.truncated = True
                continue
            except (NotRegularFile, SymlinkRefused):
                raise ToolError(GREP_NOT_REGULAR) from None
            except FilesystemError:
                raise ToolError("Cannot read Artifact file.") from None
            if self.bytes_read + len(data) > GREP_TOTAL_MAX_BYTES:
                self.truncated = True
                self.full = True
                return
            self.bytes_read += len(data)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            # A binary file (a NUL byte) is skipped; asked after the prefilter, which skips
            # most files: either refusal skips the file, so their order changes no result.
            if (prefilter is not None and not prefilter(text)) or "\x00" in text:
                continue
            self._collect(join_logical(base, relative) if relative else base, text)
            if self.full:
                return

    def _collect(self, display_path: str, text: str) -> None:
        for number, line in _matching_lines(text, self.regex, self.prefilter):
            match = {"path": display_path, "line": number, "text": line}
            self.budget += compact_json_size(match) + 1
            if len(self.matches) == self.limit or self.budget > BUILTIN_RESULT_MAX_BYTES:
                self.truncated = True
                self.full = True
                return
            self.matches.append(match)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Lines split after each LF, without one trailing LF and then one trailing CR."""
    pieces = text.split("\n")
    if pieces[-1] == "":
        pieces.pop()  # the fragment after a final LF (or of an empty file) is not a line
    for number, line in enumerate(pieces, start=1):
        yield number, line[:-1] if line.endswith("\r") else line


def _matching_lines(
    text: str,
    regex: CompiledRegex,
    prefilter: CompiledRegex | None,
    block_chars: int = _BLOCK_CHARS,
) -> Iterator[tuple[int, str]]:
    """The lines of ``text`` (as ``_lines`` splits them) that ``regex`` matches, numbered.

    With a prefilter, the text is searched in blocks of whole lines (``block_chars`` and on
    to the next LF) and only the lines where the prefilter's leftmost match starts are split
    off and tried, each search going on after the line it tried. No line is missed: a line
    ``regex`` matches holds a match of the prefilter (the reasoning that lets it reject a
    whole file), so the leftmost match of what is left of the block starts in that line or
    in an earlier one, which is tried and passed in turn.
    """
    if prefilter is None:
        for number, line in _lines(text):
            if regex.is_match(line):
                yield number, line
        return
    size = len(text)
    start = 0
    number = 1  # the line number at ``start``
    while start < size:
        end = text.find("\n", start + block_chars)
        end = size if end < 0 else end + 1
        rest = text[start:end] if start or end < size else text
        first = number  # the line number at the start of ``rest``
        while (at := prefilter.find_start(rest)) is not None:
            line_start = rest.rfind("\n", 0, at) + 1
            if line_start == len(rest):
                break  # an empty match after the final LF: no line starts there
            line_end = rest.find("\n", at)
            if line_end < 0:
                line_end = len(rest)
            line_number = first + rest.count("\n", 0, line_start)
            line = rest[line_start:line_end]
            if line.endswith("\r"):
                line = line[:-1]
            if regex.is_match(line):
                yield line_number, line
            if line_end >= len(rest):
                break
            first = line_number + 1
            rest = rest[line_end + 1 :]
        if end < size:  # the line number after the last block is never asked
            number += text.count("\n", start, end)
        start = end


def has_possessive_quantifier(pattern: str) -> bool:
    """Whether a quantifier (``*``, ``+``, ``?``, ``{n,m}``, lazy or not) is followed by ``+``.

    That is PCRE's possessive form (``o++``, ``a*+``, ``a{2}+``); the Rust crate would read
    it as a nested repetition, but the reference refuses it like atomic groups. Escapes and
    character classes are skipped, so ``\\++`` and ``[+]+`` are ordinary repetitions.
    """
    index = 0
    quantified = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            if (
                pattern[index - 1 : index] in ("x", "p", "P", "u", "U")
                and pattern[index : index + 1] == "{"
            ):
                close = pattern.find("}", index)
                index = len(pattern) if close < 0 else close + 1
            quantified = False
            continue
        if char == "[":
            index = _class_end(pattern, index)
            quantified = False
            continue
        if char == "+" and quantified:
            return True
        if char == "?" and pattern[index - 1 : index] == "(":
            quantified = False  # a group's (?flags) or (?<name>), not a quantifier
        elif char in "*+?":
            quantified = True
        elif char == "{":
            close = pattern.find("}", index)
            index = len(pattern) if close < 0 else close
            quantified = True
        else:
            quantified = False
        index += 1
    return False


def _class_end(pattern: str, start: int) -> int:
    """The index just after the character class opened at ``start`` (nested classes too)."""
    index = start + 1
    if pattern[index : index + 1] == "^":
        index += 1
    if pattern[index : index + 1] == "]":
        index += 1
    depth = 1
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return len(pattern)


def _compile(
    context: BuiltinContext, pattern: str, case_insensitive: bool
) -> tuple[CompiledRegex, CompiledRegex | None]:
    if has_possessive_quantifier(pattern):
        raise ToolError(INVALID_REGEX)
    try:
        regex = context.regex.compile(
            pattern, case_insensitive=case_insensitive, size_limit=REGEX_SIZE_LIMIT_BYTES
        )
        prefilter = None
        if not any(marker in pattern for marker in ("\\A", "\\z", "(?")):
            prefilter = context.regex.compile(
                "(?smR)" + pattern,
                case_insensitive=case_insensitive,
                size_limit=REGEX_SIZE_LIMIT_BYTES,
            )
    except RegexError:
        raise ToolError(INVALID_REGEX) from None
    return regex, prefilter


def run_grep(context: BuiltinContext, args: dict[str, Any]) -> ToolResult:
    pattern = args["pattern"]
    if not pattern:
        raise ToolError(INVALID_REGEX)
    name_filter = compile_glob(args["glob"]) if "glob" in args else None
    regex, prefilter = _compile(context, pattern, bool(args.get("caseInsensitive", False)))
    requested = args.get("path", "")
    path, location = _search_root(context, requested)
    grep = _Grep(context, regex, prefilter, int(args.get("maxResults", GREP_DEFAULT_RESULTS)))
    kind = _directory_kind(context, location)
    if kind is EntryKind.OTHER:
        raise ToolError(SPECIAL_REFUSED)
    with grep.directories:
        if kind is EntryKind.FILE:
            basename = location.components[-1]
            if name_filter is None or name_filter.match(basename):
                grep.search(path, [FoundFile("", location.components[:-1], basename)])
        else:
            traversal = Traversal(context, grep.directories)
            found: list[FoundFile] = [
                f
                for f in traversal.files(location)
                if name_filter is None or name_filter.match(f.relative)
            ]
            grep.truncated = traversal.truncated
            grep.search(path, sorted(found, key=lambda f: f.relative.encode("utf-8")))
    return bounded_json_result(
        {
            **_ownership(context, location),
            "path": requested,
            "matches": grep.matches,
            "truncated": grep.truncated,
        }
    )


__all__ = ["NOT_A_DIRECTORY", "run_glob", "run_grep"]
