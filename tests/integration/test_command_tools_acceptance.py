"""Acceptance cases G (json protocol), H (plain protocol) and I (environment, cwd, deadlines,
process groups) of the command tools, with real processes.

Each test carries its case ID from ``tools-cases.md`` in its name. Workspaces are real
folders under ``tmp_path`` with ``.artf`` TOML declarations, loaded by the real
``ConfigService``; registries use the real POSIX adapters and the tool scripts are small
``python3`` programs written next to the declaration.

Invariants checked on every call (``Harness.call``): the caller's output root (``O`` in the cases) holds
exactly its pre-seeded ``retained`` file afterwards (per-call directories are removed on
success, failure, timeout and cancellation), the arguments object is not mutated, and the
stderr canary the tools print never reaches a result.

Where the seed and the reference disagree, the seed wins (``seeds/000_…``: "the author's
own environment (the runtime environment: the real home, no ARTIFACTIZE_* variables of the
caller) with private external TMP/output"): ENV-01 and ENV-02 assert the author's
environment with the real ``HOME`` instead of the reference's ten-variable allow-list and
private home.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.domain.declarations.diagnostics import ConfigError
from artifactize.domain.text import compact_json, compact_json_size
from artifactize.domain.tools.cancellation import Cancellation
from artifactize.domain.tools.commands.json_output import JSON_BLOCK_MAX_BYTES, RESULT_MAX_BYTES
from artifactize.domain.tools.commands.text_output import TEXT_BLOCK_MAX_BYTES, TRUNCATION_MARKER
from artifactize.domain.tools.registry import AgentToolRegistry, ToolPorts
from artifactize.domain.tools.results import CONTENT_BLOCKS_MAX, ToolResult
from artifactize.domain.use_cases.config_service import ConfigService
from tests.support.images import (
    BMP1,
    GIF1,
    IDAT,
    IEND,
    IHDR,
    JPEG1,
    JPEG1_B64,
    JPEGLS,
    PNG1,
    PNG_SIGNATURE,
    TEXT,
    WEBP1,
    b64,
    png_chunk,
)
from tests.support.processes import nothing_left_behind as nothing_left_behind_in
from tests.support.workspaces import declare, real_tool_ports

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024
INVALID = "Agent tool returned invalid output."
EXECUTION_FAILED = "Agent tool execution failed."
PREP_FAILED = "Agent tool preparation failed."
TIMED_OUT = "Agent tool timed out."
CANCELLED = "Agent tool call was cancelled."
PLAIN_FAILED = "Agent tool exited unsuccessfully.\n"
STDERR_CANARY = "stderr-canary-7f3a"
ANY_OBJECT = {"type": "object"}
# Tools run as ``python3 -S tool.py`` with the real interpreter first on PATH: a pyenv shim
# or site initialization would cost most of each call's time.
PYTHON_BIN = os.path.dirname(os.path.realpath(sys.executable))
TEST_PATH = PYTHON_BIN + os.pathsep + os.environ.get("PATH", "")
PY = ["-S", "tool.py"]


# --- fixtures: images ---------------------------------------------------------------------------


def png_of_size(size: int) -> bytes:
    """A PNG that passes the framing checks, padded to exactly ``size`` bytes by a tEXt chunk."""
    fixed = len(PNG1) - len(TEXT)
    text = b"pad\0" + b"x" * (size - fixed - 12 - 4)
    png = PNG_SIGNATURE + IHDR + png_chunk(b"tEXt", text) + IDAT + IEND
    assert len(png) == size
    return png


# --- declarations ---------------------------------------------------------------------------------


AGENT_EVAL = {
    "title": "Review",
    "profile": {"kind": "agent", "backend": "openai", "model": "test"},
    "payload": {"instruction": "Review."},
}


def load(root: Path) -> Any:
    return ConfigService(PosixFilesystem()).load(str(root))


def ports(environment: dict[str, str] | None = None) -> ToolPorts:
    return real_tool_ports(dict(os.environ, PATH=TEST_PATH) if environment is None else environment)


# The json tool used by most G cases: it follows instructions in its arguments, so one
# workspace serves many variants. ``@outputDir@``, ``@tmpDir@``, ``@tmpName@`` and
# ``@artifactPath@`` in paths and stdout are replaced by the request's values.
# The deadline tests run code that sleeps 60 s: finishing in under half of that proves the
# deadline cut it, with room for a loaded CI machine (no speed is measured here).
NOT_WAITED_OUT_SECONDS = 30
# Polls for a process to go or a file to appear: bounds for a failing run only.
GONE_WAIT_SECONDS = 30.0
ECHO_TOOL = f"""\
import base64, json, os, sys
raw = sys.stdin.buffer.read()
request = json.loads(raw)
ctx, args = request["context"], request["args"]
out_dir = ctx["outputDir"]
sys.stderr.write("{STDERR_CANARY}\\n")
sys.stderr.flush()

def sub(text):
    for key, value in (("outputDir", out_dir), ("tmpDir", ctx["tmpDir"]),
                       ("tmpName", os.path.basename(ctx["tmpDir"])),
                       ("artifactPath", ctx["artifactPath"])):
        text = text.replace("@" + key + "@", value)
    return text

def place(path):
    path = sub(path)
    return path if os.path.isabs(path) else os.path.join(out_dir, path)

if args.get("marker"):
    open(os.path.join(os.getcwd(), "spawned"), "w").close()
for path in args.get("dirs", []):
    os.makedirs(place(path), exist_ok=True)
for path, data in args.get("files", {{}}).items():
    os.makedirs(os.path.dirname(place(path)), exist_ok=True)
    with open(place(path), "wb") as handle:
        handle.write(base64.b64decode(data))
for path, target in args.get("symlinks", {{}}).items():
    os.symlink(sub(target), place(path))
for path in args.get("fifos", []):
    os.mkfifo(place(path))
scope = {{"ctx": ctx, "request": request, "raw": raw, "os": os, "json": json, "sys": sys,
         "base64": base64, "place": place, "out": sub(args.get("stdout", ""))}}
exec(args.get("code", ""), scope)
out = scope["out"]
sys.stdout.buffer.write(out if isinstance(out, bytes) else out.encode("utf-8"))
sys.stdout.flush()
sys.exit(args.get("exit", 0))
"""

# The plain tool: refuses non-empty stdin, marks that it ran, prints its argv as JSON.
PLAIN_ARGV_TOOL = """\
import json, os, sys
if sys.stdin.buffer.read():
    sys.exit(7)
