"""What ``artifactize init`` writes: a starter ``index.artf`` and ``.artfignore`` for a project.

Pure: the caller lists the repository root, reads a few small marker files and says which
PROBES exist; this module detects the project (Python, JavaScript/TypeScript, Rust, Go or
Java, in that order when several match) and renders the two files. The declaration holds
what a team needs on day one: the read-only built-ins (``read``, ``list``, ``grep``,
``glob``), a runtime eval that runs the project's tests with the project's own toolchain, an
Agent eval and a Human sign-off with small pass/fail schemas.

The runtime eval never guesses an interpreter: a Python project's tests run with its own
venv (``:/.venv/bin/python``, a program from the repository's root), a Node project's with
its package manager's ``test`` script (which puts ``node_modules/.bin`` first), a Gradle or
Maven project's with its wrapper (``:/gradlew``), a Rust or Go project's with ``cargo`` or
``go``. When it cannot tell (no venv, a Poetry or Hatch environment kept elsewhere, no test
script), the eval is written commented out under a note saying what to fill in, and
``config check`` accepts the rest as written.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

NAME_MAX_CHARS = 64  # an Artifact name: [A-Za-z0-9][A-Za-z0-9_-]{0,63}
FALLBACK_NAME = "project"
DECLARATION = "index.artf"
IGNORE_FILE = ".artfignore"
README_NAMES = ("README.md", "README.rst", "README.txt", "README")
NOTHING_DETECTED = (
    "No Python, JavaScript/TypeScript, Rust, Go or Java project found in {repo} (looked for "
    "pyproject.toml, setup.py, setup.cfg, requirements.txt, package.json, Cargo.toml, "
    "go.mod, gradlew, build.gradle, mvnw and pom.xml); write index.artf by hand "
    "(docs/declarations.md)."
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


# Paths below the root whose presence (a file or a link: a venv's python is a link) tells
# which interpreter the project's tests run with; the caller checks each (lexists).
PROBES = (
    ".venv/bin/python",
    "venv/bin/python",
    ".venv/Scripts/python.exe",
    "venv/Scripts/python.exe",
)
# Paths whose presence says the project's tests run with pytest even when no marker file
# names it (packaging's sdist: pytest-style tests, pytest only in tests/requirements.txt):
# pytest installed in the project's own venv, or a conftest.py in its tests folder. unittest
# would find no test there and, before Python 3.12, exit 0: a false GREEN.
PYTEST_PROBES = (
    ".venv/bin/pytest",
    "venv/bin/pytest",
    ".venv/Scripts/pytest.exe",
    "venv/Scripts/pytest.exe",
    "tests/conftest.py",
    "test/conftest.py",
)
# What npm writes into a new package.json: a test script that always fails.
NPM_PLACEHOLDER_TEST = "no test specified"

NO_VENV = (
    "No virtual environment found (.venv or venv). Create the project's own and install it\n"
    "# there (python3 -m venv .venv && .venv/bin/python -m pip install -e .), then uncomment.\n"
    "# A bare python3 would run whatever python3 comes first on PATH, not the project's."
)
MANAGED_VENV = (
    "{manager} keeps this project's virtual environment outside the repository. Make it\n"
    "# live in .venv ({how}) and uncomment, or put the absolute path that\n"
    "# `{find}` prints in `command`."
)
UV_SYNC = "Create .venv first: uv sync (uv keeps the project's environment in .venv)."
NO_NPM_TEST = 'package.json has no test script: add one ("scripts": {"test": ...}) and uncomment.'
NO_WRAPPER = (
    "No {wrapper} found: name the project's own build tool (:/{wrapper} once it is committed,\n"
    "# or an absolute path) and uncomment."
)


@dataclass(frozen=True)
class Project:
    """A detected project: its language tag, how its tests run, what discovery skips.

    ``test_command`` is None when init cannot tell which program runs the project's tests
    with the project's own toolchain; ``note`` then says what to fill in (and the eval is
    written commented out), else it may add a step to take first."""

    language: str  # python | javascript | typescript | rust | go | java
    label: str  # what a person reads: "Python", "JavaScript", …
    test_command: str | None
    test_args: tuple[str, ...]
    ignore: tuple[str, ...]
    others: tuple[str, ...] = ()  # other languages found too (named in a comment)
    note: str | None = None


COMMON_IGNORE = ("dist/", "build/", "coverage/", ".idea/", ".vscode/")


def detect(
    names: frozenset[str], texts: Mapping[str, str], present: frozenset[str] = frozenset()
) -> Project | None:
    """The project at a root holding ``names`` (file and folder names), whose marker files
    (MARKER_FILES) read ``texts`` and where the PROBES and PYTEST_PROBES in ``present``
    exist; None when nothing matches."""
    found: list[Project] = []
    if names & {"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"}:
        found.append(_python(names, texts, present))
    if "package.json" in names:
        found.append(_javascript(names, texts.get("package.json", "")))
    if "Cargo.toml" in names:
        found.append(Project("rust", "Rust", "cargo", ("test",), ("target/",)))
    if "go.mod" in names:
        found.append(Project("go", "Go", "go", ("test", "./..."), ("vendor/",)))
    if names & {"gradlew", "build.gradle", "build.gradle.kts", "mvnw", "pom.xml"}:
        found.append(_jvm(names))
    if not found:
        return None
    first, *rest = found
    return dataclasses.replace(first, others=tuple(p.label for p in rest))


def _python(names: frozenset[str], texts: Mapping[str, str], present: frozenset[str]) -> Project:
    uses_pytest = (
        "conftest.py" in names
        or any("pytest" in text for text in texts.values())
        or any(probe in present for probe in PYTEST_PROBES)
    )
    args = ("-m", "pytest", "-q") if uses_pytest else ("-m", "unittest", "discover", "-v")
    ignore = (
        ".venv",  # no trailing slash: a venv linked from elsewhere too (`.venv/` matches
        "venv",  # only a folder, and the fingerprint refuses a link it does not ignore)
        "__pycache__/",
        "*.pyc",
        ".pytest_cache/",
        ".mypy_cache/",
        ".hypothesis/",
        ".tox/",
        ".nox/",
        "*.egg-info/",
        ".coverage",  # coverage.py (pytest-cov): its data files and report, written by a
        ".coverage.*",  # test run into the repository, which the recheck would see change
        "htmlcov/",
    )
    venv = next((probe for probe in PROBES if probe in present), None)
    if venv is not None:
        return Project("python", "Python", f":/{venv}", args, ignore)
    pyproject = texts.get("pyproject.toml", "")
    if "uv.lock" in names or "[tool.uv" in pyproject:
        return Project("python", "Python", ":/.venv/bin/python", args, ignore, note=UV_SYNC)
    if "poetry.lock" in names or "[tool.poetry" in pyproject:
        how = "poetry config virtualenvs.in-project true && poetry install"
        note = MANAGED_VENV.format(manager="Poetry", how=how, find="poetry env info --executable")
        return Project("python", "Python", None, args, ignore, note=note)
    if "hatch.toml" in names or "[tool.hatch" in pyproject:
        how = "hatch config set dirs.env.virtual .venv"
        note = MANAGED_VENV.format(manager="Hatch", how=how, find="hatch env find")
        return Project("python", "Python", None, args, ignore, note=note)
    return Project("python", "Python", None, args, ignore, note=NO_VENV)


def _javascript(names: frozenset[str], package_json: str) -> Project:
    typescript = "tsconfig.json" in names
    language, label = ("typescript", "TypeScript") if typescript else ("javascript", "JavaScript")
    # node_modules is a built-in ignore only as a folder; a link to one kept elsewhere would
    # fail the fingerprint. coverage/ and .nyc_output/: what nyc, c8 and jest write.
    ignore = ("node_modules", ".next/", ".cache/", "coverage/", ".nyc_output/")
    if "pnpm-lock.yaml" in names:
        runner = "pnpm"
    elif "yarn.lock" in names:
        runner = "yarn"
    else:
        runner = "npm"
    if not _has_test_script(package_json):
        return Project(language, label, None, ("test",), ignore, note=NO_NPM_TEST)
    # npm runs the script with the project's node_modules/.bin first on PATH: its own jest.
    return Project(language, label, runner, ("test",), ignore)


def _has_test_script(package_json: str) -> bool:
    try:
        data = json.loads(package_json)
    except ValueError:
        return False
    scripts = data.get("scripts") if isinstance(data, dict) else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(test, str) and bool(test.strip()) and NPM_PLACEHOLDER_TEST not in test


def _jvm(names: frozenset[str]) -> Project:
    gradle = bool(names & {"gradlew", "build.gradle", "build.gradle.kts"})
    wrapper = "gradlew" if gradle else "mvnw"
    ignore = ("build/", ".gradle/") if gradle else ("target/",)
    if wrapper in names:  # the project's own wrapper pins its own build tool's version
        return Project("java", "Java", f":/{wrapper}", ("test",), ignore)
    return Project("java", "Java", None, ("test",), ignore, note=NO_WRAPPER.format(wrapper=wrapper))


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
    runtime = _runtime_eval(project, name)
    return f"""# Written by `artifactize init` for a {project.label} project: a starting point to edit.
