"""The composition root can be rewired to the in-memory filesystem, CLI included."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from dependency_injector import providers

from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.entrypoints.cli import app as cli
from artifactize.entrypoints.cli.context import CliContext
from artifactize.entrypoints.container import Container
from tests.fakes.filesystem import MemoryFilesystem, Node
from tests.fakes.processes import FakePrograms
from tests.support.cli import collector_as_after_exit

TREE: dict[str, Node] = {
    "index.artf": b"""name = "handbook"

[evals.review]
title = "Reviewed"
profile = { kind = "human" }
payload.instruction = "Read {api}."
""",
    "api": {
        "index.artf": b"""name = "api"

[views.agent_tools]
read = { builtin = "read" }

[evals.run]
title = "Runs"
profile = { kind = "runtime", command = "check", args = [] }
payload.instruction = "Run."
""",
    },
    "logo.svg": b"<svg/>",
    "logo.svg.artf": b'name = "logo"\n',
}

SUMMARY = (
    "Configuration OK: 3 Artifacts (2 folder, 1 file), 2 evals (runtime 1, agent 0, human 1), "
    "1 Agent tool, 0 Human tools, 0 tool sessions."
)


@pytest.fixture
def fake() -> MemoryFilesystem:
    return MemoryFilesystem({"/repo": TREE})


@pytest.fixture
def cli_fake(fake: MemoryFilesystem) -> Iterator[MemoryFilesystem]:
    """Point the CLI's own container at the fake for the duration of a test."""
    with (
        CliContext.container.filesystem.override(providers.Object(fake)),
        CliContext.container.programs.override(providers.Object(FakePrograms())),
    ):
        yield fake


def run_cli(argv: list[str]) -> int:
    with collector_as_after_exit(), pytest.raises(SystemExit) as caught:
        cli.main(argv)
    code = caught.value.code
    assert isinstance(code, int)
    return code


def test_overridden_container_reads_only_the_fake(fake: MemoryFilesystem) -> None:
    container = Container()
    container.programs.override(providers.Object(FakePrograms()))  # `check` is on its PATH
    with container.filesystem.override(providers.Object(fake)):
        service = container.config_service()
        assert isinstance(service, ConfigService)
        assert service.filesystem is fake
        data = service.check("/repo")
    assert data["ok"] is True
    assert data["root"] == "/repo"
    assert data["artifacts"] == 3
    assert (data["folderArtifacts"], data["fileArtifacts"]) == (2, 1)
    assert data["evalsByKind"] == {"runtime": 1, "agent": 0, "human": 1}
    assert data["relations"] == 2  # api is a child of handbook and in its instruction
    assert fake.open_root_calls == 1
    assert fake.open_directory_calls == 1
    assert fake.read_file_calls == 3
    assert fake.open_handles == 0
    assert fake.writes == []


def test_the_override_is_undone_afterwards(fake: MemoryFilesystem) -> None:
    container = Container()
    with container.filesystem.override(providers.Object(fake)):
        assert container.config_service().filesystem is fake
    assert container.config_service().filesystem is not fake


def test_cli_config_check_prints_the_summary(
    cli_fake: MemoryFilesystem, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["--repo", "/repo", "config", "check"]) == 0
    out, err = capsys.readouterr()
    assert out == SUMMARY + "\n"
    assert err == ""
    assert cli_fake.open_root_calls == 1
    assert cli_fake.read_file_calls == 3
    assert cli_fake.writes == []


def test_cli_config_check_json_after_the_subcommand(
    cli_fake: MemoryFilesystem, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["config", "check", "--json", "--repo=/repo"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["artifacts"] == 3
    assert data["agentTools"] == 1
    assert cli_fake.open_root_calls == 1


def test_cli_config_graph_for_one_artifact(
    cli_fake: MemoryFilesystem, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["--repo", "/repo", "--json", "config", "graph", "api"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["selected"] == "api"
    assert [a["name"] for a in report["artifacts"]] == ["api"]
    assert report["relations"] == []


def test_cli_reports_declaration_problems(capsys: pytest.CaptureFixture[str]) -> None:
    broken = MemoryFilesystem({"/repo": {"index.artf": b'name = "x"\nbogus = 1\n'}})
    with CliContext.container.filesystem.override(providers.Object(broken)):
        assert run_cli(["--repo", "/repo", "config", "check"]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.startswith("error: index.artf:2: bogus: unknown key")

        assert run_cli(["--repo", "/repo", "--json", "config", "check"]) == 2
        data = json.loads(capsys.readouterr().out)
        (problem,) = data["problems"]
        assert (problem["file"], problem["line"], problem["keyPath"]) == ("index.artf", 2, "bogus")
        assert data["error"].startswith("index.artf:2: bogus: unknown key")
    assert broken.writes == []


def test_cli_reports_a_missing_repository(
    cli_fake: MemoryFilesystem, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["--repo", "/nowhere", "config", "check"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("error: ")
    assert "/nowhere" in err
    assert cli_fake.open_root_calls == 0


def test_cli_global_option_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["--repo", "a", "config", "check", "--repo", "b"]) == 2
    assert capsys.readouterr().err == "error: --repo may be given only once\n"
    assert run_cli(["--json", "config", "check", "--state-dir"]) == 2
    assert json.loads(capsys.readouterr().out) == {"error": "--state-dir needs a value"}