open(os.path.join(os.getcwd(), "spawned"), "w").close()
print(json.dumps(sys.argv[1:], ensure_ascii=False), end="")
"""


def command_tool(protocol: str = "json", **fields: Any) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "description": "Inspect {artifactName}",
        "protocol": protocol,
        "command": "python3",
        "args": PY,
    }
    tool.update(fields)
    return tool


def fx_c(W: Path, script: str = ECHO_TOOL, **fields: Any) -> None:
    """FX-C: ``W`` itself is Artifact ``a`` with the json command tool ``inspect``."""
    fields.setdefault("input_schema", ANY_OBJECT)
    declare(
        W,
        {
            "name": "a",
            "views": {"agent_tools": {"inspect": command_tool("json", **fields)}},
            "evals": {"review": AGENT_EVAL},
        },
    )
    (W / "tool.py").write_text(script, encoding="utf-8")


def fx_p(W: Path, script: str = PLAIN_ARGV_TOOL, **fields: Any) -> None:
    """FX-P: FX-C with ``protocol = "plain"``."""
    declare(
        W,
        {
            "name": "a",
            "views": {"agent_tools": {"inspect": command_tool("plain", **fields)}},
            "evals": {"review": AGENT_EVAL},
        },
    )
    (W / "tool.py").write_text(script, encoding="utf-8")


# --- harness --------------------------------------------------------------------------------------


def only_retained(root: Path) -> None:
    assert sorted(os.listdir(root)) == ["retained"], sorted(os.listdir(root))
    assert (root / "retained").read_bytes() == b"kept"


@dataclass
class Harness:
    W: Path
    output_root: Path
    registry: AgentToolRegistry

    async def call(
        self,
        args: Any = None,
        name: str = "inspect_a",
        *,
        token: Cancellation | None = None,
    ) -> ToolResult:
        sent = {} if args is None else args
        before = copy.deepcopy(sent)
        result = await self.registry.call(name, sent, str(self.output_root), token)
        assert sent == before, "the call mutated its arguments"
        only_retained(self.output_root)
        assert STDERR_CANARY not in json.dumps(result.to_json(), ensure_ascii=False)
        return result

    def spawned(self) -> bool:
        return (self.W / "spawned").exists()


@pytest.fixture
def W(tmp_path: Path) -> Path:
    """The canonical workspace (no symlink anywhere in its path)."""
    workspace = Path(os.path.realpath(tmp_path)) / "W"
    workspace.mkdir()
    return workspace


@pytest.fixture
def output_root(tmp_path: Path) -> Path:
    """The caller's output root, outside ``W``, pre-seeded with one file."""
    root = Path(os.path.realpath(tmp_path)) / "output_root"
    root.mkdir()
    (root / "retained").write_bytes(b"kept")
    return root


def harness(
    W: Path, output_root: Path, environment: dict[str, str] | None = None, eval_id: str = "a/review"
) -> Harness:
    return Harness(W, output_root, AgentToolRegistry.for_eval(load(W), eval_id, ports(environment)))


@pytest.fixture
def echo(W: Path, output_root: Path) -> Harness:
    fx_c(W)
    return harness(W, output_root)


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with nothing_left_behind_in(tmp_path_factory, grace=3):
        yield


def error_text(result: ToolResult) -> str:
    assert result.is_error, result
    assert len(result.content) == 1 and result.content[0]["type"] == "text"
    return str(result.content[0]["text"])


def ok_text(result: ToolResult) -> str:
    assert not result.is_error, result
    assert len(result.content) == 1 and result.content[0]["type"] == "text"
    return str(result.content[0]["text"])


def ok_json(result: ToolResult) -> Any:
    assert not result.is_error, result
    assert len(result.content) == 1 and result.content[0]["type"] == "json"
    return result.content[0]["data"]


def out(*blocks: dict[str, Any], **top: Any) -> str:
    """A result object as the tool prints it."""
    return compact_json({"content": list(blocks), **top})


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def report(code: str) -> dict[str, Any]:
    """Arguments for the echo tool: run ``code`` that sets ``data``, print it as a json block."""
    return {"code": code + "\nout = json.dumps({'content': [{'type': 'json', 'data': data}]})"}


# --- G. JSON protocol -----------------------------------------------------------------------------


async def test_JSON_01_request_envelope_and_private_paths(W: Path, output_root: Path):
    fx_c(W, execution_paths=["shared.txt"])
    (W / "shared.txt").write_text("shared", encoding="utf-8")
    h = harness(W, output_root)
    args = report(
        "data = {'raw': raw.decode(), 'cwd': os.getcwd(), 'env': dict(os.environ),"
        " 'modes': {k: oct(os.stat(ctx[k]).st_mode & 0o777) for k in ('outputDir', 'tmpDir')}}"
    )
    data = ok_json(await h.call(args))
    raw = data["raw"]
    request = json.loads(raw)
    assert raw == compact_json(request), "stdin is one compact JSON document"
    assert type(request["version"]) is int and request["version"] == 1
    context = request["context"]
    output_dir, tmp_dir = context["outputDir"], context["tmpDir"]
    assert request == {
        "version": 1,
        "context": {
            "artifactId": "a",
            "artifactPath": str(W),
            "outputDir": output_dir,
            "tmpDir": tmp_dir,
            "scope": {"a": {"path": str(W), "kind": "folder", "children": {}, "mounts": {}}},
            "executionPaths": {"shared.txt": f"{W}/shared.txt"},
        },
        "args": args,
    }
    assert list(request) == ["version", "context", "args"]
    assert list(context) == [
        "artifactId",
        "artifactPath",
        "outputDir",
        "tmpDir",
        "scope",
        "executionPaths",
    ]
    assert data["cwd"] == context["artifactPath"] == str(W)
    env = data["env"]
    assert env["HOME"] != env["TMPDIR"]
    assert env["TMPDIR"] == tmp_dir
    assert env["ARTIFACTIZE_OUTPUT_DIR"] == output_dir
    for private in (output_dir, tmp_dir):
        assert Path(private).parent == output_root, (
            "per-call directories live below the output root"
        )
        assert not private.startswith(f"{W}/")
        assert not Path(private).exists(), "per-call directories are removed after the call"
    assert data["modes"] == {"outputDir": "0o700", "tmpDir": "0o700"}


async def test_JSON_01_args_reach_the_tool_unchanged(echo: Harness):
    args = {
        "section": "summary",
        "n": 2.0,
        "big": 9007199254740993,
        "nested": {"z": 1, "a": [True, None, "é ✓"]},
        "code": "data = request['args']\nout = json.dumps({'content': [{'type': 'text', 'text': json.dumps(data, ensure_ascii=False, separators=(',', ':'))}]})",
    }
    got = ok_text(await echo.call(args))
    assert got == compact_json(args)
    assert json.loads(got) == args


async def test_JSON_02_scope_entries_contain_exactly_four_keys(W: Path, output_root: Path):
    declare(
        W,
        {
            "name": "a",
            "mounts": {"alias": "leaf"},
            "views": {
                "agent_tools": {"inspect": command_tool(input_schema=ANY_OBJECT)},
                "human_tools": {
                    "open": {
                        "description": "Open",
                        "kind": "output",
                        "command": "printf",
                        "args": ["x"],
                    }
                },
            },
            "evals": {"review": AGENT_EVAL},
        },
    )
    declare(W / "cases", {"name": "leaf"})
    (W / "tool.py").write_text(ECHO_TOOL, encoding="utf-8")
    h = harness(W, output_root)
    assert [d.name for d in h.registry.list()] == ["inspect_a"]
    scope = ok_json(await h.call(report("data = ctx['scope']")))
    assert scope["a"] == {
        "path": str(W),
        "kind": "folder",
        "children": {"cases": "leaf"},
        "mounts": {"alias": "leaf"},
    }
    assert len(scope["a"]) == 4
    assert scope["leaf"] == {"path": f"{W}/cases", "kind": "folder", "children": {}, "mounts": {}}


