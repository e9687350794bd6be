"""What a fresh interpreter imports for the console script's cheapest answers: ``--version``
takes no typer, and the root ``--help`` lists every command without importing one of them
(nor any heavy library); each common command leaves out the heavy modules it does not use
(issue 25 item 6: counted in ``sys.modules``, not timed). Only a new process has a clean
``sys.modules``, so these start one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from artifactize.entrypoints.cli import command_table as cli
from tests.support.cli import REPO_ROOT

pytestmark = pytest.mark.process


def test_the_version_imports_no_typer() -> None:
    code = (
        "import sys\nfrom artifactize.entrypoints.cli.launch import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print('TYPER', 'typer' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "TYPER False"


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


def test_root_help_lists_every_command_without_importing_them() -> None:
    out = _run(
        "import sys\n"
        "from entrypoints.cli.app import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith('artifactize.entrypoints.cli.')))\n"
        "print('HEAVY', sorted(m for m in ('sqlalchemy', 'urwid', 'starlette', 'httpx2',"
        " 'jsonschema', 'anyio', 'dependency_injector') if m in sys.modules))\n"
    )
    listed = out.split("Commands:", 1)[1]
    for name in cli.COMMANDS:
        assert f"\n  {name} " in listed
    loaded = out.split("LOADED ", 1)[1].splitlines()[0]
    for module in ("runs", "status", "requests", "server", "remote", "sessions"):
        assert f"artifactize.entrypoints.cli.{module}'" not in loaded
    assert out.split("HEAVY ", 1)[1].splitlines()[0] == "[]"


EXAMPLE = str(REPO_ROOT / "examples" / "handbook")
# The heavy modules (each tens of milliseconds with what it pulls in) a command may import.
WORKSPACE = "artifactize.domain.project.workspace"  # with discovery and jsonschema
DISCOVERY = "artifactize.domain.project.discovery"
ASKING = "artifactize.domain.reviews.human.asking"
RUN_DOCUMENTS = "artifactize.domain.reviews.run.documents"
TOOLS_CHECK = "artifactize.domain.use_cases.tools_check"
RECORDED = "artifactize.domain.reviews.human.recorded_declarations"
# command line (after --state-dir), a module it must import (so the count is of a command
# that really ran), the heavy modules it has no use for. The state home is empty: readers
# find no state.
COMMAND_IMPORTS = {
    "--version": (["--version"], "artifactize.entrypoints.version", ("typer", "dataclasses")),
    "--help": (
        ["--help"],
        "typer",
        ("pydantic", "dependency_injector", "jsonschema", "sqlalchemy", "artifactize.domain"),
    ),
    "config check": (
        ["--repo", EXAMPLE, "config", "check"],
        WORKSPACE,
        ("sqlalchemy", "psutil", ASKING, RUN_DOCUMENTS, TOOLS_CHECK, RECORDED),
    ),
    "status": (["--repo", EXAMPLE, "status"], WORKSPACE, ("sqlalchemy", TOOLS_CHECK, RECORDED)),
    "verify --help": (
        ["verify", "--help"],
        "artifactize.entrypoints.cli.runs",
        ("dependency_injector", "jsonschema", WORKSPACE, ASKING, RUN_DOCUMENTS),
    ),
    "run list": (
        ["run", "list"],
        "artifactize.entrypoints.cli.runs",
        ("sqlalchemy", "jsonschema", WORKSPACE, DISCOVERY, ASKING, RUN_DOCUMENTS),
    ),
    "run show": (
        ["run", "show", "run-Hq2b9X"],
        "artifactize.entrypoints.cli.runs",
        ("sqlalchemy", "jsonschema", WORKSPACE, DISCOVERY, ASKING, TOOLS_CHECK),
    ),
    "request list": (
        ["request", "list"],
        "artifactize.domain.use_cases.request_views",
        ("sqlalchemy", "jsonschema", WORKSPACE, DISCOVERY, ASKING, RUN_DOCUMENTS, RECORDED),
    ),
    "mcp log": (
        ["mcp", "log"],
        "artifactize.entrypoints.cli.mcp",
        ("sqlalchemy", "jsonschema", WORKSPACE),
    ),
}


@pytest.mark.parametrize("name", COMMAND_IMPORTS)
def test_a_command_imports_no_heavy_module_it_does_not_use(name: str, tmp_path: Path) -> None:
    argv, used, unused = COMMAND_IMPORTS[name]
    args = argv if name == "--version" else ["--state-dir", str(tmp_path / "state"), *argv]
    watched = (used, *unused)
    out = _run(
        "import sys\n"
        "from artifactize.entrypoints.cli.launch import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit as exit:\n    print('EXIT', exit.code)\n"
        f"print('IMPORTED', [m for m in {watched!r} if m in sys.modules])\n"
    )
    imported = out.split("IMPORTED ", 1)[1].splitlines()[0]
    assert imported == repr([used]), f"{name}: {imported} (stdout: {out[-400:]})"
    assert not (tmp_path / "state").exists()  # every one of them is a reader


SCHEMA_TOOL = """
[views.agent_tools.words]
description = "Count the words of one file."
protocol = "plain"
command = "wc"
args = ["-w", "{file}"]
input_schema = { type = "object", required = ["file"], properties = { file = { type = "string" } } }
"""


def test_status_imports_jsonschema_only_for_a_schema_to_admit(tmp_path: Path) -> None:
    """``jsonschema`` (with ``referencing``, ~30 ms of a start) is imported by the first
    schema a declaration asks to admit, not with the declarations' modules: a ``status``
    over declarations without an ``input_schema`` (``bench/scale.py``'s) imports neither;
    one declaration with a schema, and both are."""
    from bench.scale import cli, generate

    repo, state = tmp_path / "repo", tmp_path / "state"
    generate(repo, 3)

    def status_imports() -> str:
        code = (
            "import sys\nfrom artifactize.entrypoints.cli.launch import main\n"
            f"try:\n    main({cli(repo, state, 'status')[3:]!r})\n"
            "except SystemExit as exit:\n    print('EXIT', exit.code)\n"
            f"print('IMPORTED', [m for m in {(WORKSPACE, 'jsonschema', 'referencing')!r}"
            " if m in sys.modules])\n"
        )
        return _run(code).split("IMPORTED ", 1)[1].splitlines()[0]

    assert status_imports() == repr([WORKSPACE])
    declaration = repo / "mods" / "m00000" / "index.artf"
    declaration.write_text(declaration.read_text(encoding="utf-8") + SCHEMA_TOOL, "utf-8")
    assert status_imports() == repr([WORKSPACE, "jsonschema", "referencing"])
