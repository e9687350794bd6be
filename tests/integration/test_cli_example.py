"""The ``artifactize`` CLI on the bundled ``examples/handbook`` workspace.

Every case runs the console script in this process through ``tests/support/cli.py`` (the
same global-option splitting, typer dispatch and error formatting as a real process).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.cli import CliResult
from tests.support.cli import run_cli as in_process

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "handbook"

CHECK_LINE = (
    "Configuration OK: 6 Artifacts (5 folder, 1 file), 7 evals (runtime 3, agent 2, human 2), "
    "13 Agent tools, 5 Human tools, 1 tool session."
)
ARTIFACTS = ("handbook", "calc", "calc-tests", "docs", "architecture", "glossary")
RELATION_LINES = (
    "calc -> handbook  [child code]",
    "calc-tests -> calc  [child tests]",
    "docs -> handbook  [child docs]",
    "glossary -> docs  [child glossary]",
    "calc -> docs  [mount impl]",
    "calc-tests -> calc  [argv of calc/tests]",
    "calc-tests -> calc  [instruction of calc/tests]",
    "calc-tests -> calc  [instruction of calc/review]",
    "calc -> docs  [instruction of docs/accuracy]",
    "glossary -> docs  [instruction of docs/accuracy]",
    "calc -> architecture  [instruction of architecture/current]",
)
# (consumer, input, kind, label-or-eval): every relation of the example, in report order.
RELATIONS = (
    ("handbook", "calc", "child", "code"),
    ("calc", "calc-tests", "child", "tests"),
    ("handbook", "docs", "child", "docs"),
    ("docs", "glossary", "child", "glossary"),
    ("docs", "calc", "mount", "impl"),
    ("calc", "calc-tests", "argv", "tests"),
    ("calc", "calc-tests", "instruction", "tests"),
    ("calc", "calc-tests", "instruction", "review"),
    ("docs", "calc", "instruction", "accuracy"),
    ("docs", "glossary", "instruction", "accuracy"),
    ("architecture", "calc", "instruction", "current"),
)
DOCS_CLOSURE = {"docs", "glossary", "calc", "calc-tests"}


@pytest.fixture(scope="module", autouse=True)
def no_process_left_behind() -> Iterator[None]:
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    left = [p for p in me.children(recursive=True) if p.pid not in before]
    assert not left, f"processes left behind: {left}"


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point every state location into ``tmp_path``; nothing may be created there."""
    for key in [k for k in os.environ if k.startswith("ARTIFACTIZE_")]:
        monkeypatch.delenv(key)
    state = tmp_path / "state"
    monkeypatch.setenv("ARTIFACTIZE_STATE_HOME", str(state))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    yield state
    assert not state.exists()
    assert not (tmp_path / "xdg-state").exists()


def cli(*args: str | Path, cwd: Path = REPO_ROOT) -> CliResult:
    """The real CLI in this process, with the (already isolated) environment."""
    return in_process(*map(str, args), cwd=cwd)


