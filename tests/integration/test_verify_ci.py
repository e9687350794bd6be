"""``verify`` in CI through the real CLI: reuse-only runs, parallel evals, the execution
budget, selections and profile variants, JUnit XML, the GitHub step summary and
annotations, failure tails, late Human submissions, and bad input.

Every command runs the console script in this process (``tests/support/cli.py``) over real
SQLite state; runtime evals run one probe script kept outside the repository; the Agent eval talks
to a fake provider over loopback HTTP, which counts every request it receives.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import psutil
import pytest
import xmlschema

from artifactize.domain.reviews.run.policy import JOBS_MAX
from artifactize.entrypoints.cli.render.reports import TAIL_MAX_LINES
from tests.support.cli import run_cli
from tests.support.fake_provider import FakeProvider, openai_text
from tests.support.workspaces import toml_value as toml

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.path.realpath(sys.executable)
JUNIT_XSD = REPO_ROOT / "tests" / "support" / "junit.xsd"
SLEEP_SECONDS = 1.5
FAIL_LINES = 30  # more than the tail shows

PROBE = r"""
import json, os, sys, time

command, rest = sys.argv[1], sys.argv[2:]
if command == "ok":
    print("fine")
elif command == "fail":
    for n in range(1, int(rest[0]) + 1):
        print(f"out line {n}")
        print(f"err line {n}", file=sys.stderr)
    sys.exit(1)
elif command == "sleep":
    log, name = rest[0], rest[1]
    started = time.time()
    time.sleep(float(rest[2]))
    with open(log, "a") as out:
        out.write(json.dumps({"name": name, "start": started, "end": time.time()}) + "\n")
elif command == "say":
    print(rest[0])
