"""What ``artifactize init`` writes: a starter ``index.artf`` and ``.artfignore`` for a project.

Pure: the caller lists the repository root and reads a few small marker files; this module
detects the project (Python, JavaScript/TypeScript, Rust or Go, in that order when several
match) and renders the two files. The declaration holds what a team needs on day one: the
read-only built-ins (``read``, ``list``, ``grep``, ``glob``), a runtime eval that runs the
project's tests, an Agent eval and a Human sign-off with small pass/fail schemas. Every
line is plain TOML the user is meant to edit; ``config check`` accepts it as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

NAME_MAX_CHARS = 64  # an Artifact name: [A-Za-z0-9][A-Za-z0-9_-]{0,63}
FALLBACK_NAME = "project"
DECLARATION = "index.artf"
IGNORE_FILE = ".artfignore"
README_NAMES = ("README.md", "README.rst", "README.txt", "README")
NOTHING_DETECTED = (
    "No Python, JavaScript/TypeScript, Rust or Go project found in {repo} (looked for "
    "pyproject.toml, setup.py, setup.cfg, requirements.txt, package.json, Cargo.toml and "
    "go.mod); write index.artf by hand (docs/declarations.md)."
)
# Small files read to detect a project and its test runner (the caller reads at most
# MARKER_READ_BYTES of each).
MARKER_FILES = (
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "requirements.txt",
    "requirements-dev.txt",
    "package.json",
)
MARKER_READ_BYTES = 256 * 1024

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Project:
    """A detected project: its language tag, how its tests run, what discovery skips."""

    language: str  # python | javascript | typescript | rust | go
    label: str  # what a person reads: "Python", "JavaScript", …
    test_command: str
    test_args: tuple[str, ...]
    ignore: tuple[str, ...]
    others: tuple[str, ...] = ()  # other languages found too (named in a comment)


COMMON_IGNORE = ("dist/", "build/", "coverage/", ".idea/", ".vscode/")


def detect(names: frozenset[str], texts: Mapping[str, str]) -> Project | None:
    """The project at a root holding ``names`` (file and folder names), whose marker files
    (MARKER_FILES) read ``texts``; None when nothing matches."""
    found: list[Project] = []
    if names & {"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"}:
        found.append(_python(names, texts))
    if "package.json" in names:
        found.append(_javascript(names))
    if "Cargo.toml" in names:
        found.append(Project("rust", "Rust", "cargo", ("test",), ("target/",)))
    if "go.mod" in names:
        found.append(Project("go", "Go", "go", ("test", "./..."), ("vendor/",)))
    if not found:
        return None
    first, *rest = found
    return Project(
        first.language,
        first.label,
        first.test_command,
        first.test_args,
        first.ignore,
        tuple(p.label for p in rest),
    )


def _python(names: frozenset[str], texts: Mapping[str, str]) -> Project:
    uses_pytest = "conftest.py" in names or any("pytest" in text for text in texts.values())
    args = ("-m", "pytest", "-q") if uses_pytest else ("-m", "unittest", "discover", "-v")
    ignore = (".venv/", "venv/", "__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/")
    return Project("python", "Python", "python3", args, (*ignore, "*.egg-info/"))


def _javascript(names: frozenset[str]) -> Project:
    typescript = "tsconfig.json" in names
    language, label = ("typescript", "TypeScript") if typescript else ("javascript", "JavaScript")
    return Project(language, label, "npm", ("test",), (".next/", ".cache/"))


def artifact_name(folder: str) -> str:
    """A valid Artifact name from the repository's folder name."""
    name = _INVALID_NAME_CHARS.sub("-", folder).lstrip("_-")[:NAME_MAX_CHARS]
    return name or FALLBACK_NAME


def _toml(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _array(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_toml(v) for v in values) + "]"


def declaration_text(project: Project, name: str, readme: str | None) -> str:
    """The starter ``index.artf``."""
    others = (
        f"# Also found: {', '.join(project.others)}; add a runtime eval for each.\n"
        if project.others
        else ""
    )
    human_tools = (
        f'\n[views.human_tools]\nreadme = {{ builtin = "read", args = [{_toml(readme)}] }}\n'
        if readme is not None
        else ""
    )
    command = f"{project.test_command} {' '.join(project.test_args)}"
    return f"""# Written by `artifactize init` for a {project.label} project: a starting point to edit.
# The whole format: docs/declarations.md. Check it with `artifactize config check`.
{others}name = {_toml(name)}
tags = ["type:repo", "lang:{project.language}"]

# What an Agent reviewer may read, through read-only tools (published as read_{name}, …).
[views.agent_tools]
read = {{ builtin = "read" }}
list = {{ builtin = "list" }}
grep = {{ builtin = "grep" }}
glob = {{ builtin = "glob" }}
{human_tools}
# A runtime eval: `{command}` in the repository; exit 0 is GREEN.
[evals.tests]
title = "The tests pass"
profile = {{ kind = "runtime", command = {_toml(project.test_command)}, args = {_array(project.test_args)}, timeout_ms = 600000 }}
payload.instruction = "Run the tests of {{{name}}}."

# An Agent eval: needs OPENAI_API_KEY (or change backend and model).
[evals.review]
title = "The code is correct and simple"
profile = {{ kind = "agent", backend = "openai", model = "gpt-5.1", reasoning = "medium" }}
payload.instruction = "Review {{{name}}} for correctness and simplicity. Read the code with the tools; answer GREEN when you find no real problem."
pass_schema = {{ type = "object", required = ["summary"], properties = {{ summary = {{ type = "string", minLength = 1 }} }} }}
fail_schema = {{ type = "object", required = ["problems"], properties = {{ problems = {{ type = "array", minItems = 1, items = {{ type = "string", minLength = 1 }} }} }} }}

# A Human sign-off: `verify` asks a person; `artifactize request claim/submit` or `review`.
[evals.signoff]
title = "A maintainer approves this version"
profile = {{ kind = "human" }}
payload.instruction = "Look at {{{name}}} and approve it if it can ship."
pass_schema = {{ type = "object", required = ["approved"], properties = {{ approved = {{ const = true }} }} }}
fail_schema = {{ type = "object", required = ["reason"], properties = {{ reason = {{ type = "string", minLength = 1 }} }} }}
"""


def ignore_text(project: Project) -> str:
    """The starter ``.artfignore`` (gitignore syntax): build output and caches."""
    lines = "\n".join([*project.ignore, *COMMON_IGNORE])
    return (
        "# Written by `artifactize init`: what discovery and fingerprints skip (gitignore\n"
        "# syntax). .git and node_modules are never entered.\n"
        f"{lines}\n"
    )


def readme_of(names: frozenset[str]) -> str | None:
    return next((name for name in README_NAMES if name in names), None)
