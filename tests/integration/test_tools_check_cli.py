"""``artifactize tools check`` through the real CLI: acceptance cases M and the seed's
"Tool diagnostics" examples.

Every case runs the CLI in this process through ``tests/support/cli.py`` (the console
script's global-option splitting, typer dispatch and error formatting). Every run points
the state home into ``tmp_path``: a static check must create nothing anywhere, and no check
may leave a Run, verdict, cache entry or any other state file behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli as in_process
from tests.support.processes import no_process_left_behind as no_process_left_behind_in
from tests.support.workspaces import entries_under

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "handbook"

NOT_REGISTERED = "The selected tool is not registered for this Artifact and audience."
RETURNED_ERROR = "The tool returned an error; no review result was created."
ARGS_NEED_AGENT = "--args requires Agent tool execution; Human tools take no free arguments."
EVAL_SELECTOR = "An eval selector determines scope and audience"
EXECUTE_NEEDS = "--execute requires"
HUMAN_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}
DEFAULT_SCHEMA = {"type": "object", "additionalProperties": False}
COMMAND_TOOLS_LATER = "command tools: next issue"

MARKER_SCRIPT = (
    "import os\n"
    "here = os.path.dirname(os.path.abspath(__file__))\n"
    "open(os.path.join(here, 'spawned'), 'w').close()\n"
    'print(\'{"content":[{"type":"text","text":"ran"}]}\')\n'
)

AGENT_EVAL = """
[evals.review]
title = "Review"
profile = { kind = "agent", backend = "openai", model = "test" }
payload.instruction = "INSTRUCTION"
"""

HUMAN_EVAL = """
[evals.check]
title = "Check"
profile = { kind = "human" }
payload.instruction = "Check."
"""

RUNTIME_EVAL = """
[evals.runs]
title = "Runs"
profile = { kind = "runtime", command = "true", args = [] }
payload.instruction = "Runs."
"""


def agent_eval(instruction: str = "Review.") -> str:
    return AGENT_EVAL.replace("INSTRUCTION", instruction)


def fx_c(root: Path, command: str = "python3") -> Path:
    """FX-C: ``root`` itself is Artifact ``a`` with the json command tool ``inspect``."""
    root.mkdir(parents=True)
    (root / "index.artf").write_text(
        'name = "a"\n'
        "\n"
        "[views.agent_tools.inspect]\n"
        'description = "Inspect {artifactName}"\n'
        'protocol = "json"\n'
        f'command = "{command}"\n'
        'args = ["tool.py"]\n' + agent_eval(),
        encoding="utf-8",
    )
    (root / "tool.py").write_text(MARKER_SCRIPT, encoding="utf-8")
    return root


def full(root: Path) -> Path:
    """Artifact ``a`` (``W/a``) with built-ins, a json tool, Human tools, a child ``child``,
    and evals of every kind; ``a/review`` also references ``b`` (``W/b``)."""
    (root / "a" / "child").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "index.artf").write_text(
        'name = "a"\n'
        "\n"
        "[views.agent_tools]\n"
        'read = { builtin = "read" }\n'
        'list = { builtin = "list" }\n'
        "\n"
        "[views.agent_tools.inspect]\n"
        'description = "Inspect {artifactName}"\n'
        'protocol = "json"\n'
        'command = "python3"\n'
        'args = ["tool.py"]\n'
        'input_schema = { type = "object", properties = { n = { type = "integer" } }, '
        "additionalProperties = false }\n"
        "\n"
        "[views.human_tools]\n"
        'guide = { builtin = "read", args = ["guide.md"] }\n'
        "\n"
        "[views.human_tools.inspect]\n"
        'description = "Inspect {artifactName} by hand."\n'
        'kind = "output"\n'
        'command = "python3"\n'
        'args = ["tool.py"]\n' + agent_eval("Review {b}.") + HUMAN_EVAL + RUNTIME_EVAL,
        encoding="utf-8",
    )
    (root / "a" / "tool.py").write_text(MARKER_SCRIPT, encoding="utf-8")
    (root / "a" / "guide.md").write_text("# Guide\nDivide carefully.\n", encoding="utf-8")
    (root / "a" / "child" / "index.artf").write_text(
        'name = "child"\n\n[views.agent_tools]\nlist = { builtin = "list" }\n', encoding="utf-8"
    )
    (root / "b" / "index.artf").write_text(
        'name = "b"\n\n[views.agent_tools]\nread = { builtin = "read" }\n', encoding="utf-8"
    )
    return root


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under ``root``, without following links."""
    return {".": (os.lstat(root).st_mtime_ns,), **entries_under(root)}


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if not p.is_dir()] if root.exists() else []


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str

    @property
    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(json.loads(self.out))
        return data

    def check(self, stage: str, tool: str | None = None) -> dict[str, Any]:
        found = [c for c in self.report["checks"] if c["stage"] == stage and c["tool"] == tool]
        assert len(found) == 1, self.report["checks"]
        check: dict[str, Any] = found[0]
        return check