"""


class Repo:
    def __init__(self, root: Path, fake: FakeProvider) -> None:
        self.root = root
        self.fake = fake
        self.path = root / "repo"
        self.state = root / "state"
        self.probe = root / "bin" / "probe.py"
        self.probe.parent.mkdir()
        self.probe.write_text(PROBE, encoding="utf-8")
        self.path.mkdir()

    def runtime_eval(self, eval_id: str, *args: str, extra: str = "") -> str:
        argv = ["-S", str(self.probe), *args]
        return (
            f"[evals.{eval_id}]\n"
            f"title = {toml(eval_id)}\n"
            f'profile = {{ kind = "runtime", command = {toml(PYTHON)}, args = {toml(argv)} }}\n'
            f"payload.instruction = {toml('Run ' + eval_id + '.')}\n{extra}"
        )

    def declare(self, name: str, *blocks: str) -> None:
        folder = self.path / name
        folder.mkdir(exist_ok=True)
        (folder / "notes.txt").write_text(f"{name}\n", encoding="utf-8")
        text = "\n".join([f"name = {toml(name)}", *blocks])
        (folder / "index.artf").write_text(text + "\n", encoding="utf-8")

    def cli(
        self,
        *args: str,
        json_output: bool = True,
        keys: bool = True,
        env: dict[str, str] | None = None,
    ) -> tuple[int, Any, str]:
        environment = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ARTIFACTIZE_", "GITHUB_"))
            and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
        }
        environment.update({"ARTIFACTIZE_REMOTE": "off", "USER": "alice", **(env or {})})
        if keys:
            environment.update(self.fake.env())
        else:  # CI without model keys; the endpoint stays, so a request would be counted
            environment["ARTIFACTIZE_OPENAI_BASE_URL"] = self.fake.base_url
        command = [
            "--repo",
            str(self.path),
        ]
        command += ["--state-dir", str(self.state), *(["--json"] if json_output else [])]
        done = run_cli(*command, *args, env=environment, cwd=REPO_ROOT)
        out: Any = done.stdout
        if json_output:
            assert done.stdout.strip(), done.stderr
            out = json.loads(done.stdout)
        return done.returncode, out, done.stderr

    def requests_of(self, run: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {r["evalId"]: r for r in run["requests"]}

    def run_count(self) -> int:
        code, runs, _ = self.cli("run", "list", "--all")
        assert code == 0
        return len(runs)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def repo(tmp_path: Path, fake: FakeProvider) -> Repo:
    return Repo(tmp_path, fake)


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    deadline = time.monotonic() + 5
    left = [p for p in me.children(recursive=True) if p.pid not in before]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"left behind: {left}"


AGENT_EVAL = """[evals.review]
title = "The docs read well"
profile = { kind = "agent", backend = "openai", model = "m1" }
payload.instruction = "Review {docs}."
"""
HUMAN_EVAL = """[evals.signoff]
title = "Signed off"
profile = { kind = "human" }
payload.instruction = "Sign off {docs}."
"""


def ci_workspace(repo: Repo) -> None:
    repo.declare("code", repo.runtime_eval("tests", "ok"))
    repo.declare("docs", AGENT_EVAL, HUMAN_EVAL)


# --- reuse-only -------------------------------------------------------------------------


def test_a_reuse_only_ci_run_before_and_after_a_real_review(repo: Repo) -> None:
    ci_workspace(repo)
    ci = ("verify", "--all", "--reuse-only", "agent,human")
    code, run, _ = repo.cli(*ci, keys=False)
    requests = repo.requests_of(run)
    assert code == 4 and run["status"] == "INCOMPLETE"
    assert run["reuseOnly"] == ["agent", "human"]
    assert requests["code/tests"]["status"] == "GREEN"
    assert requests["docs/review"]["status"] == "STALE"
    assert (
        "run artifactize verify docs/review with a model key"
        in (requests["docs/review"]["blockedReason"])
    )
    assert requests["docs/signoff"]["status"] == "STALE"
    assert "a person submits a review" in requests["docs/signoff"]["blockedReason"]
    assert run["executionsStarted"] == 1
    assert repo.fake.requests == []
    code, listed, _ = repo.cli("request", "list")
    assert code == 0 and not [r for r in listed if r["status"] == "WAITING_HUMAN"]
    code, text, _ = repo.cli(*ci, json_output=False, keys=False)
    assert code == 4
    assert "docs/review [" in text and "STALE — --reuse-only agent:" in text

    # One real local review and one Human sign-off, then CI reuses both.
    repo.fake.enqueue(openai_text('{"verdict": "GREEN"}'))
    code, run, _ = repo.cli("verify", "docs/review")
    assert (code, repo.requests_of(run)["docs/review"]["status"]) == (4, "GREEN")
    code, run, _ = repo.cli("verify", "docs/signoff")
    signoff = repo.requests_of(run)["docs/signoff"]
    assert (code, signoff["status"]) == (4, "WAITING_HUMAN")
    assert repo.cli("request", "claim", signoff["id"], "--reviewer", "alice")[0] == 0
    submitted = repo.cli(
        "request", "submit", signoff["id"], "--verdict", "GREEN", "--reviewer", "alice"
    )
    assert submitted[0] == 0, submitted
    provider_requests = len(repo.fake.requests)
    assert provider_requests == 1

    code, run, _ = repo.cli(*ci, keys=False)
    requests = repo.requests_of(run)
    assert code == 0 and run["status"] == "GREEN"
    assert requests["docs/review"]["source"]["kind"] == "cache"
    assert requests["docs/signoff"]["source"]["kind"] == "cache"
    assert len(repo.fake.requests) == provider_requests
    code, text, _ = repo.cli(*ci, json_output=False, keys=False)
    assert code == 0
    assert "docs/signoff [" in text and "GREEN (reused: local cache, " in text
    assert " by alice)" in text
    code, status, _ = repo.cli("status", "--reuse-only", "agent,human", keys=False)
    assert code == 0 and status["satisfied"] is True


def test_status_shows_what_a_reuse_only_run_would_do(repo: Repo) -> None:
    ci_workspace(repo)
    code, report, _ = repo.cli("status", "--reuse-only", "agent", keys=False)
    assert code == 1
    states = {e["evalId"]: (e["state"], e["action"]) for e in report["evals"]}
    assert states["docs/review"] == ("STALE", "stale")
    assert states["docs/signoff"] == ("UNREVIEWED", "execute")  # human may still be asked
    assert report["actions"]["stale"] == 1
    code, text, _ = repo.cli("status", "--reuse-only", "agent", json_output=False, keys=False)
    assert (
        "Verify actions: will execute 2, will reuse 0, wait 0, blocked 0, stale (reuse-only) 1"
        in text
    )
    assert repo.run_count() == 0  # status never creates a Run


# --- concurrency and budget -------------------------------------------------------------


def sleepers(repo: Repo, count: int) -> Path:
    log = repo.root / "sleeps.jsonl"
    blocks = [
        repo.runtime_eval(f"s{n}", "sleep", str(log), f"s{n}", str(SLEEP_SECONDS))
        for n in range(1, count + 1)
    ]
    repo.declare("sleepy", *blocks)
    return log


def intervals(log: Path) -> list[dict[str, Any]]:
    found = [json.loads(line) for line in log.read_text().splitlines()]
    log.unlink()
    return found


def test_jobs_run_four_sleeping_evals_at_once_and_one_job_runs_them_in_turn(repo: Repo) -> None:
    log = sleepers(repo, 4)
    code, run, _ = repo.cli("verify", "sleepy", "--jobs", "4")
    assert code == 0 and run["jobs"] == 4
    spans = intervals(log)
    assert len(spans) == 4
    # All four were asleep at the same moment: the last start precedes the first end.
    assert max(s["start"] for s in spans) < min(s["end"] for s in spans)

    code, run, _ = repo.cli("verify", "sleepy", "--jobs", "1", "--force")
    assert code == 0 and run["jobs"] == 1
    spans = sorted(intervals(log), key=lambda s: s["start"])
    assert all(a["end"] <= b["start"] for a, b in itertools.pairwise(spans))


def test_max_executions_at_and_past_the_budget(repo: Repo) -> None:
    repo.declare("quick", *(repo.runtime_eval(f"q{n}", "ok") for n in range(1, 5)))
    code, run, _ = repo.cli("verify", "quick", "--max-executions", "2", "--jobs", "1")
    statuses = [r["status"] for r in run["requests"]]
    assert code == 4 and run["status"] == "INCOMPLETE"
    assert statuses == ["GREEN", "GREEN", "BUDGET_EXHAUSTED", "BUDGET_EXHAUSTED"]
    assert run["executionsStarted"] == 2 and run["maxExecutions"] == 2
    assert "--max-executions 2" in run["requests"][2]["blockedReason"]
    # Reuse needs no budget: the two GREEN reuse, the other two take the two starts.
    code, run, _ = repo.cli("verify", "quick", "--max-executions", "2")
    assert code == 0 and run["executionsStarted"] == 2
    code, run, _ = repo.cli("verify", "quick", "--max-executions", "0", "--force")
    assert code == 4 and {r["status"] for r in run["requests"]} == {"BUDGET_EXHAUSTED"}


# --- selections and variants ------------------------------------------------------------


def test_evals_artifacts_and_a_profile_variant(repo: Repo) -> None:
    quick = 'profile_variants.quick = { kind = "runtime", command = "true", args = [] }\n'
    repo.declare("one", repo.runtime_eval("a", "say", "one-a", extra=quick))
    repo.declare("two", repo.runtime_eval("b", "say", "two-b"), repo.runtime_eval("c", "ok"))
    code, run, _ = repo.cli("verify", "--evals", "two/c,one/a,two/c")
    assert [r["evalId"] for r in run["requests"]] == ["two/c", "one/a"]
    assert code == 4 and run["validation"]["unmetObligations"] == ["two"]  # two/b unselected
    code, run, _ = repo.cli("verify", "--artifacts", "two,one")
    assert code == 0 and [r["evalId"] for r in run["requests"]] == ["two/b", "two/c", "one/a"]
    code, run, _ = repo.cli("verify", "one", "--profile", "quick")
    (request,) = run["requests"]
    assert code == 0 and run["profileVariant"] == "quick"
    assert request["profile"]["command"] == "true" and request["source"] is None  # new key
    assert request["child"]["stdout"] == ""  # the variant ran, not the default command
    code, out, _ = repo.cli("verify", "one", "--profile", "slow")
    assert code == 2 and "--profile slow" in out["error"] and "quick" in out["error"]


# --- reports ----------------------------------------------------------------------------


def report_workspace(repo: Repo) -> None:
    repo.declare(
        "checks",
        repo.runtime_eval("fail", "fail", str(FAIL_LINES)),
        repo.runtime_eval("ok", "ok"),
        "[evals.spawn]\n"
        'title = "spawn"\n'
        'profile = { kind = "runtime", command = "/nonexistent/tool", args = [] }\n'
        'payload.instruction = "Run a missing tool."\n',
    )
    repo.declare("docs", AGENT_EVAL, HUMAN_EVAL)


def test_junit_xml_github_summary_and_annotations(repo: Repo, tmp_path: Path) -> None:
    report_workspace(repo)
    junit = tmp_path / "reports" / "junit.xml"
    junit.parent.mkdir()
    summary = tmp_path / "step-summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    github = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    code, text, _ = repo.cli(
        "verify",
        "--all",
        "--reuse-only",
        "agent",
        "--junit",
        str(junit),
        json_output=False,
        keys=False,
        env=github,
    )
    assert code == 2  # an ERROR eval (the missing tool) makes the Run ERROR
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(junit))
    root = ElementTree.parse(junit).getroot()
    (suite,) = root.findall("testsuite")
    cases = {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}
    assert set(cases) == {
        ("checks", "fail"),
        ("checks", "ok"),
        ("checks", "spawn"),
        ("docs", "review"),
        ("docs", "signoff"),
    }
    assert suite.get("tests") == "5" and suite.get("failures") == "1"
    assert (suite.get("errors"), suite.get("skipped")) == ("1", "2")
    assert list(cases[("checks", "ok")]) == []
    failure = cases[("checks", "fail")].find("failure")
    assert failure is not None and failure.get("message") == "RED: exit 1"
    assert failure.text is not None and f"err line {FAIL_LINES}" in failure.text
    assert f"out line {FAIL_LINES}" in failure.text and "err line 1\n" not in failure.text
    assert float(cases[("checks", "fail")].get("time") or "0") > 0
    error = cases[("checks", "spawn")].find("error")
    assert error is not None and error.get("type") == "PREPARATION_FAILED"
    stale = cases[("docs", "review")].find("skipped")
    assert stale is not None and (stale.get("message") or "").startswith("STALE: --reuse-only")
    waiting = cases[("docs", "signoff")].find("skipped")
    assert waiting is not None and (waiting.get("message") or "").startswith("WAITING_HUMAN")

    written = summary.read_text(encoding="utf-8")
    assert written.startswith("# earlier step\n### artifactize verify: ERROR (run-")
    assert "| `checks/fail` | RED | executed | RED: exit 1 |" in written
    assert "| `docs/review` | STALE |" in written

    source = (repo.path / "checks" / "index.artf").read_text().splitlines()
    fail_line = source.index("[evals.fail]") + 1
    spawn_line = source.index("[evals.spawn]") + 1
    annotations = [line for line in text.splitlines() if line.startswith("::error ")]
    assert len(annotations) == 2
    assert annotations[0].startswith(
        f"::error file=checks/index.artf,line={fail_line},title=checks/fail RED::RED: exit 1%0A"
    )
    assert annotations[1].startswith(
        f"::error file=checks/index.artf,line={spawn_line},title=checks/spawn ERROR::"
        "ERROR PREPARATION_FAILED: "
    )

    # With --json the annotations go to stderr; stdout stays one JSON document.
    code, run, err = repo.cli(
        "verify", "checks/fail", "--junit", str(junit), keys=False, env=github
    )
    assert code == 1 and run["status"] == "RED"
    assert err.count("::error file=checks/index.artf") == 1
    assert ElementTree.parse(junit).getroot().find("testsuite") is not None


def test_without_github_actions_nothing_is_annotated(repo: Repo, tmp_path: Path) -> None:
    report_workspace(repo)
    summary = tmp_path / "step-summary.md"
    code, text, _ = repo.cli(
        "verify",
        "checks/fail",
        json_output=False,
        env={"GITHUB_ACTIONS": "false", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert code == 1 and "::error" not in text and not summary.exists()


def test_a_red_runtime_eval_prints_its_output_tail_and_quiet_does_not(repo: Repo) -> None:
    report_workspace(repo)
    code, text, _ = repo.cli("verify", "checks/fail", json_output=False)
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if "checks/fail [" in line)
    assert code == 1 and lines[head].endswith("RED — exit 1")
    assert lines[head + 1] == f"    stderr (last {TAIL_MAX_LINES} lines):"
    first_shown = FAIL_LINES - TAIL_MAX_LINES + 1
    assert lines[head + 2] == f"      err line {first_shown}"
    assert lines[head + 1 + TAIL_MAX_LINES] == f"      err line {FAIL_LINES}"
    assert lines[head + 2 + TAIL_MAX_LINES] == f"    stdout (last {TAIL_MAX_LINES} lines):"
    assert f"      err line {first_shown - 1}" not in lines

    code, text, _ = repo.cli("verify", "checks/fail", "--quiet", json_output=False)
    assert code == 1
    kept = text.splitlines()
    assert len(kept) == 3, kept
    assert "checks/fail [" in kept[0] and kept[1].startswith("Summary:")
    assert kept[2] == "Execution: RED"


# --- summaries that are true when read --------------------------------------------------


def test_a_submission_after_the_run_ended_settles_run_show_and_run_list(repo: Repo) -> None:
    repo.declare("docs", HUMAN_EVAL)
    code, run, _ = repo.cli("verify", "docs/signoff")
    assert code == 4 and run["summary"]["counts"] == {"WAITING_HUMAN": 1}
    (request,) = run["requests"]
    assert repo.cli("request", "claim", request["id"], "--reviewer", "alice")[0] == 0
    submitted = repo.cli(
        "request", "submit", request["id"], "--verdict", "GREEN", "--reviewer", "alice"
    )
    assert submitted[0] == 0

    code, shown, _ = repo.cli("run", "show", run["id"])
    assert code == 0
    assert shown["status"] == "GREEN"
    assert shown["requests"][0]["status"] == "GREEN"
    assert shown["summary"]["counts"] == {"GREEN": 1}
    assert shown["requests"][0]["summary"]["status"] == "GREEN"
    assert shown["validation"]["status"] == "SATISFIED"
    code, runs, _ = repo.cli("run", "list")
    assert [(r["id"], r["status"], r["counts"]) for r in runs] == [
        (run["id"], "GREEN", {"GREEN": 1})
    ]


def test_a_run_with_a_waiting_dependent_stays_incomplete_after_the_submission(
    repo: Repo,
) -> None:
    repo.declare("docs", HUMAN_EVAL)
    repo.declare("site", repo.runtime_eval("build", "say", "{docs}"))
    code, run, _ = repo.cli("verify", "--all")
    assert code == 4
    signoff = repo.requests_of(run)["docs/signoff"]
    assert repo.requests_of(run)["site/build"]["status"] == "WAIT_DEPENDENCY"
    assert repo.cli("request", "claim", signoff["id"], "--reviewer", "alice")[0] == 0
    assert (
        repo.cli("request", "submit", signoff["id"], "--verdict", "GREEN", "--reviewer", "alice")[0]
        == 0
    )
    code, shown, _ = repo.cli("run", "show", run["id"])
    assert shown["status"] == "INCOMPLETE"  # site/build never ran in that Run
    assert shown["summary"]["counts"] == {"GREEN": 1, "WAIT_DEPENDENCY": 1}


# --- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--reuse-only", "agent,robot"), "--reuse-only takes a comma-separated list of"),
        (("--reuse-only", ""), "--reuse-only takes a comma-separated list of"),
        (("--jobs", "0"), "--jobs must be between 1 and 256, got 0."),
        (("--jobs", str(JOBS_MAX + 1)), f"--jobs must be between 1 and 256, got {JOBS_MAX + 1}."),
        (("--max-executions", "-1"), "--max-executions must be between 0 and"),
        (("--fingerprint-jobs", "0"), "--fingerprint-jobs must be between 1 and 256"),
        (("--profile", "nope"), "--profile nope: no selected eval declares"),
        (("--junit", "missing/junit.xml"), "--junit missing/junit.xml: the folder"),
        (("--force", "--reuse-only", "agent"), "--force and --reuse-only conflict"),
        (("--evals", "code"), "--evals takes qualified eval IDs"),
        (("--evals", "code/tests,,code/tests"), "--evals takes a comma-separated list"),
        (("--artifacts", "code", "--all"), "Give exactly one selector"),
    ],
)
def test_bad_input_exits_2_before_any_run(repo: Repo, args: tuple[str, ...], message: str) -> None:
    ci_workspace(repo)
    selector = () if "--artifacts" in args or "--evals" in args else ("--all",)
    code, out, _ = repo.cli("verify", *selector, *args)
    assert code == 2 and message in out["error"], out
    assert repo.run_count() == 0


def test_a_junit_report_inside_an_artifact_is_refused(repo: Repo) -> None:
    ci_workspace(repo)
    code, out, _ = repo.cli("verify", "code", "--junit", str(repo.path / "code" / "junit.xml"))
    assert code == 2 and "inside the Artifact `code`" in out["error"]
    assert not (repo.path / "code" / "junit.xml").exists() and repo.run_count() == 0
    # Inside the repository but outside every Artifact is fine.
    code, _, _ = repo.cli("verify", "code", "--junit", str(repo.path / "junit.xml"))
    assert code == 0 and (repo.path / "junit.xml").is_file()


def test_jobs_at_its_limit_is_accepted(repo: Repo) -> None:
    ci_workspace(repo)
    code, run, _ = repo.cli("verify", "code", "--jobs", str(JOBS_MAX))
    assert code == 0 and run["jobs"] == JOBS_MAX


# --- dependency evals -------------------------------------------------------------------


def dependency_eval(eval_id: str, *names: str) -> str:
    return (
        f"[evals.{eval_id}]\n"
        f"title = {toml(eval_id)}\n"
        f'profile = {{ kind = "dependency", depends_on = {toml(list(names))} }}\n'
    )


def dependency_workspace(repo: Repo) -> None:
    repo.declare("good", repo.runtime_eval("t", "ok"))
    repo.declare("bad", repo.runtime_eval("t", "fail", "1"))
    repo.declare("docs", HUMAN_EVAL)
    (repo.path / "base").mkdir()
    (repo.path / "base" / "index.artf").write_text('name = "base"\nbasis = true\n')
    repo.declare(
        "release",
        'mounts = { g = "good" }',
        dependency_eval("green", "g", "base"),
        dependency_eval("blocked", "bad"),
        dependency_eval("waiting", "docs"),
    )


def test_dependency_evals_derive_every_outcome(repo: Repo) -> None:
    dependency_workspace(repo)
    code, run, _ = repo.cli("verify", "release")
    requests = repo.requests_of(run)
    assert code == 1 and run["status"] == "RED"  # bad/t ran (pulled in) and is RED
    green = requests["release/green"]
    assert green["status"] == "GREEN" and green["source"]["kind"] == "derived"
    assert (green["key"], green["executionId"]) == (None, None)
    blocked = requests["release/blocked"]
    assert blocked["status"] == "BLOCKED" and blocked["blockedBy"] == ["bad", "bad/t"]
    waiting = requests["release/waiting"]
    assert waiting["status"] == "WAIT_DEPENDENCY"
    assert waiting["blockedBy"] == ["docs", "docs/signoff"]
    assert requests["good/t"]["status"] == "GREEN" and requests["good/t"]["selected"] is False
    assert requests["docs/signoff"]["status"] == "WAITING_HUMAN"
    assert run["summary"]["derived"] == 1 and run["executionsStarted"] == 2
    assert run["summary"]["executed"]["total"] == 2
    code, records, _ = repo.cli("cache", "list")
    assert {r["evalId"] for r in records} == {"good/t", "bad/t"}  # nothing derived is kept

    code, text, _ = repo.cli("verify", "release/green", json_output=False)
    assert code == 1, text  # release's obligation takes in its other evals: bad/t is RED
    assert "release/green [" in text and "GREEN (derived)" in text
    assert "Derived: 1 dependency evals (no execution)." in text.splitlines()
    code, report, _ = repo.cli("status", "release/green")
    states = {e["evalId"]: (e["state"], e["action"]) for e in report["evals"]}
    assert states["release/green"] == ("PASS", "derive")
    assert states["good/t"] == ("PASS", "reuse")


def test_ignore_gates_never_changes_a_derived_verdict(repo: Repo) -> None:
    dependency_workspace(repo)
    code, run, _ = repo.cli("verify", "release/blocked", "--ignore-gates")
    assert code == 1 and run["ignoreGates"] is True  # bad/t ran and is RED
    assert repo.requests_of(run)["release/blocked"]["status"] == "BLOCKED"


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ((dependency_eval("r", "nowhere"),), "`nowhere` names no Artifact and no mount alias"),
        ((dependency_eval("r", "release"),), "cannot depend on its own Artifact"),
        (('mounts = { g = "good" }', dependency_eval("r", "g", "good")), "a second time"),
    ],
)
def test_config_check_refuses_bad_targets(
    repo: Repo, blocks: tuple[str, ...], message: str
) -> None:
    repo.declare("good", repo.runtime_eval("t", "ok"))
    repo.declare("release", *blocks)
    code, out, _ = repo.cli("config", "check")
    assert code == 2 and any(message in p["message"] for p in out["problems"]), out


def test_config_check_refuses_a_wait_cycle(repo: Repo) -> None:
    repo.declare("one", dependency_eval("ready", "two"))
    repo.declare("two", dependency_eval("ready", "one"))
    code, out, _ = repo.cli("config", "check")
    assert code == 2
    (problem,) = out["problems"]
    assert (
        "dependency evals wait for each other: one/ready -> two/ready -> one/ready"
        in (problem["message"])
        or "two/ready -> one/ready -> two/ready" in problem["message"]
    )
