"""Gitignore patterns, matched one entry at a time as a walk meets it.

Git decides whether a path is ignored while it walks the tree: an entry is matched on its own
path, and a folder that a pattern excludes is simply not entered (so nothing below it can be
re-included). The artifactsum walk does the same, and therefore needs patterns that match an
entry by its *whole* path: ``build/`` must match the folder ``build`` but say nothing about
``build/x`` on its own. That is what makes an explicitly named folder (``files = ["build"]``)
or an Artifact folder that an ancestor ``.gitignore`` excludes still walkable: only what lies
below it is matched. pathspec's gitignore regexes match by prefix (``build/`` matches
``build/x``), so each pattern is translated here to a full-match regex with wcmatch.

Syntax (gitignore(5)): blank lines and ``#`` comments are skipped; trailing unescaped spaces
are dropped; ``!`` negates; a trailing ``/`` matches folders only; a pattern with a ``/``
anywhere else is anchored to the folder of its file, otherwise it matches a name at any depth;
``*``, ``?``, ``[...]`` never match ``/``; ``**`` spans folders. Matching is case-sensitive.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from wcmatch import glob

_GLOB_FLAGS = glob.GLOBSTAR | glob.DOTGLOB | glob.CASE
_ANY_DEPTH = "**/"

BUILTIN_IGNORES: tuple[str, ...] = (".git", "__pycache__/", "*.pyc", "target/", "node_modules/")


@dataclass(frozen=True)
class IgnorePattern:
    """One compiled gitignore line."""

    text: str  # the line as written, for messages
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool

    def matches(self, path: str, is_dir: bool) -> bool:
        if self.directory_only and not is_dir:
            return False
        return self.regex.fullmatch(path) is not None


@dataclass(frozen=True)
class IgnoreRules:
    """The patterns of one ignore source, in file order (the last match wins)."""

    patterns: tuple[IgnorePattern, ...]

    @classmethod
    def parse(cls, text: str) -> IgnoreRules:
        """The patterns of a ``.gitignore`` text (LF or CRLF lines)."""
        return cls.from_lines(text.split("\n"))

    @classmethod
    def from_lines(cls, lines: tuple[str, ...] | list[str]) -> IgnoreRules:
        compiled = (compile_pattern(line) for line in lines)
        return cls(tuple(pattern for pattern in compiled if pattern is not None))

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no pattern matches.

        ``path`` is relative to the folder the patterns belong to, ``/``-separated, with no
        trailing slash; ``is_dir`` says whether the entry is a real folder (a symlink is not).
        """
        for pattern in reversed(self.patterns):
            if pattern.matches(path, is_dir):
                return not pattern.negated
        return None


PATTERNS_KEPT = 4096  # compiled lines kept by ``compile_pattern``


@functools.lru_cache(maxsize=PATTERNS_KEPT)
def compile_pattern(line: str) -> IgnorePattern | None:
    """One gitignore line, or None for a blank line, a comment or a pattern that matches nothing.

    Kept once compiled (the answer depends on the line alone, and is immutable): every
    Artifact's fingerprint starts from the same built-in patterns and reads the same
    ``.gitignore`` files, and wcmatch's translation cost 1 ms per Artifact."""
    text = _trim_trailing_spaces(line.removesuffix("\r"))
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    body = text[1:] if negated else text
    directory_only = body.endswith("/")
    if directory_only:
        body = body[:-1]
    anchored = "/" in body
    body = body.removeprefix("/")
    if not body:
        return None
    try:
        include, _ = glob.translate(body if anchored else _ANY_DEPTH + body, flags=_GLOB_FLAGS)
    except ValueError:
        return None  # git skips a pattern it cannot use
    if not include:
        return None
    return IgnorePattern(text, re.compile(include[0]), negated, directory_only)


def _trim_trailing_spaces(text: str) -> str:
    """Drop trailing spaces unless the last one is escaped with a backslash (``a\\ ``)."""
    while text.endswith(" "):
        stem = text[:-1]
        backslashes = len(stem) - len(stem.rstrip("\\"))
        if backslashes % 2 == 1:
            break
        text = stem
    return text