# The whole format: docs/declarations.md. Check it with `artifactize config check`.
{others}name = {_toml(name)}
tags = ["type:repo", "lang:{project.language}"]
# The fingerprint (what reuse compares) skips what .gitignore files list, and these: the
# project's own environment, build and coverage output, which running its tests may change.
fingerprint = {{ files = ["."], ignore = {_array(project.ignore)} }}

# What an Agent reviewer may read, through read-only tools (published as read_{name}, …).
[views.agent_tools]
read = {{ builtin = "read" }}
list = {{ builtin = "list" }}
grep = {{ builtin = "grep" }}
glob = {{ builtin = "glob" }}
{human_tools}
{runtime}
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


def _runtime_eval(project: Project, name: str) -> str:
    """The runtime eval block: the project's own test command, or, when init cannot tell
    which program that is, the block commented out below what to fill in."""
    command = project.test_command or "FILL IN"
    shown = " ".join((command, *project.test_args))
    block = (
        "[evals.tests]\n"
        'title = "The tests pass"\n'
        f'profile = {{ kind = "runtime", command = {_toml(command)}, '
        f"args = {_array(project.test_args)}, timeout_ms = 600000 }}\n"
        f'payload.instruction = "Run the tests of {{{name}}}."\n'
    )
    head = (
        f"# A runtime eval: `{shown}` in the repository; exit 0 is GREEN. A program written\n"
        "# :/path is the project's own, from the repository's root (docs/runtime-evals.md).\n"
    )
    if project.test_command is None:
        commented = "".join(f"# {line}\n" for line in block.splitlines())
        return f"{head}# TO FILL IN: {project.note}\n{commented}"
    note = f"# {project.note}\n" if project.note else ""
    return head + note + block


def ignore_text(project: Project) -> str:
    """The starter ``.artfignore`` (gitignore syntax): build output and caches, for
    discovery only (each listed once)."""
    lines = "\n".join(dict.fromkeys([*project.ignore, *COMMON_IGNORE]))
    return (
        "# Written by `artifactize init`: what discovery skips (gitignore syntax). .git and\n"
        "# node_modules are never entered. What reuse compares skips what .gitignore files\n"
        "# list and the fingerprint's own ignore list in index.artf, not this file.\n"
        f"{lines}\n"
    )


def readme_of(names: frozenset[str]) -> str | None:
    return next((name for name in README_NAMES if name in names), None)
