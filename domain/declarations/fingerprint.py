"""``fingerprint``: omitted (artifactsum), a content table, a script, or ``false``."""

from __future__ import annotations

from typing import Any

from artifactize.domain.declarations.commands import read_command, read_operand_args
from artifactize.domain.declarations.diagnostics import KeyProblems
from artifactize.domain.declarations.model import (
    FINGERPRINT_SCRIPT_DEFAULT_TIMEOUT_MS,
    ArtifactKind,
    ArtifactsumFingerprint,
    Fingerprint,
    NoFingerprint,
    Reference,
    ReferenceUse,
    ScriptFingerprint,
)
from artifactize.domain.declarations.reader import TableReader
from artifactize.domain.logical_paths import logical_path_problem

FINGERPRINT_FILES_MAX = 64
FINGERPRINT_IGNORE_MAX = 64
WHOLE_FOLDER = "."


def default_fingerprint(kind: ArtifactKind, target: str | None) -> ArtifactsumFingerprint:
    files = (target,) if kind is ArtifactKind.FILE and target else (WHOLE_FOLDER,)
    return ArtifactsumFingerprint(files=files, ignore=())


class FingerprintParser:
    def __init__(self, problems: KeyProblems, references: list[Reference]) -> None:
        self.problems = problems
        self.references = references

    def parse(self, value: Any, kind: ArtifactKind, target: str | None) -> Fingerprint | None:
        if value is False:
            return NoFingerprint()
        if value is True:
            self.problems.add(
                "fingerprint", "`fingerprint = true` is not allowed; omit it for the default"
            )
            return None
        if not isinstance(value, dict):
            self.problems.add(
                "fingerprint", "expected false or a table (`files`/`ignore`, or `script`)"
            )
            return None
        if "script" in value:
            return self._script(value)
        return self._artifactsum(value, kind, target)

    def _paths(
        self, reader: TableReader, key: str, limit: int, *, allow_whole: bool
    ) -> tuple[str, ...] | None:
        paths = reader.string_list(key)
        if paths is None:
            return None
        if len(paths) > limit:
            reader.fail(key, f"at most {limit} entries, got {len(paths)}")
            return None
        ok = True
        for index, path in enumerate(paths):
            if allow_whole and path == WHOLE_FOLDER:
                problem = None
            else:
                problem = logical_path_problem(path) if path else "it is empty"
            if problem is None and (path == "index.artf" or path.endswith(".artf")):
                problem = "it names a .artf declaration, which is never fingerprinted"
            if problem is None and path in paths[:index]:
                problem = "it is listed twice"
            if problem is not None:
                reader.fail(
                    f"{key}[{index}]", f"{path!r} is not a valid owner-relative path: {problem}"
                )
                ok = False
        return paths if ok else None

    def _artifactsum(
        self, value: dict[str, Any], kind: ArtifactKind, target: str | None
    ) -> Fingerprint | None:
        start = len(self.problems.items)
        if kind is ArtifactKind.FILE:
            reader = TableReader(
                value,
                "fingerprint",
                self.problems,
                ("files", "script"),
                (),
                {
                    "ignore": "a file Artifact's fingerprint cannot take `ignore`",
                },
            )
            if not value:
                reader.fail(
                    "files",
                    "a file Artifact's fingerprint table needs `files = [target]` (or omit `fingerprint`)",
                )
            files = self._paths(reader, "files", FINGERPRINT_FILES_MAX, allow_whole=False)
            for index, path in enumerate(files or ()):
                if path != target:
                    reader.fail(
                        f"files[{index}]",
                        f"a file Artifact fingerprints only its target {target!r}",
                    )
            if len(self.problems.items) > start or not files:
                return None
            return ArtifactsumFingerprint(files=files, ignore=())
        reader = TableReader(value, "fingerprint", self.problems, ("files", "ignore", "script"))
        files = self._paths(reader, "files", FINGERPRINT_FILES_MAX, allow_whole=True)
        if files is not None and not files:
            reader.fail("files", 'must list at least one path (use ["."] for the whole folder)')
        ignore = self._ignore(reader)
        if len(self.problems.items) > start:
            return None
        return ArtifactsumFingerprint(files=files or (WHOLE_FOLDER,), ignore=ignore or ())

    def _ignore(self, reader: TableReader) -> tuple[str, ...] | None:
        patterns = reader.string_list("ignore")
        if patterns is None:
            return None
        if len(patterns) > FINGERPRINT_IGNORE_MAX:
            reader.fail("ignore", f"at most {FINGERPRINT_IGNORE_MAX} patterns, got {len(patterns)}")
            return None
        for index, pattern in enumerate(patterns):
            if not pattern.strip():
                reader.fail(f"ignore[{index}]", "must not be blank")
            elif pattern.startswith("!"):
                reader.fail(
                    f"ignore[{index}]",
                    "negated patterns are not allowed; ignore patterns always exclude",
                )
            elif pattern.startswith("#"):
                reader.fail(f"ignore[{index}]", "comments are not allowed in ignore patterns")
        return patterns

    def _script(self, value: dict[str, Any]) -> Fingerprint | None:
        outer = TableReader(
            value,
            "fingerprint",
            self.problems,
            ("script",),
            (),
            {
                "files": "`files` goes inside `script` for a script fingerprint",
                "ignore": "a script fingerprint cannot take `ignore`",
            },
        )
        table = outer.table_at("script")
        if table is None:
            return None
        reader = TableReader(
            table,
            "fingerprint.script",
            self.problems,
            ("command", "args", "files", "timeout_ms"),
            ("command", "args"),
        )
        start = len(self.problems.items)
        command = read_command(reader)
        args = read_operand_args(reader, self.references, ReferenceUse.SCRIPT_ARGV)
        files = self._paths(reader, "files", FINGERPRINT_FILES_MAX, allow_whole=False)
        timeout_ms = reader.timeout_ms() or FINGERPRINT_SCRIPT_DEFAULT_TIMEOUT_MS
        if len(self.problems.items) > start or command is None or args is None:
            return None
        return ScriptFingerprint(command, args, files or (), timeout_ms)