@dataclass(frozen=True)
class Env:
    tmp: Path
    state: Path
    xdg: Path
    home: Path

    def assert_no_state(self) -> None:
        assert not self.state.exists(), "a static check created the state home"
        assert not self.xdg.exists()
        assert list(self.home.iterdir()) == []

    def assert_no_state_files(self) -> None:
        """An executed check may use scratch space, but leaves no Run/state file behind."""
        for location in (self.state, self.xdg, self.home):
            assert files_under(location) == [], location


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    home = tmp_path / "home"
    home.mkdir()
    found = Env(tmp_path, tmp_path / "state", tmp_path / "xdg-state", home)
    for key in [k for k in os.environ if k.startswith("ARTIFACTIZE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ARTIFACTIZE_STATE_HOME", str(found.state))
    monkeypatch.setenv("XDG_STATE_HOME", str(found.xdg))
    monkeypatch.setenv("HOME", str(home))
    # A desktop opener, as a reviewer's machine has one: static checks of `open` look for it.
    opener = tmp_path / "desktop-bin"
    opener.mkdir()
    (opener / "xdg-open").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    (opener / "xdg-open").chmod(0o755)
    monkeypatch.setenv("PATH", f"{opener}{os.pathsep}{os.environ['PATH']}")
    return found


@pytest.fixture(scope="module", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    with no_process_left_behind_in(grace=2):
        yield


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> Outcome:
    """``artifactize ARGS`` in process (``capsys`` is no longer needed; kept for the callers)."""
    result = in_process(*args)
    return Outcome(result.code, result.stdout, result.stderr)


def run_cli(env: Env, *args: str) -> Outcome:
    """The same, from the test's own folder (the fixture already pointed the state
    locations at it)."""
    result = in_process(*args, cwd=env.tmp)
    return Outcome(result.code, result.stdout, result.stderr)


# --- M. tools check -------------------------------------------------------------------------


def test_CHK_01_static_report_runs_nothing(env: Env):
    root = fx_c(env.tmp / "W")
    before = snapshot(root)
    run = run_cli(env, "tools", "check", "--repo", str(root))
    assert (run.code, run.err) == (0, "")
    assert run.report == {
        "ok": True,
        "scopes": [
            {
                "evalId": "a/review",
                "artifactId": None,
                "audience": "agent",
                "tools": [
                    {
                        "name": "inspect_a",
                        "artifactId": "a",
                        "description": "Inspect a",
                        "inputSchema": DEFAULT_SCHEMA,
                    }
                ],
            }
        ],
        "checks": [{"stage": "preflight", "tool": "inspect_a", "ok": True, "message": None}],
        "byScope": [  # issue 12: the checks grouped by scope
            {
                "scope": "eval a/review",
                "evalId": "a/review",
                "artifactId": None,
                "audience": "agent",
                "ok": True,
                "checks": [
                    {"stage": "preflight", "tool": "inspect_a", "ok": True, "message": None}
                ],
            }
        ],
    }
    assert not (root / "spawned").exists()
    assert snapshot(root) == before
    env.assert_no_state()


def test_CHK_01_static_check_of_every_kind_creates_nothing(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    root = full(env.tmp / "W")
    before = snapshot(root)
    state_dir = env.tmp / "explicit-state"
    for args in (
        (),
        ("--json",),
        ("a/review",),
        ("a/check",),
        ("--artifact", "a"),
        ("--audience", "human"),
        ("--artifact", "a", "--audience", "human", "--tool", "inspect"),
        ("--state-dir", str(state_dir)),
    ):
        run = cli(capsys, "--repo", str(root), "tools", "check", *args)
        assert (run.code, run.err) == (0, ""), args
        assert run.report["ok"] is True
        assert "result" not in run.report
    assert not (root / "a" / "spawned").exists()
    assert snapshot(root) == before
    assert not state_dir.exists()
    env.assert_no_state()


def test_CHK_02_missing_executable(env: Env, capsys: pytest.CaptureFixture[str]):
    root = fx_c(env.tmp / "W", command="nonexistent-xyz")
    run = cli(capsys, "--repo", str(root), "tools", "check")
    assert run.code == 1
    assert run.report["ok"] is False
    check = run.check("preflight", "inspect_a")
    assert check["ok"] is False
    assert "Tool executable is unavailable: nonexistent-xyz" in check["message"]
    env.assert_no_state()


def test_CHK_02_missing_executable_in_a_subfolder_of_the_owner(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    root = fx_c(env.tmp / "W", command="bin/missing")
    run = cli(capsys, "--repo", str(root), "tools", "check")
    assert run.code == 1
    assert run.check("preflight", "inspect_a")["ok"] is False


INVOCATION_ERRORS = [
    (("a/review", "--artifact", "a"), EVAL_SELECTOR),
    (("a/review", "--audience", "agent"), EVAL_SELECTOR),
    (("--eval", "a/review", "--artifact", "a"), EVAL_SELECTOR),
    (("a/review", "--eval", "a/review"), "--eval"),
    (("--execute", "--artifact", "a", "--tool", "inspect"), EXECUTE_NEEDS),
    (("--execute", "--artifact", "a", "--audience", "agent"), EXECUTE_NEEDS),
    (("--execute", "--audience", "agent", "--tool", "read"), EXECUTE_NEEDS),
    (("--execute",), EXECUTE_NEEDS),
    (("--execute", "--eval", "a/review"), EXECUTE_NEEDS),
    (("--artifact", "a", "--audience", "agent", "--tool", "read", "--args", "{}"), ARGS_NEED_AGENT),
    (("--args", "{}"), ARGS_NEED_AGENT),
    (
        ("--execute", "--artifact", "a", "--audience", "human", "--tool", "guide", "--args", "{}"),
        ARGS_NEED_AGENT,
    ),
    (("--execute", "--eval", "a/check", "--tool", "guide_a", "--args", "{}"), ARGS_NEED_AGENT),
    (
        ("--execute", "--artifact", "a", "--audience", "agent", "--tool", "read", "--args", "{bad"),
        "Invalid --args JSON",
    ),
    (
        ("--execute", "--artifact", "a", "--audience", "agent", "--tool", "read", "--args", "[]"),
        "Invalid --args JSON",
    ),
    (("--artifact", "nope"), "Unknown Artifact: nope"),
    (("--artifact", "nope", "--audience", "agent"), "Unknown Artifact: nope"),
    (("a/runs", "--execute", "--tool", "x"), "A runtime eval is checked statically"),
    (("--eval", "a/missing"), "Unknown eval: a/missing"),
    (("--artifact", "a", "--audience", "robot"), "--audience"),
]


@pytest.mark.parametrize(
    ("args", "message"), INVOCATION_ERRORS, ids=[" ".join(a) for a, _ in INVOCATION_ERRORS]
)
def test_CHK_03_invocation_errors_exit_2(
    env: Env, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
):
    root = full(env.tmp / "W")
    before = snapshot(root)
    run = cli(capsys, "--repo", str(root), "tools", "check", *args)
    assert run.code == 2
    assert run.out == ""
    assert run.err.startswith("error: ") and message in run.err
    as_json = cli(capsys, "--repo", str(root), "--json", "tools", "check", *args)
    assert as_json.code == 2
    assert message in as_json.report["error"]
    assert snapshot(root) == before
    env.assert_no_state()


def test_CHK_03_invocation_error_as_a_subprocess(env: Env):
    root = fx_c(env.tmp / "W")
    run = run_cli(env, "--repo", str(root), "tools", "check", "a/review", "--artifact", "a")
    assert run.code == 2
    assert run.out == ""
    assert EVAL_SELECTOR in run.err
    run = run_cli(
        env, "--repo", str(root), "tools", "check", "--execute", "--artifact", "a", "--tool", "x"
    )
    assert run.code == 2 and EXECUTE_NEEDS in run.err
    env.assert_no_state()


def test_CHK_04_execute_an_agent_tool(env: Env):
    root = full(env.tmp / "W")
    run = run_cli(
        env,
        "--repo",
        str(root),
        "tools",
        "check",
        "--execute",
        "--artifact",
        "a",
        "--audience",
        "agent",
        "--tool",
        "read",
        "--args",
        '{"path":"index.artf"}',
    )
    assert (run.code, run.err) == (0, "")
    report = run.report
    assert report["ok"] is True
    assert report["result"]["content"][0]["type"] == "json"
    data = report["result"]["content"][0]["data"]
    assert data["artifactId"] == "a" and data["path"] == "index.artf"
    assert "isError" not in report["result"]
    assert run.check("execute", "read_a") == {
        "stage": "execute",
        "tool": "read_a",
        "ok": True,
        "message": None,
    }
    assert [s["tools"][0]["name"] for s in report["scopes"]] == ["read_a"]
    env.assert_no_state_files()


def test_CHK_04_execute_defaults_to_empty_arguments(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--artifact", "a",
        "--audience", "agent", "--tool", "list",
    )  # fmt: skip
    assert run.code == 0
    names = [e["name"] for e in run.report["result"]["content"][0]["data"]["entries"]]
    assert names == ["child", "guide.md", "index.artf", "tool.py"]
    env.assert_no_state_files()


def test_CHK_04_execute_of_a_tool_that_errors(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--artifact", "a",
        "--audience", "agent", "--tool", "read", "--args", '{"path":"missing.md"}',
    )  # fmt: skip
    assert run.code == 1
    assert run.report["ok"] is False
    assert run.report["result"]["isError"] is True
    assert run.report["result"]["content"] == [
        {"type": "text", "text": 'No "missing.md" in Artifact a.'}
    ]
    assert run.check("execute", "read_a")["message"] == RETURNED_ERROR
    assert run.check("preflight", "read_a")["ok"] is True
    env.assert_no_state_files()


def test_CHK_04_execute_with_arguments_the_schema_refuses(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    root = full(env.tmp / "W")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--artifact", "a",
        "--audience", "agent", "--tool", "read", "--args", '{"path":"guide.md","secret":"s3"}',
    )  # fmt: skip
    assert run.code == 1
    text = run.report["result"]["content"][0]["text"]
    assert text.startswith("Tool arguments do not match the registered input schema.")
    assert "s3" not in text
    assert run.check("execute", "read_a")["message"] == RETURNED_ERROR


def test_CHK_04_execute_runs_only_when_the_tool_is_ready(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    root = fx_c(env.tmp / "W", command="nonexistent-xyz")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--artifact", "a",
        "--audience", "agent", "--tool", "inspect",
    )  # fmt: skip
    assert run.code == 1
    assert "result" not in run.report
    assert [c["stage"] for c in run.report["checks"]] == ["preflight"]


def test_CHK_06_unknown_tool_selection(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--artifact", "a", "--audience", "agent",
        "--tool", "nope",
    )  # fmt: skip
    assert run.code == 1
    assert run.report["ok"] is False
    assert run.check("preflight", "nope") == {
        "stage": "preflight",
        "tool": "nope",
        "ok": False,
        "message": NOT_REGISTERED,
    }
    # A Human tool is not an Agent tool, and an eval names tools as it publishes them.
    for args in (
        ("--artifact", "a", "--audience", "agent", "--tool", "guide"),
        ("--eval", "a/review", "--tool", "read"),
        ("--execute", "--eval", "a/review", "--tool", "nope_a"),
    ):
        run = cli(capsys, "--repo", str(root), "tools", "check", *args)
        assert run.code == 1, args
        assert run.report["checks"][-1]["message"] == NOT_REGISTERED
        assert "result" not in run.report
    env.assert_no_state()


def test_CHK_06_human_schema_display(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--artifact", "a", "--audience", "human"
    )
    assert run.code == 0
    (scope,) = run.report["scopes"]
    assert (scope["evalId"], scope["artifactId"], scope["audience"]) == (None, "a", "human")
    assert [t["name"] for t in scope["tools"]] == ["guide_a", "inspect_a"]
    for tool in scope["tools"]:
        assert tool["inputSchema"] == HUMAN_SCHEMA
        assert tool["kind"] == "output"
    assert scope["tools"][1]["description"] == "Inspect a by hand."
    assert not (root / "a" / "spawned").exists()


def test_CHK_tool_by_short_or_published_name_with_artifact(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    root = full(env.tmp / "W")
    base = ("--repo", str(root), "tools", "check", "--artifact", "a", "--audience", "agent")
    short = cli(capsys, *base, "--tool", "read")
    published = cli(capsys, *base, "--tool", "read_a")
    assert short.code == published.code == 0
    assert short.report == published.report
    assert [t["name"] for t in short.report["scopes"][0]["tools"]] == ["read_a"]
    # The scope of --artifact includes its children: a child's tool by its published name.
    child = cli(capsys, *base, "--tool", "list_child")
    assert child.code == 0
    assert [t["name"] for t in child.report["scopes"][0]["tools"]] == ["list_child"]
    # With an eval, the published name is required.
    by_eval = cli(
        capsys, "--repo", str(root), "tools", "check", "--eval", "a/review", "--tool", "read_b"
    )
    assert by_eval.code == 0
    assert [t["name"] for t in by_eval.report["scopes"][0]["tools"]] == ["read_b"]


def test_CHK_positional_selector_equals_eval(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    for eval_id in ("a/review", "a/check"):
        positional = cli(capsys, "--repo", str(root), "tools", "check", eval_id)
        option = cli(capsys, "--repo", str(root), "tools", "check", "--eval", eval_id)
        assert positional == option
        assert positional.code == 0
        (scope,) = positional.report["scopes"]
        assert scope["evalId"] == eval_id and scope["artifactId"] is None
    review = cli(capsys, "--repo", str(root), "tools", "check", "a/review").report["scopes"][0]
    assert review["audience"] == "agent"
    assert [t["name"] for t in review["tools"]] == [
        "inspect_a",
        "list_a",
        "list_child",
        "read_a",
        "read_b",
    ]


def test_CHK_default_scopes_are_every_agent_and_human_eval(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    root = full(env.tmp / "W")
    run = cli(capsys, "--repo", str(root), "tools", "check")
    assert run.code == 0
    scopes = [(s["evalId"], s["artifactId"], s["audience"]) for s in run.report["scopes"]]
    assert sorted(scopes) == [("a/check", None, "human"), ("a/review", None, "agent")]
    by_artifact = cli(capsys, "--repo", str(root), "tools", "check", "--artifact", "a")
    assert [(s["artifactId"], s["audience"]) for s in by_artifact.report["scopes"]] == [
        ("a", "agent"),
        ("a", "human"),
    ]
    by_audience = cli(capsys, "--repo", str(root), "tools", "check", "--audience", "agent")
    assert sorted(s["artifactId"] for s in by_audience.report["scopes"]) == ["a", "b", "child"]


def test_CHK_broken_declaration_is_a_failed_check_not_a_usage_error(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    root = full(env.tmp / "W")
    (root / "b" / "index.artf").write_text('name = "b"\nbogus = 1\n', encoding="utf-8")
    run = cli(capsys, "--repo", str(root), "tools", "check")
    assert run.code == 1
    assert run.err == ""
    assert run.report["ok"] is False
    assert run.report["scopes"] == []
    (check,) = run.report["checks"]
    assert (check["stage"], check["tool"], check["ok"]) == ("declarations", None, False)
    assert "b/index.artf:2: bogus" in check["message"]
    env.assert_no_state()


def test_CHK_reports_are_json_with_or_without_the_flag(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    root = full(env.tmp / "W")
    plain = cli(capsys, "--repo", str(root), "tools", "check", "a/review")
    flagged = cli(capsys, "--json", "--repo", str(root), "tools", "check", "a/review")
    after = cli(capsys, "--repo", str(root), "tools", "check", "a/review", "--json")
    assert plain == flagged == after
    assert set(plain.report) == {"ok", "scopes", "checks", "byScope"}  # byScope: issue 12
    for check in plain.report["checks"]:
        assert set(check) == {"stage", "tool", "ok", "message"}


def test_CHK_execute_of_a_command_tool_is_a_valid_invocation(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    """The admission half of executing a command tool: valid, selected, preflight ok."""
    root = full(env.tmp / "W")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--eval", "a/review",
        "--tool", "inspect_a", "--args", '{"n":"not a number"}',
    )  # fmt: skip
    assert run.code == 1
    assert run.check("preflight", "inspect_a")["ok"] is True
    assert run.report["result"]["content"][0]["text"].startswith(
        "Tool arguments do not match the registered input schema."
    )
    assert not (root / "a" / "spawned").exists()
    env.assert_no_state_files()


def test_CHK_execute_runs_a_command_tool(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--eval", "a/review",
        "--tool", "inspect_a", "--args", '{"n":1}',
    )  # fmt: skip
    assert run.code == 0
    assert run.report["result"] == {"content": [{"type": "text", "text": "ran"}]}
    assert (root / "a" / "spawned").exists()
    env.assert_no_state_files()


# --- the seed's "Tool diagnostics" examples on the bundled workspace --------------------------


def test_seed_every_agent_and_human_eval_scope(env: Env, capsys: pytest.CaptureFixture[str]):
    before = snapshot(EXAMPLE)
    run = cli(capsys, "--repo", str(EXAMPLE), "tools", "check")
    assert (run.code, run.err) == (0, "")
    scopes = {s["evalId"]: s for s in run.report["scopes"]}
    assert set(scopes) == {"calc/review", "docs/accuracy", "docs/signoff", "architecture/current"}
    assert scopes["docs/signoff"]["audience"] == "human"
    assert [t["name"] for t in scopes["calc/review"]["tools"]] == [
        "coverage_calc",
        "evaluate_calc",
        "read_calc",
        "search_calc",
    ]
    assert all(c["ok"] for c in run.report["checks"])
    assert snapshot(EXAMPLE) == before
    env.assert_no_state()


def test_seed_selector_is_the_same_as_eval(env: Env, capsys: pytest.CaptureFixture[str]):
    positional = cli(capsys, "--repo", str(EXAMPLE), "tools", "check", "docs/accuracy")
    option = cli(capsys, "--repo", str(EXAMPLE), "tools", "check", "--eval", "docs/accuracy")
    assert positional == option
    assert positional.code == 0
    env.assert_no_state()


def test_seed_artifact_and_audience(env: Env, capsys: pytest.CaptureFixture[str]):
    run = cli(
        capsys,
        "--repo",
        str(EXAMPLE),
        "tools",
        "check",
        "--artifact",
        "docs",
        "--audience",
        "agent",
    )
    assert run.code == 0
    (scope,) = run.report["scopes"]
    assert (scope["evalId"], scope["artifactId"], scope["audience"]) == (None, "docs", "agent")
    names = [t["name"] for t in scope["tools"]]
    assert "read_docs" in names and "read_calc" in names  # the mount impl -> calc is in scope
    assert names == sorted(names)
    env.assert_no_state()


def test_seed_execute_read(env: Env):
    before = snapshot(EXAMPLE)
    run = run_cli(
        env, "--repo", str(EXAMPLE), "tools", "check", "--execute", "--artifact", "docs",
        "--audience", "agent", "--tool", "read", "--args", '{"path":"guide.md"}',
    )  # fmt: skip
    assert (run.code, run.err) == (0, "")
    data = run.report["result"]["content"][0]["data"]
    assert data["artifactId"] == "docs" and data["path"] == "guide.md"
    assert data["lines"][0]["number"] == 1
    assert snapshot(EXAMPLE) == before
    env.assert_no_state_files()


def test_seed_execute_search_through_a_mount(env: Env, capsys: pytest.CaptureFixture[str]):
    run = cli(
        capsys, "--repo", str(EXAMPLE), "tools", "check", "--artifact", "docs", "--audience",
        "agent", "--tool", "search", "--execute", "--args", '{"pattern":"divide"}',
    )  # fmt: skip
    assert run.code == 0
    paths = {m["path"] for m in run.report["result"]["content"][0]["data"]["matches"]}
    assert {"guide.md", "impl/src/calc.py"} <= paths


def test_seed_execute_human_tool_is_a_valid_invocation(
    env: Env, capsys: pytest.CaptureFixture[str]
):
    run = cli(
        capsys, "--repo", str(EXAMPLE), "tools", "check", "--execute", "--artifact", "docs",
        "--audience", "human", "--tool", "guide",
    )  # fmt: skip
    assert run.code == 0
    assert run.check("preflight", "guide_docs")["ok"] is True
    assert run.check("execute", "guide_docs") == {
        "stage": "execute",
        "tool": "guide_docs",
        "ok": True,
        "message": None,
    }


def test_seed_execute_human_tool(env: Env, capsys: pytest.CaptureFixture[str]):
    before = snapshot(EXAMPLE)
    run = cli(
        capsys, "--repo", str(EXAMPLE), "tools", "check", "--execute", "--artifact", "docs",
        "--audience", "human", "--tool", "guide",
    )  # fmt: skip
    assert run.code == 0
    assert run.report["result"] == {
        "content": [
            {"type": "text", "text": (EXAMPLE / "docs" / "guide.md").read_text(encoding="utf-8")}
        ],
        "isError": False,
    }
    assert snapshot(EXAMPLE) == before
    env.assert_no_state_files()


def test_CHK_execute_a_human_command_tool(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--artifact", "a",
        "--audience", "human", "--tool", "inspect",
    )  # fmt: skip
    assert run.code == 0
    assert run.report["result"] == {
        "content": [{"type": "text", "text": '{"content":[{"type":"text","text":"ran"}]}\n'}],
        "isError": False,
    }
    assert run.check("execute", "inspect_a")["ok"] is True
    assert (root / "a" / "spawned").exists()
    env.assert_no_state_files()


def test_CHK_execute_a_human_tool_by_eval(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--eval", "a/check",
        "--tool", "guide_a",
    )  # fmt: skip
    assert run.code == 0
    assert run.report["result"]["content"] == [
        {"type": "text", "text": "# Guide\nDivide carefully.\n"}
    ]
    assert [t["name"] for t in run.report["scopes"][0]["tools"]] == ["guide_a"]
    env.assert_no_state_files()


def test_CHK_execute_a_failing_human_tool(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    (root / "a" / "tool.py").write_text("import sys\nprint('half')\nsys.exit(4)\n")
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--artifact", "a",
        "--audience", "human", "--tool", "inspect_a",
    )  # fmt: skip
    assert run.code == 1
    assert run.report["result"] == {
        "content": [
            {"type": "text", "text": "Human tool exited unsuccessfully (exit status: 4).\nhalf\n"}
        ],
        "isError": True,
    }
    assert run.check("execute", "inspect_a")["message"] == RETURNED_ERROR


def test_CHK_execute_a_human_launch_tool(env: Env, capsys: pytest.CaptureFixture[str]):
    root = full(env.tmp / "W")
    index = root / "a" / "index.artf"
    index.write_text(
        index.read_text().replace(
            "[views.human_tools]\n",
            "[views.human_tools]\n"
            'app = { description = "App", kind = "launch", command = "sh", '
            'args = ["-c", "echo $$ > launched.pid; echo noise; echo noise >&2"] }\n',
        )
    )
    run = cli(
        capsys, "--repo", str(root), "tools", "check", "--execute", "--artifact", "a",
        "--audience", "human", "--tool", "app",
    )  # fmt: skip
    assert run.code == 0
    assert run.report["result"] == {
        "content": [{"type": "launch", "launched": True}],
        "isError": False,
    }
    pid_file = root / "a" / "launched.pid"
    deadline = time.monotonic() + 5
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    pid = int(pid_file.read_text())
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # it exits by itself; make sure the test owns its end
    assert "noise" not in run.out + run.err  # stdout and stderr stay disconnected


def test_seed_execute_by_eval_is_a_valid_invocation(env: Env, capsys: pytest.CaptureFixture[str]):
    run = cli(
        capsys, "--repo", str(EXAMPLE), "tools", "check", "--execute", "--eval", "calc/review",
        "--tool", "coverage_calc", "--args", '{"function": 3}',
    )  # fmt: skip
    assert run.code == 1  # the schema refuses the argument before anything runs
    assert run.check("preflight", "coverage_calc")["ok"] is True
    assert [t["name"] for t in run.report["scopes"][0]["tools"]] == ["coverage_calc"]
    assert run.report["result"]["isError"] is True


def test_seed_execute_by_eval(env: Env, capsys: pytest.CaptureFixture[str]):
    run = cli(
        capsys, "--repo", str(EXAMPLE), "tools", "check", "--execute", "--eval", "calc/review",
        "--tool", "coverage_calc", "--args", "{}",
    )  # fmt: skip
    assert run.code == 0
    assert "isError" not in run.report["result"]
    env.assert_no_state_files()


def test_static_check_of_open_needs_the_desktop_opener(
    env: Env, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12: a static check passed `open` on a machine without xdg-open."""
    without = [p for p in os.environ["PATH"].split(os.pathsep) if "desktop-bin" not in p]
    monkeypatch.setenv("PATH", os.pathsep.join(without))
    if any((Path(p) / "xdg-open").exists() for p in without):
        pytest.skip("this machine has a real xdg-open")
    run = cli(capsys, "--repo", str(EXAMPLE), "tools", "check", "docs/signoff")
    assert run.code == 1
    failed = {c["tool"]: c["message"] for c in run.report["checks"] if not c["ok"]}
    assert list(failed) == ["open_guide_docs"]
    assert failed["open_guide_docs"].startswith(
        "docs/index.artf:33: views.human_tools.open_guide: The desktop opener xdg-open is not "
        "on PATH"
    )
    (group,) = run.report["byScope"]
    assert (group["scope"], group["ok"]) == ("eval docs/signoff", False)


def test_a_preflight_problem_names_file_line_key_and_the_fix(
    env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12: "Artifact is outside this review: tests" came with no file, line, key or
    fix, in a flat list that did not say which scope failed."""
    root = env.tmp / "S"
    (root / "app").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "tests" / "index.artf").write_text('name = "tests"\n', encoding="utf-8")
    (root / "app" / "index.artf").write_text(
        'name = "app"\n\n[views.human_tools.run]\ndescription = "Run."\nkind = "output"\n'
        'command = "echo"\nargs = ["{tests}"]\n' + HUMAN_EVAL.replace("Check.", "Check {app}."),
        encoding="utf-8",
    )
    run = cli(capsys, "--repo", str(root), "tools", "check", "app/check")
    assert run.code == 1
    (failed,) = [c for c in run.report["checks"] if not c["ok"]]
    assert failed["message"] == (
        "app/index.artf:3: views.human_tools.run: Artifact is outside this review: tests "
        '(add a mount to app: mounts = { tests = "tests" }, or reference {tests} in the '
        "eval's instruction)"
    )
    (group,) = run.report["byScope"]
    assert (group["scope"], group["ok"], group["checks"]) == ("eval app/check", False, [failed])
    checked = cli(capsys, "--repo", str(root), "config", "check")
    assert checked.code == 2
    assert checked.err.startswith(
        "error: app/index.artf:7: views.human_tools.run.args[0]: {tests} names the Artifact "
        "tests, which is outside the scope of the eval app/check (app); add a mount to app"
    )