async def test_JSON_03_execution_paths_omitted_and_stdin_is_one_document(echo: Harness):
    code = (
        "decoder = json.JSONDecoder()\n"
        "text_in = raw.decode()\n"
        "value, end = decoder.raw_decode(text_in)\n"
        "assert text_in[end:].strip() == '', 'more than one document'\n"
        "assert 'executionPaths' not in value['context']\n"
        "out = json.dumps({'content': [{'type': 'text', 'text': 'ok'}]})"
    )
    assert ok_text(await echo.call({"code": code})) == "ok"


@pytest.mark.parametrize("count", [0, 1, 32, 33])
async def test_JSON_04_block_count_bounds(echo: Harness, count: int):
    top = {"isError": False} if count == 32 else {}
    result = await echo.call({"stdout": out(*[text("ok")] * count, **top)})
    if 1 <= count <= CONTENT_BLOCKS_MAX:
        assert not result.is_error
        assert list(result.content) == [text("ok")] * count
        assert "isError" not in result.to_json()
    else:
        assert error_text(result) == INVALID


async def test_JSON_06_json_block_limit(echo: Harness):
    at_limit = "x" * (JSON_BLOCK_MAX_BYTES - 2)
    assert compact_json_size(at_limit) == JSON_BLOCK_MAX_BYTES
    code = "out = json.dumps({'content': [{'type': 'json', 'data': 'x' * %d}]})"
    assert ok_json(await echo.call({"code": code % len(at_limit)})) == at_limit
    assert error_text(await echo.call({"code": code % (len(at_limit) + 1)})) == INVALID


async def test_JSON_06_json_block_limit_counts_utf8_bytes_of_the_compact_form(echo: Harness):
    # Python's default json.dumps puts spaces in; the limit counts the compact form.
    n = (JSON_BLOCK_MAX_BYTES - len('{"k":[""]}')) // 2
    data = {"k": ["é" * n]}
    assert compact_json_size(data) == JSON_BLOCK_MAX_BYTES
    code = "out = json.dumps({'content': [{'type': 'json', 'data': {'k': ['é' * %d]}}]}, indent=2)"
    assert ok_json(await echo.call({"code": code % n})) == data
    assert error_text(await echo.call({"code": code % (n + 1)})) == INVALID


async def test_JSON_text_block_limit(echo: Harness):
    code = "out = json.dumps({'content': [{'type': 'text', 'text': %r * %d}]})"
    assert ok_text(await echo.call({"code": code % ("x", TEXT_BLOCK_MAX_BYTES)})) == "x" * (
        TEXT_BLOCK_MAX_BYTES
    )
    assert error_text(await echo.call({"code": code % ("x", TEXT_BLOCK_MAX_BYTES + 1)})) == INVALID
    # UTF-8 bytes, not characters: 21846 three-byte characters are 65538 bytes.
    assert error_text(await echo.call({"code": code % ("界", 21846)})) == INVALID
    assert ok_text(await echo.call({"code": code % ("界", 21845)})) == "界" * 21845


def _result_of_size(total: int) -> tuple[int, int, int]:
    """(n, k, r): n json blocks of 'x'*k and one of 'x'*r whose result is ``total`` bytes."""
    n, k = 16, 500_000
    probe = {"content": [{"type": "json", "data": "x" * k}] * n + [{"type": "json", "data": ""}]}
    r = total - compact_json_size(probe)
    return n, k, r


async def test_JSON_result_limit_8_MiB(echo: Harness):
    code = (
        "out = json.dumps({'content': [{'type': 'json', 'data': 'x' * %d}] * %d"
        " + [{'type': 'json', 'data': 'x' * %d}]}, separators=(',', ':'))"
    )
    n, k, r = _result_of_size(RESULT_MAX_BYTES)
    assert 0 < r <= JSON_BLOCK_MAX_BYTES - 2
    result = await echo.call({"code": code % (k, n, r)})
    assert not result.is_error
    assert compact_json_size(result.to_json()) == RESULT_MAX_BYTES
    assert error_text(await echo.call({"code": code % (k, n, r + 1)})) == INVALID


async def test_JSON_07_authored_error_passes_through(echo: Harness):
    result = await echo.call(
        {"stdout": out(text("Choose a smaller range."), isError=True), "marker": True}
    )
    assert result.is_error
    assert result.to_json() == {"content": [text("Choose a smaller range.")], "isError": True}
    odd = 'Line one\nline «two» ✓ {braces} \\ "quotes"'
    result = await echo.call({"stdout": out(text(odd), isError=True)})
    assert result.to_json() == {"content": [text(odd)], "isError": True}


@pytest.mark.parametrize(
    "stdout",
    [
        out(text("a"), text("b"), isError=True),
        out({"type": "json", "data": {}}, isError=True),
        out(text(" \n"), isError=True),
        out(isError=True),
        out(text("x"), isError="true"),
        out(text("x"), isError=1),
        out(text("x"), isError=None),
    ],
    ids=["two-texts", "json-block", "blank", "no-blocks", "string-true", "one", "null"],
)
async def test_JSON_08_malformed_authored_errors(echo: Harness, stdout: str):
    assert error_text(await echo.call({"stdout": stdout})) == INVALID


async def test_JSON_09_nonzero_exit_is_a_generic_failure(echo: Harness):
    result = await echo.call(
        {
            "stdout": out(text("secret-output")),
            "code": "sys.stderr.write('secret-stderr')",
            "exit": 2,
        }
    )
    assert error_text(result) == EXECUTION_FAILED
    assert "secret" not in json.dumps(result.to_json())


async def test_JSON_10_death_by_signal(echo: Harness):
    code = f"sys.stdout.write({out(text('x'))!r}); sys.stdout.flush(); os.kill(os.getpid(), 9)"
    assert error_text(await echo.call({"code": code})) == EXECUTION_FAILED


async def test_JSON_spawn_failure_is_a_generic_failure(W: Path, output_root: Path):
    declare(
        W,
        {
            "name": "a",
            "views": {"agent_tools": {"inspect": command_tool(command="./broken", args=[])}},
            "evals": {"review": AGENT_EVAL},
        },
    )
    broken = W / "broken"
    broken.write_text("#!/nonexistent/interpreter\n", encoding="utf-8")
    broken.chmod(0o755)
    h = harness(W, output_root)
    assert error_text(await h.call()) == EXECUTION_FAILED


@pytest.mark.parametrize(
    "stdout",
    [
        "malformed secret-output",
        out(text("secret-output")) + " {}",
        out(text("secret-output")) + "x",
        out(text("secret-output")) + "\n" + out(text("again")),
        out(text("secret-output"), observation={"kind": "content"}),
        out({"type": "text", "text": "secret-output", "extra": 1}),
        out({"type": "json", "data": "secret-output", "extra": 1}),
        out({"type": "json"}),
        out({"type": "text"}),
        out({"type": "text", "text": 42}),
        out({"type": "image", "data": ""}),
        out({"type": "markdown", "text": "secret-output"}),
        '{"content":["secret-output"]}',
        '{"content":"secret-output"}',
        '{"isError":false}',
        "[" + out(text("secret-output")) + "]",
        '{"content":[{"type":"json","data":NaN}]}',
        '{"content":[{"type":"json","data":Infinity}]}',
        '{"content":[{"type":"json","data":-Infinity}]}',
        "",
        "\xff",
    ],
    ids=[
        "malformed",
        "second-value",
        "trailing-garbage",
        "two-objects",
        "extra-top-field",
        "extra-text-field",
        "extra-json-field",
        "json-without-data",
        "text-without-text",
        "non-string-text",
        "image-without-mime",
        "unknown-type",
        "block-not-object",
        "content-not-list",
        "no-content",
        "array",
        "nan",
        "infinity",
        "minus-infinity",
        "empty",
        "not-utf8",
    ],
)
async def test_JSON_11_strict_stdout_shape(echo: Harness, stdout: str):
    result = await echo.call({"stdout": stdout})
    assert error_text(result) == INVALID
    assert "secret-output" not in json.dumps(result.to_json())


