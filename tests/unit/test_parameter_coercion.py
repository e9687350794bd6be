"""Plain option values are coerced without pydantic, with typer's own results and messages;
and no command that only checks declarations imports pydantic, PyYAML or Starlette."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
import typer.core
from typer._coercion import build_runtime_param as _typer_build_runtime_param

from artifactize.entrypoints.cli import app as cli
from artifactize.entrypoints.cli import parameter_coercion

REPO = Path(__file__).resolve().parents[2]

CORPUS: list[str] = [
    "0",
    "1",
    "-1",
    "42",
    "999999999999999999",  # the longest run of digits the fast path takes
    "9999999999999999999",  # one digit more: typer's own coercion
    "007",
    "+5",
    " 5",
    "5 ",
    "1_000",
    "1e3",
    "0x10",
    "",
    "abc",
    "٣",  # an Arabic-Indic digit
    "-0",
    "ü",
]


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def show(
        number: Annotated[int, typer.Option("--number")] = 0,
        limit: Annotated[int, typer.Option("--limit", min=1, max=50)] = 10,
        name: Annotated[str, typer.Option("--name")] = "",
        flag: Annotated[bool, typer.Option("--flag")] = False,
    ) -> None:
        print(repr((number, limit, name, flag)))

    return app


def _outcome(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, Any]:
    command = typer.main.get_command(_app())
    try:
        command.main(args, prog_name="show", standalone_mode=False)
    except typer.TyperException as exc:
        return ("error", exc.format_message())
    return ("ok", capsys.readouterr().out)


@pytest.mark.parametrize("option", ["--number", "--limit", "--name"])
def test_every_value_gets_typers_own_result_or_message(
    option: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    typers_own, ours_first = _typer_build_runtime_param, parameter_coercion.build_runtime_param
    for value in [*CORPUS, "50", "51"]:
        args = [option, value, "--flag"]
        monkeypatch.setattr(typer.core, "build_runtime_param", typers_own)
        typers = _outcome(args, capsys)
        monkeypatch.setattr(typer.core, "build_runtime_param", ours_first)
        ours = _outcome(args, capsys)
        assert ours == typers, (option, value)


def test_plain_values_take_the_fast_path_and_the_rest_falls_back(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fallbacks: list[Any] = []
    original = parameter_coercion.PlainRuntimeParam._fallback

    def counted(self: Any, value: Any, param: Any, ctx: Any) -> Any:
        fallbacks.append(value)
        return original(self, value, param, ctx)

    monkeypatch.setattr(parameter_coercion.PlainRuntimeParam, "_fallback", counted)
    monkeypatch.setattr(typer.core, "build_runtime_param", parameter_coercion.build_runtime_param)
    assert _outcome(["--number", "-7", "--limit", "50", "--name", "x"], capsys) == (
        "ok",
        "(-7, 50, 'x', False)\n",
    )
    assert fallbacks == []
    assert _outcome(["--limit", "51"], capsys)[0] == "error"
    assert _outcome(["--number", "007"], capsys) == ("ok", "(7, 10, '', False)\n")
    assert fallbacks == ["51", "007"]


def _every_parameter(command: Any) -> Iterator[tuple[str, Any]]:
    context = command.context_class(command)
    for name in getattr(command, "list_commands", lambda _: [])(context):
        yield from _every_parameter(command.get_command(context, name))
    for parameter in command.params:
        yield f"{command.name} {parameter.name}", parameter


def test_every_option_of_every_command_takes_the_fast_path() -> None:
    """A ``Path``, enum or parser option would bring pydantic back to that command's start."""
    root = typer.main.get_command(cli.app)
    found = list(_every_parameter(root))
    assert len(found) > 100
    slow = [name for name, p in found if not parameter_coercion._plain(p.type_descriptor)]
    assert slow == []


def _imported_by(argv: list[str]) -> set[str]:
    code = (
        "import sys\n"
        "from entrypoints.cli.app import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
        "print(' '.join(sorted({m.partition('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.splitlines()[-1].split())


def test_config_check_imports_neither_pydantic_nor_yaml_nor_starlette() -> None:
    imported = _imported_by(["--repo", str(REPO / "examples" / "handbook"), "config", "check"])
    assert {"dependency_injector", "typer", "jsonschema"} <= imported
    assert imported.isdisjoint({"pydantic", "pydantic_core", "yaml", "starlette"})


def test_verify_of_runtime_evals_imports_neither_pydantic_nor_the_http_stack(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "index.artf").write_text(
        'name = "docs"\n[evals.ok]\ntitle = "ok"\nprofile = { kind = "runtime", command = "true", args = [] }\npayload.instruction = "ok"\n'
    )
    argv = ["--repo", str(repo), "--state-dir", str(tmp_path / "state"), "--json", "verify"]
    argv += ["--all", "--jobs", "2", "--max-executions", "5", "--junit", str(tmp_path / "j.xml")]
    imported = _imported_by(argv)
    assert "sqlalchemy" in imported and imported.isdisjoint({"pydantic", "httpx2"})
    assert "<testsuite" in (tmp_path / "j.xml").read_text()


def test_the_integrations_skipped_at_the_containers_import_stay_importable() -> None:
    code = (
        "import sys\n"
        "import entrypoints.container\n"
        "assert 'pydantic' not in sys.modules and 'starlette' not in sys.modules\n"
        "import pydantic, starlette.requests\n"
        "print(pydantic.VERSION[:1], starlette.requests.Request.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "Request"]