def run_main(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """The same: exit code, stdout, stderr (``capsys`` kept for the callers)."""
    done = in_process(*map(str, args))
    return done.code, done.stdout, done.stderr


def json_main(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, Any]:
    code, out, err = run_main(capsys, *args)
    assert err == ""
    return code, json.loads(out)


# --- config check ---------------------------------------------------------------------------


def test_config_check_prints_one_summary_line():
    result = cli("--repo", EXAMPLE, "config", "check")
    assert (result.returncode, result.stdout, result.stderr) == (0, CHECK_LINE + "\n", "")


def test_config_check_json_counts(capsys):
    code, report = json_main(capsys, "--repo", EXAMPLE, "--json", "config", "check")
    assert code == 0
    assert report == {
        "ok": True,
        "root": os.path.realpath(EXAMPLE),
        "artifacts": 6,
        "folderArtifacts": 5,
        "fileArtifacts": 1,
        "evals": 7,
        "evalsByKind": {"runtime": 3, "agent": 2, "human": 2},
        "agentTools": 13,
        "humanTools": 5,
        "agentSessions": 1,
        "relations": 11,
    }


def test_config_check_defaults_to_the_current_directory():
    result = cli("config", "check", cwd=EXAMPLE)
    assert (result.returncode, result.stdout, result.stderr) == (0, CHECK_LINE + "\n", "")


# --- config graph -----------------------------------------------------------------------------


def test_config_graph_text_lists_every_artifact_and_relation():
    result = cli("config", "graph", "--repo", EXAMPLE)
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == "Artifacts:"
    artifact_lines = lines[1 : lines.index("Components (inputs first):")]
    listed = [line.split()[0] for line in artifact_lines if not line.startswith("    ")]
    assert listed == list(ARTIFACTS)
    assert "  architecture [file]  docs/architecture.svg  (type:image)" in lines
    assert "  glossary [basis]  docs/glossary" in lines
    assert "    eval docs/signoff [human]  The documentation owner approves the guide" in lines
    assert "    agent tools: read_calc, search_calc, coverage_calc, evaluate_calc" in lines
    relations = lines[lines.index("Relations (input -> consumer):") + 1 :]
    assert relations == [f"  {line}" for line in RELATION_LINES]
    assert "Components (inputs first):" in lines


def test_config_graph_json_structure(capsys):
    code, report = json_main(capsys, "--json", "config", "graph", "--repo", EXAMPLE)
    assert code == 0
    assert set(report) == {"root", "selected", "artifacts", "relations", "components"}
    assert report["selected"] is None
    assert report["root"] == os.path.realpath(EXAMPLE)
    artifacts = {a["name"]: a for a in report["artifacts"]}
    assert [a["name"] for a in report["artifacts"]] == list(ARTIFACTS)

    assert artifacts["handbook"]["parent"] is None
    assert artifacts["handbook"]["children"] == {"code": "calc", "docs": "docs"}
    assert artifacts["calc"]["parent"] == "handbook"
    assert artifacts["calc"]["children"] == {"tests": "calc-tests"}
    assert artifacts["docs"]["mounts"] == {"impl": "calc"}
    assert artifacts["glossary"]["basis"] is True
    assert artifacts["glossary"]["evals"] == []
    architecture = artifacts["architecture"]
    assert (architecture["kind"], architecture["path"]) == ("file", "docs/architecture.svg")
    assert architecture["declaration"] == "docs/architecture.svg.artf"
    assert architecture["parent"] is None  # file Artifacts are never children
    assert [a["kind"] for a in report["artifacts"]].count("folder") == 5

    evals = [e["id"] for a in report["artifacts"] for e in a["evals"]]
    assert evals == [
        "handbook/layout",
        "calc/review",
        "calc/tests",
        "calc-tests/names",
        "docs/accuracy",
        "docs/signoff",
        "architecture/current",
    ]
    assert {t["name"] for t in artifacts["docs"]["agentTools"]} >= {"wordcount_docs", "read_docs"}
    evaluate = next(t for t in artifacts["calc"]["agentTools"] if t["name"] == "evaluate_calc")
    assert evaluate == {"name": "evaluate_calc", "protocol": "json", "session": "repl_calc"}
    assert artifacts["calc"]["agentSessions"] == ["repl_calc"]

    relations = [
        (r["consumer"], r["input"], r["kind"], r.get("label") or r.get("evalId"))
        for r in report["relations"]
    ]
    assert relations == list(RELATIONS)
    assert {r["kind"] for r in report["relations"]} == {"child", "mount", "instruction", "argv"}

    components = report["components"]
    assert sorted(n for c in components for n in c) == sorted(ARTIFACTS)
    position = {name: i for i, c in enumerate(components) for name in c}
    for consumer, input_name, _, _ in RELATIONS:
        assert position[input_name] < position[consumer], (input_name, consumer)


def test_config_graph_of_one_artifact_selects_its_closure(capsys):
    code, report = json_main(capsys, "--repo", EXAMPLE, "config", "graph", "docs", "--json")
    assert code == 0
    assert report["selected"] == "docs"
    assert {a["name"] for a in report["artifacts"]} == DOCS_CLOSURE
    assert {n for c in report["components"] for n in c} == DOCS_CLOSURE
    for relation in report["relations"]:
        assert {relation["consumer"], relation["input"]} <= DOCS_CLOSURE
    assert ("docs", "calc", "mount") in {
        (r["consumer"], r["input"], r["kind"]) for r in report["relations"]
    }

    code, text, err = run_main(capsys, "--repo", EXAMPLE, "config", "graph", "docs")
    assert (code, err) == (0, "")
    assert "handbook" not in text
    assert "architecture" not in text


def test_config_graph_of_an_unknown_artifact_fails():
    result = cli("--repo", EXAMPLE, "config", "graph", "nope")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "error: Unknown Artifact: nope\n"


def test_config_graph_of_an_unknown_artifact_fails_in_json(capsys):
    code, report = json_main(capsys, "--repo", EXAMPLE, "config", "graph", "nope", "--json")
    assert (code, report) == (2, {"error": "Unknown Artifact: nope"})


# --- global options -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--json", "--repo", "EXAMPLE", "config", "check"],
        ["--repo", "EXAMPLE", "config", "check", "--json"],
        ["config", "--repo", "EXAMPLE", "check", "--json"],
        ["config", "check", "--json", "--repo=EXAMPLE"],
        ["--state-dir", "STATE", "config", "check", "--repo", "EXAMPLE", "--json"],
    ],
    ids=["before", "after", "between", "inline-value", "state-dir"],
)
def test_global_options_before_and_after_the_subcommand(capsys, isolated_state, args):
    argv = [
        a.replace("EXAMPLE", str(EXAMPLE)).replace("STATE", str(isolated_state.parent / "sd"))
        for a in args
    ]
    code, report = json_main(capsys, *argv)
    assert code == 0
    assert (report["ok"], report["artifacts"], report["evals"]) == (True, 6, 7)
    assert not (isolated_state.parent / "sd").exists()