async def test_JSON_11_trailing_whitespace_is_fine(echo: Harness):
    assert ok_text(await echo.call({"stdout": out(text("ok")) + " \n\t\n"})) == "ok"


async def test_JSON_12_stderr_ignored_on_success(echo: Harness):
    result = await echo.call(
        {"stdout": out(text("safe")), "code": "sys.stderr.write('secret-stderr')"}
    )
    assert result.to_json() == {"content": [text("safe")]}


async def test_JSON_13_16_MiB_capture_bound(echo: Harness):
    code = "out = json.dumps({'content': [{'type': 'json', 'data': 'x' * 524286}]})"
    assert ok_json(await echo.call({"code": code})) == "x" * 524286
    result = await echo.call({"code": "out = 'x' * (16 * 1024 * 1024 + 1)"})
    assert error_text(result) == INVALID


async def test_JSON_13_stderr_over_16_MiB_is_invalid_output(echo: Harness):
    code = "sys.stderr.write('e' * (16 * 1024 * 1024 + 1)); sys.stderr.flush()"
    result = await echo.call({"stdout": out(text("ok")), "code": code})
    assert error_text(result) == INVALID


@pytest.mark.parametrize(
    ("image", "mime"),
    [(PNG1, "image/png"), (JPEG1, "image/jpeg"), (WEBP1, "image/webp")],
    ids=["png", "jpeg", "webp"],
)
async def test_JSON_14_image_by_relative_path_absolute_path_and_inline_data(
    echo: Harness, image: bytes, mime: str
):
    stdout = out(
        {"type": "image", "path": "@outputDir@/nested/image", "mimeType": mime},
        {"type": "image", "path": "nested/image", "mimeType": mime},
        {"type": "image", "data": b64(image), "mimeType": mime},
    )
    result = await echo.call({"files": {"nested/image": b64(image)}, "stdout": stdout})
    assert not result.is_error, result
    expected = {"type": "image", "data": b64(image), "mimeType": mime}
    assert list(result.content) == [expected] * 3
    assert all("path" not in block for block in result.content)


async def test_JSON_14_image_at_the_4_MiB_boundary(echo: Harness):
    image = png_of_size(4 * MIB)
    # Write the large file from the tool itself (arguments are capped at 64 KiB).
    head, tail = b64(b"\x89PNG\r\n\x1a\n" + IHDR), b64(IDAT + IEND)
    code = (
        "import struct, zlib\n"
        "def chunk(k, d): return struct.pack('>I', len(d)) + k + d"
        " + struct.pack('>I', zlib.crc32(k + d) & 0xFFFFFFFF)\n"
        "def png(size):\n"
        f"    head = base64.b64decode({head!r})\n"
        f"    tail = base64.b64decode({tail!r})\n"
        "    body = b'pad\\0' + b'x' * (size - len(head) - len(tail) - 16)\n"
        "    return head + chunk(b'tEXt', body) + tail\n"
        f"open(place('big.png'), 'wb').write(png({4 * MIB}))\n"
        f"open(place('over.png'), 'wb').write(png({4 * MIB + 1}))\n"
    )
    block = {"type": "image", "path": "big.png", "mimeType": "image/png"}
    result = await echo.call({"code": code, "stdout": out(block)})
    assert result.content == ({"type": "image", "data": b64(image), "mimeType": "image/png"},)
    over = {"type": "image", "path": "over.png", "mimeType": "image/png"}
    assert error_text(await echo.call({"code": code, "stdout": out(over)})) == INVALID
    # Two 4 MiB images exceed the 8 MiB result limit once base64-encoded.
    both = out(block, {"type": "image", "path": "big.png", "mimeType": "image/png"})
    assert error_text(await echo.call({"code": code, "stdout": both})) == INVALID


@pytest.mark.parametrize(
    "setup",
    [
        {"path": "@artifactPath@/source"},
        {"files": {"@tmpDir@/image": b64(PNG1)}, "path": "../@tmpName@/image"},
        {"symlinks": {"link": "@artifactPath@/source"}, "path": "link"},
        {"symlinks": {"linkdir": "@artifactPath@"}, "path": "linkdir/source"},
        {"files": {"image": b64(b"not a PNG")}, "path": "image"},
        {"files": {"image": b64(b"")}, "path": "image"},
        {"path": "missing.png"},
        {"files": {"image": b64(PNG1)}, "path": "./image"},
        {"files": {"image": b64(PNG1)}, "path": ""},
        {"files": {"image": b64(PNG1)}, "path": 42},
        {"files": {"a/image": b64(PNG1)}, "path": "a//image"},
        {"files": {"a/image": b64(PNG1)}, "path": "a\\image"},
    ],
    ids=[
        "outside-absolute",
        "tmp-traversal",
        "symlink",
        "symlinked-dir",
        "not-png",
        "empty",
        "missing",
        "dot-component",
        "empty-path",
        "non-string-path",
        "empty-component",
        "backslash",
    ],
)
async def test_JSON_15_image_paths_outside_output_dir_and_bad_files(
    W: Path, echo: Harness, setup: dict[str, Any]
):
    (W / "source").write_bytes(PNG1)
    args = {k: v for k, v in setup.items() if k != "path"}
    args["stdout"] = out({"type": "image", "mimeType": "image/png", "path": setup["path"]})
    assert error_text(await echo.call(args)) == INVALID


async def test_JSON_15_image_over_4_MiB(echo: Harness):
    code = "open(place('image'), 'wb').write(b'\\x89PNG' + b'x' * (4 * 1024 * 1024 - 3))"
    stdout = out({"type": "image", "mimeType": "image/png", "path": "image"})
    assert error_text(await echo.call({"code": code, "stdout": stdout})) == INVALID


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (GIF1, "image/gif"),
        (GIF1, "image/png"),
        (BMP1, "image/bmp"),
        (BMP1, "image/png"),
        (JPEGLS, "image/jpeg"),
        (PNG1[:33] + png_chunk(b"acTL", bytes([0, 0, 0, 1, 0, 0, 0, 0])) + PNG1[33:], "image/png"),
    ],
    ids=["gif", "gif-as-png", "bmp", "bmp-as-png", "jpeg-ls", "apng"],
)
async def test_JSON_16_gif_bmp_jpeg_ls_refused(echo: Harness, data: bytes, mime: str):
    stdout = out({"type": "image", "mimeType": mime, "data": b64(data)})
    assert error_text(await echo.call({"stdout": stdout})) == INVALID


