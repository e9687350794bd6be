"""A program of the project outside the eval's scope, named from the workspace root (``:/``),
and what ``config check`` resolves before anything runs (domain/project/program_checks.py)."""

from __future__ import annotations

import pytest

from artifactize.domain.declarations.diagnostics import ConfigError, NotReady
from artifactize.domain.project.program_checks import MemoProgramFinder, ProgramChecks
from artifactize.domain.project.program_paths import workspace_program
from artifactize.domain.project.runtime_programs import FROM_ROOT_HINT, program_problem
from artifactize.domain.project.scope import eval_scope
from artifactize.domain.project.workspace import Workspace
from artifactize.domain.tools.commands.prep import WORKSPACE_PROGRAM_RULE, CommandResolver
from artifactize.domain.tools.results import ToolError
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.entrypoints.cli.render.config import summary_text
from artifactize.ports.programs import ProgramFinder, ProgramIdentity
from tests.fakes.filesystem import MemoryFilesystem, Node, Special, Symlink
from tests.fakes.processes import FakePrograms

ENV = {"PATH": "/usr/bin"}

APP = b"""name = "app"

[evals.tests]
title = "The tests pass"
profile = { kind = "runtime", command = ":/.venv/bin/python", args = ["-m", "pytest"] }
payload.instruction = "Run the tests."
"""


def tree(**extra: Node) -> dict[str, Node]:
    return {
        "index.artf": b'name = "root"\n',
        ".venv": {"bin": {"python": Symlink("/usr/bin/python3.12"), "pytest": b"#!x\n"}},
        "node_modules": {".bin": {"jest": Symlink("../jest/bin/jest.js")}},
        "gradlew": b"#!/bin/sh\n",
        "app": {"index.artf": APP},
        **extra,
    }


def resolver(
    repo: dict[str, Node], programs: FakePrograms | None = None
) -> tuple[CommandResolver, Workspace]:
    filesystem = MemoryFilesystem({"/repo": repo})
    workspace = ConfigService(filesystem).load("/repo")
    scope = eval_scope(workspace, "app/tests")
    return CommandResolver(workspace, filesystem, programs or FakePrograms(), ENV, scope), workspace


def program(command: str, repo: dict[str, Node] | None = None, **kwargs: FakePrograms) -> str:
    found, workspace = resolver(tree() if repo is None else repo, **kwargs)
    return found.program(workspace.artifact("app"), command)


def test_the_form_is_a_colon_slash_prefix() -> None:
    assert workspace_program(":/.venv/bin/python") == ".venv/bin/python"
    assert workspace_program("./run.sh") is None
    assert workspace_program("/usr/bin/python3") is None
    assert workspace_program("python3") is None


@pytest.mark.parametrize(
    ("command", "resolved"),
    [
        # a venv's interpreter is a link to the one it was made from: the link is run
        (":/.venv/bin/python", "/repo/.venv/bin/python"),
        (":/.venv/bin/pytest", "/repo/.venv/bin/pytest"),
        (":/node_modules/.bin/jest", "/repo/node_modules/.bin/jest"),
        (":/gradlew", "/repo/gradlew"),
    ],
)
def test_a_program_outside_the_scope_from_the_workspace_root(command: str, resolved: str) -> None:
    assert program(command) == resolved


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        (":/tools/run", "tools is a symbolic link"),  # a linked folder could leave the workspace
        (":/.venv/bin/nope", ".venv/bin/nope does not exist"),
        (":/missing/run", "missing does not exist"),
        (":/gradlew/x", "gradlew is not a folder"),
        (":/.venv/bin", ".venv/bin is not a file"),
        (":/pipe", "pipe is not a file"),
        (":/../etc/passwd", "not a safe path from the workspace root (no `.`, `..` or `//`)"),
        (":/.venv/./bin/python", "not a safe path from the workspace root (no `.`, `..` or `//`)"),
        (":/", "not a safe path from the workspace root (no `.`, `..` or `//`)"),
    ],
)
def test_refusals_name_the_rule(command: str, problem: str) -> None:
    repo = tree(tools=Symlink("/opt/elsewhere"), pipe=Special())
    with pytest.raises(ToolError) as caught:
        program(command, repo)
    assert caught.value.message == f"Program {command}: {problem}; {WORKSPACE_PROGRAM_RULE}."


def test_a_program_that_is_not_executable_is_refused() -> None:
    with pytest.raises(ToolError, match="gradlew is not an executable file"):
        program(":/gradlew", programs=FakePrograms(missing=frozenset({"gradlew"})))


def test_a_relative_path_outside_the_scope_suggests_the_root_form() -> None:
    found, workspace = resolver(tree())
    app = workspace.artifact("app")
    with pytest.raises(ToolError) as caught:
        found.program(app, "../.venv/bin/python")
    message = program_problem(app, "../.venv/bin/python", caught.value, windows=False)
    assert message.endswith(FROM_ROOT_HINT.format(path=".venv/bin/python"))
    # above the workspace root there is nothing to suggest
    assert program_problem(app, "../../x", caught.value, windows=False).endswith("../../x")


def checks(repo: dict[str, Node], programs: FakePrograms | None = None) -> ConfigService:
    filesystem = MemoryFilesystem({"/repo": repo})
    found = ProgramChecks(filesystem, programs or FakePrograms(missing=frozenset({"pyhton3"})), ENV)
    return ConfigService(filesystem, programs=found)