def test_global_option_between_group_and_command_in_a_real_process():
    result = cli("config", "--repo", EXAMPLE, "check")
    assert (result.returncode, result.stdout, result.stderr) == (0, CHECK_LINE + "\n", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repo", "EXAMPLE", "config", "check", "--repo", "EXAMPLE"], "--repo"),
        (["--state-dir", "a", "--repo", "EXAMPLE", "config", "check", "--state-dir", "b"], None),
        (["--json", "--repo", "EXAMPLE", "config", "check", "--json"], "--json"),
    ],
    ids=["repo", "state-dir", "json"],
)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_each_global_option_only_once(capsys, args, message, as_json):
    option = message or "--state-dir"
    argv = [a.replace("EXAMPLE", str(EXAMPLE)) for a in args]
    if as_json and "--json" not in argv:
        argv.append("--json")
    code, out, err = run_main(capsys, *argv)
    assert code == 2
    expected = f"{option} may be given only once"
    if as_json or option == "--json":
        assert err == ""
        assert json.loads(out) == {"error": expected}
    else:
        assert out == ""
        assert err == f"error: {expected}\n"


def test_repeated_global_option_in_a_real_process():
    result = cli("--repo", EXAMPLE, "--repo", EXAMPLE, "config", "check")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "error: --repo may be given only once\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["config", "check", "--repo"], "--repo needs a value"),
        (["--repo", "", "config", "check"], "--repo needs a nonempty value"),
        (["--repo", "EXAMPLE", "config", "check", "--bogus"], "No such option: --bogus"),
    ],
    ids=["missing-value", "empty-value", "unknown-option"],
)
def test_usage_errors_exit_2_with_json(capsys, args, expected):
    argv = [a.replace("EXAMPLE", str(EXAMPLE)) for a in args]
    code, report = json_main(capsys, "--json", *argv)
    assert (code, report) == (2, {"error": expected})


def test_version():
    result = cli("--version")
    expected = f"artifactize {version('artifactize')}\n"
    assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")


# --- the repository argument ----------------------------------------------------------------------


def test_a_missing_repository_is_named(tmp_path: Path):
    missing = tmp_path / "no-such-repo"
    result = cli("--repo", missing, "config", "check")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("error: ")
    assert str(missing) in result.stderr
    assert "does not exist" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not missing.exists()


def test_a_missing_repository_in_json(capsys, tmp_path: Path):
    missing = tmp_path / "no-such-repo"
    code, report = json_main(capsys, "--json", "--repo", missing, "config", "graph")
    assert code == 2
    assert set(report) == {"error"}
    assert str(missing) in report["error"]
    assert not missing.exists()


def test_a_repository_that_is_a_file(tmp_path: Path):
    file = tmp_path / "repo.txt"
    file.write_text("not a directory\n")
    result = cli("--repo", file, "config", "check")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("error: ")
    assert str(file) in result.stderr
    assert "not a directory" in result.stderr
    assert result.stderr.count("\n") == 1


# --- the example's command tools ------------------------------------------------------------------


def test_the_outline_tool_returns_its_png_embedded():
    """docs/tools/outline.py writes a PNG into its output directory and names it by path."""
    result = cli(
        "--repo", EXAMPLE, "tools", "check", "--execute", "--artifact", "docs",
        "--audience", "agent", "--tool", "outline", "--args", '{"page":"guide.md"}',
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (0, "")
    text, image = json.loads(result.stdout)["result"]["content"]
    assert text == {
        "type": "text",
        "text": "guide.md, one bar per section, left to right:\n"
        "Calculator guide: 1 line\nUsage: 3 lines\nDivision: 2 lines",
    }
    assert set(image) == {"type", "data", "mimeType"}
    assert (image["type"], image["mimeType"]) == ("image", "image/png")
    assert base64.b64decode(image["data"]).startswith(b"\x89PNG\r\n\x1a\n")


def test_the_outline_tool_answers_a_missing_page_with_an_authored_error():
    result = cli(
        "--repo", EXAMPLE, "tools", "check", "--execute", "--artifact", "docs",
        "--audience", "agent", "--tool", "outline", "--args", '{"page":"nope.md"}',
    )  # fmt: skip
    assert result.returncode == 1
    assert json.loads(result.stdout)["result"] == {
        "isError": True,
        "content": [
            {
                "type": "text",
                "text": "No page named 'nope.md' here; name a Markdown file of this folder, "
                "like guide.md.",
            }
        ],
    }