@pytest.mark.parametrize(
    ("data", "mime"),
    [(PNG1, "image/jpeg"), (PNG1, "IMAGE/PNG"), (JPEG1, "image/webp"), (WEBP1, "")],
    ids=["png-as-jpeg", "uppercase", "jpeg-as-webp", "empty-mime"],
)
async def test_JSON_18_mime_must_match_exactly(echo: Harness, data: bytes, mime: str):
    stdout = out({"type": "image", "mimeType": mime, "data": b64(data)})
    assert error_text(await echo.call({"stdout": stdout})) == INVALID


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image", "mimeType": "image/png"},
        {"type": "image", "mimeType": "image/png", "data": b64(PNG1), "path": "x.png"},
        {"type": "image", "mimeType": "image/png", "data": b64(PNG1), "extra": 1},
        {"type": "image", "mimeType": "image/png", "data": 42},
        {"type": "image", "mimeType": 42, "data": b64(PNG1)},
    ],
    ids=["no-source", "both", "extra", "data-not-string", "mime-not-string"],
)
async def test_JSON_19_image_block_must_have_exactly_one_source(
    echo: Harness, block: dict[str, Any]
):
    args = {"files": {"x.png": b64(PNG1)}, "stdout": out(block)}
    assert error_text(await echo.call(args)) == INVALID


async def test_JSON_20_unpadded_base64_accepted_and_canonicalized(echo: Harness):
    unpadded = JPEG1_B64.rstrip("=")
    assert unpadded != JPEG1_B64
    stdout = out({"type": "image", "mimeType": "image/jpeg", "data": unpadded})
    result = await echo.call({"stdout": stdout})
    assert result.content == ({"type": "image", "data": JPEG1_B64, "mimeType": "image/jpeg"},)


@pytest.mark.parametrize(
    "data",
    ["", "=", "%%%", "abcd===", "data:image/png;base64,aGVsbG8=", " " + b64(PNG1)],
    ids=["empty", "pad-only", "percent", "over-padded", "data-uri", "leading-space"],
)
async def test_JSON_22_base64_syntax(echo: Harness, data: str):
    stdout = out({"type": "image", "mimeType": "image/png", "data": data})
    assert error_text(await echo.call({"stdout": stdout})) == INVALID


async def test_JSON_23_image_with_is_error(echo: Harness):
    stdout = out({"type": "image", "mimeType": "image/png", "data": b64(PNG1)}, isError=True)
    assert error_text(await echo.call({"stdout": stdout})) == INVALID


async def test_JSON_24_scoped_argv_references(W: Path, output_root: Path):
    fx_c(W, args=[*PY, "{a}/data.txt", "--in={a}/data.txt", "--mode=fast", "{a}"])
    (W / "data.txt").write_text("data", encoding="utf-8")
    h = harness(W, output_root)
    argv = ok_json(await h.call(report("data = sys.argv[1:]")))
    assert argv == [f"{W}/data.txt", f"--in={W}/data.txt", "--mode=fast", str(W)]


async def test_a_mounted_file_artifact_is_its_file_never_its_folder(W: Path, output_root: Path):
    """``{a}/spec`` where ``spec`` mounts a file Artifact names that file; it must not hand
    the tool the containing folder, which would expose the file's siblings."""
    fx_c(W, args=[*PY, "{a}/spec", "--spec={a}/spec"])
    shared = W / "shared"
    shared.mkdir()
    (shared / "spec.md").write_text("the spec", encoding="utf-8")
    (shared / "secret.txt").write_text("not in scope", encoding="utf-8")
    (shared / "spec.md.artf").write_text('name = "spec"\n', encoding="utf-8")
    text = (W / "index.artf").read_text(encoding="utf-8")
    (W / "index.artf").write_text('mounts = { spec = "spec" }\n' + text, encoding="utf-8")
    h = harness(W, output_root)
    argv = ok_json(await h.call(report("data = sys.argv[1:]")))
    assert argv == [f"{shared}/spec.md", f"--spec={shared}/spec.md"]


JSON_25_VARIANTS: dict[str, dict[str, Any]] = {
    "command-traversal": {"command": "../outside", "args": []},
    "command-through-link": {"command": "link/outside", "args": []},
    "execution-path-link": {"execution_paths": ["link"]},
    "execution-path-missing": {"execution_paths": ["missing"]},
    "argv-traversal": {"args": [*PY, "{a}/../escape"]},
    "argv-link": {"args": [*PY, "{a}/link"]},
    "argv-missing": {"args": [*PY, "{a}/missing"]},
    "argv-unknown-artifact": {"args": [*PY, "{nobody}"]},
}


@pytest.mark.parametrize("variant", sorted(JSON_25_VARIANTS))
async def test_JSON_25_argv_command_execution_path_escapes(
    tmp_path: Path, W: Path, output_root: Path, variant: str
):
    outside = Path(os.path.realpath(tmp_path)) / "outside-dir"
    outside.mkdir()
    toucher = f"#!/bin/sh\ntouch {W}/spawned\n"
    for program in (Path(os.path.realpath(tmp_path)) / "outside", outside / "outside"):
        program.write_text(toucher, encoding="utf-8")
        program.chmod(0o755)
    (W / "link").symlink_to(outside)
    (tmp_path / "escape").write_text("escape", encoding="utf-8")
    fx_c(W, **JSON_25_VARIANTS[variant])
    try:
        h = harness(W, output_root)
    except ConfigError:
        pass  # rejected at load
    else:
        result = await h.call({"marker": True, "stdout": out(text("ran"))})
        assert error_text(result) == PREP_FAILED
    assert not (W / "spawned").exists()
    only_retained(output_root)


# --- H. Plain protocol ----------------------------------------------------------------------------

PLAIN_01_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "n": {"type": "integer"},
        "items": {"type": "array"},
    },
    "required": ["query", "n", "items"],
}
PLAIN_01_ARGS = [
    *PY,
    "{query}",
    "--query={query}",
    "{n}",
    "{items}",
    "{{query}}",
    '{{"literal":true}}',
]


async def test_PLAIN_01_literal_single_pass_substitution(W: Path, output_root: Path):
    fx_p(W, args=PLAIN_01_ARGS, input_schema=PLAIN_01_SCHEMA)
    h = harness(W, output_root)
    q = "a b ' \" ; $(touch injected)\n{n} \\ $HOME `touch injected` | & > x {{q}} }} {"
    argv = json.loads(ok_text(await h.call({"query": q, "n": 42, "items": [1, True]})))
    assert argv == [q, "--query=" + q, "42", "[1,true]", "{query}", '{"literal":true}']
    assert not (W / "injected").exists()
    assert not (W / "x").exists()


async def test_PLAIN_01_non_string_values_are_compact_json(W: Path, output_root: Path):
    schema = {"type": "object", "properties": {k: {} for k in "abcdefg"}}
    fx_p(W, args=[*PY, *(f"{{{k}}}" for k in "abcdefg"), "x{a}y{b}z"], input_schema=schema)
    h = harness(W, output_root)
    values: dict[str, Any] = {
        "a": 2.0,
        "b": True,
        "c": None,
        "d": {"k": [1, "é"], "n": {"m": False}},
        "e": "é ✓",
        "f": -7,
        "g": [],
    }
    argv = json.loads(ok_text(await h.call(values)))
    assert argv == [
        "2.0",
        "true",
        "null",
        '{"k":[1,"é"],"n":{"m":false}}',
        "é ✓",
        "-7",
        "[]",
        "x2.0ytruez",
    ]


@pytest.mark.parametrize(
    "args",
    [
        {"query": "\u0000", "n": 42, "items": []},
        {"query": "before\u0000after", "n": 42, "items": []},
    ],
    ids=["nul", "embedded-nul"],
)
async def test_PLAIN_02_nul_refused_before_spawn(W: Path, output_root: Path, args: dict[str, Any]):
    fx_p(W, args=PLAIN_01_ARGS, input_schema=PLAIN_01_SCHEMA)
    h = harness(W, output_root)
    assert error_text(await h.call(args)) == PREP_FAILED
    assert not h.spawned()