BROKEN = b"""name = "app"

[evals.tests]
title = "The tests pass"
profile = { kind = "runtime", command = "pyhton3", args = ["-m", "pytest", "{app}/test_nope.py"] }
payload.instruction = "Run the tests."

[views.human_tools]
guide = { builtin = "read", args = ["guide.md"] }
open_it = { command = "pyhton3", args = ["x"], description = "Open it.", kind = "launch" }

[views.agent_tools.lint]
description = "Lint {artifactName}."
protocol = "plain"
command = "pyhton3"
args = []
"""


def test_config_check_reports_each_missing_program_and_file_with_its_line() -> None:
    with pytest.raises(NotReady) as caught:
        checks(tree(app={"index.artf": BROKEN})).check("/repo")
    assert isinstance(caught.value, ConfigError)  # rendered like a declaration error
    assert [(p.line, p.key_path, p.message) for p in caught.value.problems] == [
        (
            5,
            "evals.tests.profile.args[2]",
            "Runtime argument {app}/test_nope.py cannot be "
            "resolved: Artifact input does not exist: test_nope.py",
        ),
        (
            5,
            "evals.tests.profile.command",
            "Runtime command is unavailable or outside the eval's scope: pyhton3",
        ),
        (9, "views.human_tools.guide", "Fixed target 'guide.md' does not exist in app."),
        (10, "views.human_tools.open_it", "Tool executable is unavailable: pyhton3"),
        (15, "views.agent_tools.lint.command", "Tool executable is unavailable: pyhton3"),
    ]
    assert {p.file for p in caught.value.problems} == {"app/index.artf"}


def test_a_runtime_program_on_artifactizes_own_interpreter_is_a_warning() -> None:
    own = b"""name = "app"

[evals.tests]
title = "The tests pass"
profile = { kind = "runtime", command = "python3", args = [] }
payload.instruction = "Run the tests."
"""
    programs = FakePrograms(own=frozenset({"/usr/bin/python3"}))
    data = checks(tree(app={"index.artf": own}), programs).check("/repo")
    (warning,) = data["warnings"]
    assert (warning["file"], warning["line"], warning["keyPath"]) == (
        "app/index.artf",
        5,
        "evals.tests.profile.command",
    )
    assert "runs on artifactize's own interpreter" in warning["message"]
    assert summary_text(data).startswith(
        "warning: app/index.artf:5: evals.tests.profile.command: /usr/bin/python3 runs on"
    )
    # the project's own venv is not artifactize's: no warning
    assert "warnings" not in checks(tree(), programs).check("/repo")


class CountingPrograms:
    """A finder whose answers depend on every argument, counting the questions asked."""

    windows_paths = False

    def __init__(self) -> None:
        self.asked: list[tuple[str, ...]] = []

    def find_on_path(self, name: str, path_variable: str, cwd: str) -> str | None:
        self.asked.append(("find", name, path_variable, cwd))
        relative = any(e and not e.startswith("/") for e in path_variable.split(":"))
        return f"{cwd if relative else ''}/bin/{name}" if name != "nope" else None

    def is_executable_file(self, path: str) -> bool:
        self.asked.append(("exec", path))
        return not path.endswith("nope")

    def identity(self, path: str) -> ProgramIdentity:
        self.asked.append(("identity", path))
        return ProgramIdentity(real_path=f"/real{path}", own_environment=False)


QUESTIONS = [
    ("find", "true", "/usr/bin:/bin", "/repo/a"),
    ("find", "true", "/usr/bin:/bin", "/repo/b"),  # absolute PATH: the folder does not count
    ("find", "true", "/usr/bin::tools", "/repo/a"),  # a relative entry: the folder counts
    ("find", "true", "/usr/bin::tools", "/repo/b"),
    ("find", "nope", "/usr/bin", "/repo/a"),
    ("exec", "/opt/x"),
    ("exec", "/opt/nope"),
    ("identity", "/usr/bin/true"),
]


def ask(finder: ProgramFinder, question: tuple[str, ...]) -> object:
    kind, *args = question
    if kind == "find":
        return finder.find_on_path(*args)
    if kind == "exec":
        return finder.is_executable_file(*args)
    return finder.identity(*args)


def test_the_memo_answers_as_the_finder_and_asks_each_question_once() -> None:
    plain, memo_behind = CountingPrograms(), CountingPrograms()
    memo = MemoProgramFinder(memo_behind)
    for _ in range(3):
        for question in QUESTIONS:
            assert ask(memo, question) == ask(plain, question)
    assert len(plain.asked) == 3 * len(QUESTIONS)
    # Once each, but for the absolute PATH whose two folders are one question.
    assert len(memo_behind.asked) == len(QUESTIONS) - 1
    assert ProgramChecks(MemoryFilesystem({}), memo_behind, ENV).memoized().programs is not (
        memo_behind
    )


def test_config_check_resolves_each_program_once() -> None:
    apps = {
        f"app{i}": {"index.artf": APP.replace(b'"app"', f'"app{i}"'.encode())} for i in range(5)
    }
    filesystem = MemoryFilesystem({"/repo": tree(**apps)})
    workspace = ConfigService(filesystem).load("/repo")
    counting = CountingPrograms()
    ProgramChecks(filesystem, counting, ENV).check(workspace)
    identities = [q for q in counting.asked if q[0] == "identity"]
    assert identities and len(identities) == len(set(identities))