async def test_PLAIN_03_missing_placeholder_value_fails_preparation(W: Path, output_root: Path):
    fx_p(
        W,
        args=[*PY, "--opt={opt}"],
        input_schema={"type": "object", "properties": {"opt": {"type": "string"}}},
    )
    h = harness(W, output_root)
    assert error_text(await h.call({})) == PREP_FAILED
    assert not h.spawned()
    assert sorted(os.listdir(W)) == ["index.artf", "tool.py"]
    # With the value present the same tool runs.
    assert json.loads(ok_text(await h.call({"opt": "v"}))) == ["--opt=v"]


async def test_PLAIN_04_placeholders_must_be_declared_properties(W: Path, output_root: Path):
    fx_p(W, args=["--q={query}"], input_schema={"type": "object"})
    with pytest.raises(ConfigError):
        load(W)
    fx_p(W, args=["--q={query}"], input_schema={"type": "object", "properties": {"x": {}}})
    with pytest.raises(ConfigError):
        load(W)
    fx_p(W, args=["--q={query}"])  # the default schema declares no properties
    (W / "index.artf").write_text(
        (W / "index.artf").read_text(encoding="utf-8").replace(', "input_schema" = {}', ""),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError):
        load(W)
    schema = {"type": "object", "properties": {"query": {"type": ["string", "null"]}}}
    fx_p(W, args=[*PY, "--q={query}"], input_schema=schema)
    h = harness(W, output_root)
    assert json.loads(ok_text(await h.call({"query": None}))) == ["--q=null"]


@pytest.mark.parametrize("arg", ["{", "{}", "}", "a}b", "{a{b}", "x{a", "{{a}"])
def test_PLAIN_06_template_syntax_errors_at_load(W: Path, arg: str):
    fx_p(W, args=[arg], input_schema={"type": "object", "properties": {"a": {}, "a{b": {}}})
    with pytest.raises(ConfigError):
        load(W)


async def test_PLAIN_07_csi_and_c0_cleaning_stderr_excluded(W: Path, output_root: Path):
    script = (
        "import sys\n"
        "sys.stdout.buffer.write(b'\\x1b[31mhello\\x1b[0m\\x00\\t\\n')\n"
        "sys.stderr.write('stderr-secret')\n"
    )
    fx_p(W, script=script)
    h = harness(W, output_root)
    result = await h.call()
    assert result.to_json() == {"content": [text("hello\t\n")]}


async def test_PLAIN_07_lossy_decoding_and_kept_characters(W: Path, output_root: Path):
    script = (
        "import sys\n"
        "sys.stdout.buffer.write(b'a\\xffb\\r\\n\\x7f\\x1b]title\\x07c\\x1b[31\\x0b\\x0c\\x1f')\n"
    )
    fx_p(W, script=script)
    h = harness(W, output_root)
    assert ok_text(await h.call()) == "a\ufffdb\r\n\x7f]titlec[31"


async def test_PLAIN_09_nonzero_exit_keeps_bounded_stdout_as_a_tool_error(
    W: Path, output_root: Path
):
    script = "import sys\nprint('domain detail')\nsys.stderr.write('stderr-secret')\nsys.exit(3)\n"
    fx_p(W, script=script)
    h = harness(W, output_root)
    message = error_text(await h.call())
    assert message.startswith(PLAIN_FAILED)
    assert "domain detail" in message
    assert "stderr-secret" not in message


async def test_PLAIN_09_signal_and_empty_output_are_errors_too(W: Path, output_root: Path):
    fx_p(W, script="import os\nos.kill(os.getpid(), 9)\n")
    h = harness(W, output_root)
    assert error_text(await h.call()).startswith(PLAIN_FAILED.rstrip("\n"))


async def test_PLAIN_10_64_KiB_cap_with_marker(W: Path, output_root: Path):
    fx_p(W, script="print('界' * 100000)\n")
    h = harness(W, output_root)
    got = ok_text(await h.call())
    encoded = got.encode("utf-8")
    assert len(encoded) <= TEXT_BLOCK_MAX_BYTES
    assert got.endswith(TRUNCATION_MARKER)
    assert "\ufffd" not in got
    assert got[: -len(TRUNCATION_MARKER)] == "界" * len(got[: -len(TRUNCATION_MARKER)])


@pytest.mark.parametrize("size", [TEXT_BLOCK_MAX_BYTES, TEXT_BLOCK_MAX_BYTES + 1])
async def test_PLAIN_10_cap_boundary(W: Path, output_root: Path, size: int):
    fx_p(W, script=f"import sys\nsys.stdout.write('x' * {size})\n")
    h = harness(W, output_root)
    got = ok_text(await h.call())
    if size <= TEXT_BLOCK_MAX_BYTES:
        assert got == "x" * size
    else:
        assert len(got.encode("utf-8")) == TEXT_BLOCK_MAX_BYTES
        assert got == "x" * (TEXT_BLOCK_MAX_BYTES - len(TRUNCATION_MARKER)) + TRUNCATION_MARKER


async def test_PLAIN_10_cap_applies_to_failed_output_with_its_prefix(W: Path, output_root: Path):
    fx_p(W, script="import sys\nsys.stdout.write('x' * 70000)\nsys.exit(1)\n")
    h = harness(W, output_root)
    got = error_text(await h.call())
    assert got.startswith(PLAIN_FAILED) and got.endswith(TRUNCATION_MARKER)
    assert len(got.encode("utf-8")) <= TEXT_BLOCK_MAX_BYTES


async def test_PLAIN_12_empty_output(W: Path, output_root: Path):
    fx_p(W, script="")
    h = harness(W, output_root)
    result = await h.call()
    assert result.to_json() == {"content": [{"type": "text", "text": ""}]}


# --- I. Environment, cwd, deadlines, process groups -----------------------------------------------


def author_env(**extra: str) -> dict[str, str]:
    env = {
        "PATH": TEST_PATH,
        "HOME": "/home/author-real",
        "USER": "author",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "SECRET_TOKEN": "hunter2",
    }
    env.update(extra)
    return env


async def test_ENV_01_author_environment_without_caller_artifactize_variables(
    W: Path, output_root: Path
):
    fx_c(W)
    caller = author_env(
        ARTIFACTIZE_STATE_HOME="/caller/state",
        ARTIFACTIZE_OUTPUT_DIR="/caller/output",
        ARTIFACTIZE_SESSION_DIR="/caller/session",
        ARTIFACTIZE_TOKEN="caller-secret",
    )
    h = harness(W, output_root, caller)
    data = ok_json(await h.call(report("data = {'env': dict(os.environ), 'ctx': ctx}")))
    env, ctx = data["env"], data["ctx"]
    env.pop("LC_CTYPE", None)  # a Python child may add it itself
    assert "caller-secret" not in json.dumps(env)
    assert {k for k in env if k.startswith("ARTIFACTIZE_")} <= {
        "ARTIFACTIZE_WORKSPACE_DIR",
        "ARTIFACTIZE_OUTPUT_DIR",
        "ARTIFACTIZE_TMP_DIR",
    }
    assert env.get("ARTIFACTIZE_WORKSPACE_DIR", str(W)) == str(W)
    assert env.get("ARTIFACTIZE_OUTPUT_DIR") == ctx["outputDir"]
    own = {k: v for k, v in env.items() if not k.startswith("ARTIFACTIZE_")}
    expected = {k: v for k, v in caller.items() if not k.startswith("ARTIFACTIZE_")}
    expected.update(TMPDIR=ctx["tmpDir"], TMP=ctx["tmpDir"], TEMP=ctx["tmpDir"])
    assert own == expected
    assert env["HOME"] == "/home/author-real", "the real home"


async def test_ENV_01_plain_tools_get_the_same_environment(W: Path, output_root: Path):
    fx_p(W, script="import json, os\nprint(json.dumps(dict(os.environ)), end='')\n")
    h = harness(W, output_root, author_env(ARTIFACTIZE_TOKEN="caller-secret"))
    env = json.loads(ok_text(await h.call()))
    assert "caller-secret" not in json.dumps(env)
    assert env["HOME"] == "/home/author-real"
    assert env["SECRET_TOKEN"] == "hunter2"
    assert env["TMPDIR"] == env["TMP"] == env["TEMP"]
    assert env["TMPDIR"].startswith(f"{output_root}/tmp-")


async def test_ENV_02_private_tmp_and_output(W: Path, output_root: Path):
    fx_c(W)
    h = harness(W, output_root, author_env())
    code = (
        "names = ('TMPDIR', 'TMP', 'TEMP', 'ARTIFACTIZE_TMP_DIR', 'ARTIFACTIZE_OUTPUT_DIR', 'HOME')\n"
        "data = {n: os.environ.get(n) for n in names}\n"
        "data['modes'] = {}\n"
        "for d in (ctx['tmpDir'], ctx['outputDir']):\n"
        "    open(os.path.join(d, 'written'), 'w').close()\n"
        "    data['modes'][d] = oct(os.stat(d).st_mode & 0o777)\n"
        "data['ctx'] = ctx\n"
    )
    data = ok_json(await h.call(report(code)))
    ctx = data["ctx"]
    assert data["HOME"] == "/home/author-real" != data["TMPDIR"]
    assert data["TMPDIR"] == data["TMP"] == data["TEMP"] == ctx["tmpDir"]
    assert data["ARTIFACTIZE_TMP_DIR"] == ctx["tmpDir"]
    assert data["ARTIFACTIZE_OUTPUT_DIR"] == ctx["outputDir"]
    assert ctx["tmpDir"] != ctx["outputDir"]
    for directory in (ctx["tmpDir"], ctx["outputDir"]):
        assert data["modes"][directory] == "0o700"
        assert not directory.startswith(f"{W}/")
        assert not Path(directory).exists()


async def test_ENV_02_without_an_output_root_the_system_temp_dir_is_used(W: Path):
    fx_c(W)
    h = harness(W, W.parent / "unused")
    result = await h.registry.call("inspect_a", report("data = ctx"), None)
    ctx = ok_json(result)
    temp = os.path.realpath(tempfile.gettempdir())
    for directory in (ctx["tmpDir"], ctx["outputDir"]):
        assert os.path.dirname(directory) == temp
        assert not Path(directory).exists()


@pytest.mark.parametrize(
    ("lang", "expected"), [(None, "en_US.UTF-8"), ("C.UTF-8", "C.UTF-8")], ids=["unset", "set"]
)
async def test_ENV_03_lang_fallback(W: Path, output_root: Path, lang: str | None, expected: str):
    fx_c(W)
    env = author_env()
    env.pop("LC_ALL")
    env.pop("LANG")
    if lang is not None:
        env["LANG"] = lang
    h = harness(W, output_root, env)
    assert ok_json(await h.call(report("data = os.environ.get('LANG')"))) == expected


async def test_ENV_04_cwd_for_a_folder_artifact(echo: Harness):
    data = ok_json(await echo.call(report("data = [os.getcwd(), ctx['artifactPath']]")))
    assert data == [str(echo.W), str(echo.W)]


async def test_ENV_04_cwd_for_a_file_artifact(W: Path, output_root: Path):
    declare(W, {"name": "root"})
    (W / "sub").mkdir()
    (W / "sub/doc.md").write_text("# Doc\n", encoding="utf-8")
    declare(
        W / "sub/doc.md.artf",
        {
            "name": "doc",
            "views": {"agent_tools": {"inspect": command_tool(input_schema=ANY_OBJECT)}},
            "evals": {"review": AGENT_EVAL},
        },
    )
    (W / "sub/tool.py").write_text(ECHO_TOOL, encoding="utf-8")
    h = harness(W, output_root, eval_id="doc/review")
    data = ok_json(
        await h.call(
            report("data = [os.getcwd(), ctx['artifactPath'], ctx['scope']]"), name="inspect_doc"
        )
    )
    cwd, artifact_path, scope = data
    assert cwd == f"{W}/sub"
    assert artifact_path == f"{W}/sub/doc.md"
    assert scope["doc"] == {
        "path": f"{W}/sub/doc.md",
        "kind": "file",
        "children": {},
        "mounts": {},
    }


async def test_ENV_04_file_artifact_target_replaced_runs_nothing(W: Path, output_root: Path):
    declare(W, {"name": "root"})
    (W / "sub").mkdir()
    (W / "sub/doc.md").write_text("# Doc\n", encoding="utf-8")
    declare(
        W / "sub/doc.md.artf",
        {
            "name": "doc",
            "views": {"agent_tools": {"inspect": command_tool(input_schema=ANY_OBJECT)}},
            "evals": {"review": AGENT_EVAL},
        },
    )
    (W / "sub/tool.py").write_text(ECHO_TOOL, encoding="utf-8")
    h = harness(W, output_root, eval_id="doc/review")
    (W / "sub/doc.md").unlink()
    (W / "sub/doc.md").symlink_to("tool.py")
    result = await h.call({"marker": True}, name="inspect_doc")
    assert result.is_error
    assert not (W / "sub/spawned").exists()


@pytest.mark.parametrize("where", ["inside", "lexical", "workspace", "through-link"])
async def test_ENV_05_output_root_inside_the_workspace(
    tmp_path: Path, W: Path, output_root: Path, where: str
):
    fx_c(W)
    h = harness(W, output_root)
    alias = Path(os.path.realpath(tmp_path)) / "alias"
    alias.symlink_to(W)
    root = {
        "inside": W / "output",
        "lexical": Path(f"{W}/../{W.name}/output"),
        "workspace": W,
        "through-link": alias / "output",
    }[where]
    before = sorted(os.listdir(W))
    result = await h.registry.call("inspect_a", {"marker": True}, str(root))
    assert error_text(result) == PREP_FAILED
    assert sorted(os.listdir(W)) == before, "nothing is created inside the workspace"
    assert not (W / "spawned").exists()


async def test_PROC_01_deadline(W: Path, output_root: Path):
    fx_c(W, timeout_ms=50)
    h = harness(W, output_root)
    started = time.monotonic()
    assert error_text(await h.call({"code": "import time; time.sleep(60)"})) == TIMED_OUT
    assert time.monotonic() - started < NOT_WAITED_OUT_SECONDS  # the 60 s sleep was cut


async def test_PROC_01_plain_deadline(W: Path, output_root: Path):
    fx_p(W, script="import time\nprint('partial', flush=True)\ntime.sleep(60)\n", timeout_ms=50)
    h = harness(W, output_root)
    started = time.monotonic()
    assert error_text(await h.call()) == TIMED_OUT
    assert time.monotonic() - started < NOT_WAITED_OUT_SECONDS  # the 60 s sleep was cut


def test_PROC_deadline_default_and_range(W: Path):
    fx_c(W)
    tool = load(W).artifact("a").agent_tools[0]
    assert tool.timeout_ms == 120_000
    for accepted in (1, 2147483647):
        fx_c(W, timeout_ms=accepted)
        assert load(W).artifact("a").agent_tools[0].timeout_ms == accepted
    for refused in (0, 2147483648):
        fx_c(W, timeout_ms=refused)
        with pytest.raises(ConfigError):
            load(W)


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False


async def test_PROC_02_group_killed_on_timeout(W: Path, output_root: Path):
    fx_c(W, timeout_ms=1000)
    h = harness(W, output_root)
    code = (
        "import subprocess, time\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        "open(os.path.join(os.getcwd(), 'child.pid'), 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    assert error_text(await h.call({"code": code})) == TIMED_OUT
    pid = int((W / "child.pid").read_text())
    assert _gone_within(pid, GONE_WAIT_SECONDS)


async def test_PROC_02_background_descendants_die_with_a_normal_exit(W: Path, output_root: Path):
    fx_c(W)
    h = harness(W, output_root)
    code = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        "open(os.path.join(os.getcwd(), 'child.pid'), 'w').write(str(child.pid))\n"
    )
    result = await h.call({"code": code, "stdout": out(text("done"))})
    assert ok_text(result) == "done"
    assert _gone_within(int((W / "child.pid").read_text()), GONE_WAIT_SECONDS)


@pytest.mark.parametrize("protocol", ["json", "plain"])
async def test_PROC_05_pre_cancelled_call(W: Path, output_root: Path, protocol: str):
    if protocol == "json":
        fx_c(W)
    else:
        fx_p(W)
    h = harness(W, output_root)
    token = Cancellation()
    token.cancel()
    message = error_text(await h.call({"marker": True} if protocol == "json" else {}, token=token))
    assert "cancelled" in message
    assert not h.spawned()


async def _wait_for(path: Path, seconds: float = GONE_WAIT_SECONDS) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        await anyio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


STARTED_THEN_SLEEP = (
    "import time\n"
    "open(os.path.join(os.getcwd(), 'started'), 'w').write(str(os.getpid()))\n"
    "time.sleep(60)\n"
)


async def test_PROC_06_abandoned_call_cleans_up(W: Path, output_root: Path):
    fx_c(W)
    h = harness(W, output_root)
    finished: list[ToolResult] = []

    async def call() -> None:
        finished.append(
            await h.registry.call("inspect_a", {"code": STARTED_THEN_SLEEP}, str(output_root))
        )

    started = time.monotonic()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call)
        pid = int(await _wait_for(W / "started"))
        tasks.cancel_scope.cancel()
    assert not finished
    assert _gone_within(pid, GONE_WAIT_SECONDS)
    assert time.monotonic() - started < NOT_WAITED_OUT_SECONDS  # the 60 s sleep was cut
    only_retained(output_root)


async def test_PROC_06_cancelled_token_stops_a_running_call(W: Path, output_root: Path):
    fx_c(W)
    h = harness(W, output_root)
    token = Cancellation()
    results: list[ToolResult] = []

    async def call() -> None:
        results.append(await h.call({"code": STARTED_THEN_SLEEP}, token=token))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(call)
            pid = int(await _wait_for(W / "started"))
            token.cancel()
    assert "cancelled" in error_text(results[0])
    assert _gone_within(pid, GONE_WAIT_SECONDS)


async def test_PROC_07_executable_resolution(W: Path, output_root: Path):
    program = W / "unique-tool-not-on-path"
    program.write_text("#!/bin/sh\nprintf 'owner executable'\n", encoding="utf-8")
    program.chmod(0o755)
    fx_p(W, command="unique-tool-not-on-path", args=[])
    h = harness(W, output_root)
    assert error_text(await h.call()) == PREP_FAILED
    fx_p(W, command="./unique-tool-not-on-path", args=[])
    assert ok_text(await harness(W, output_root).call()) == "owner executable"
    fx_p(W, command="printf", args=["%s", "from PATH"])
    assert ok_text(await harness(W, output_root).call()) == "from PATH"
    printf = "/usr/bin/printf"
    if not os.path.exists(printf):
        pytest.skip("no /usr/bin/printf")
    fx_p(W, command=printf, args=["%s", "from PATH"])
    assert ok_text(await harness(W, output_root).call()) == "from PATH"


async def test_PROC_07_relative_path_entries_resolve_against_the_owner_cwd(
    W: Path, output_root: Path
):
    (W / "bin").mkdir()
    program = W / "bin" / "owner-tool"
    program.write_text("#!/bin/sh\nprintf 'from bin'\n", encoding="utf-8")
    program.chmod(0o755)
    fx_p(W, command="owner-tool", args=[])
    env = author_env(PATH="bin:" + TEST_PATH)
    assert ok_text(await harness(W, output_root, env).call()) == "from bin"


async def test_preparation_failure_spawns_nothing_and_creates_nothing(W: Path, output_root: Path):
    fx_c(W, execution_paths=["shared.txt"])
    (W / "shared.txt").write_text("x", encoding="utf-8")
    h = harness(W, output_root)
    (W / "shared.txt").unlink()  # the execution path disappears after loading
    snapshot = sorted(os.listdir(W))
    assert error_text(await h.call({"marker": True})) == PREP_FAILED
    assert sorted(os.listdir(W)) == snapshot
    assert not h.spawned()
    missing_root = output_root / "never-created"
    result = await h.registry.call("inspect_a", {"marker": True}, str(missing_root))
    assert error_text(result) == PREP_FAILED
    assert not missing_root.exists()


async def test_per_call_directories_removed_on_failure_paths(W: Path, output_root: Path):
    """Success, authored error, invalid output, nonzero exit and timeout all clean up."""
    fx_c(W, timeout_ms=1000)
    h = harness(W, output_root)
    leave = (
        "open(os.path.join(ctx['outputDir'], 'left'), 'w').close()\n"
        "open(os.path.join(ctx['tmpDir'], 'left'), 'w').close()\n"
        "os.makedirs(os.path.join(ctx['outputDir'], 'd', 'e'))\n"
        "os.symlink('/', os.path.join(ctx['outputDir'], 'root-link'))\n"
    )
    await h.call({"code": leave, "stdout": out(text("ok"))})
    await h.call({"code": leave, "stdout": out(text("no"), isError=True)})
    await h.call({"code": leave, "stdout": "garbage"})
    await h.call({"code": leave, "exit": 1})
    assert error_text(await h.call({"code": leave + "import time; time.sleep(30)"})) == TIMED_OUT


async def test_output_root_that_cannot_hold_directories_is_an_error_result(tmp_path: Path, W: Path):
    fx_c(W)
    h = harness(W, W.parent / "unused")
    blocker = Path(os.path.realpath(tmp_path)) / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    result = await h.registry.call("inspect_a", {"marker": True}, str(blocker))
    assert result.is_error
    assert not (W / "spawned").exists()
    assert blocker.read_text(encoding="utf-8") == "not a directory"
