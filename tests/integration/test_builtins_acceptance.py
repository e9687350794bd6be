"""Acceptance cases A-E (paths, read, list, glob, grep) and view_image of the built-ins.

Every test runs the reference case of the same ID (``tools-cases.md``) on a real
filesystem, through the Agent tool registry, with the fixtures written as ``.artf`` TOML.
Every call passes an output root that does not exist and checks it still does not: built-in
calls never create it.
"""

from __future__ import annotations

import base64
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from artifactize.domain.tools.registry import AgentToolRegistry, ToolPorts
from artifactize.entrypoints.container import Container
from tests.support.builtin_tools import Tools
from tests.support.images import APNG1, BMP1, GIF1, JPEG1, JPEGLS, PNG1, WEBP1
from tests.support.processes import nothing_left_in_test_trees
from tests.support.workspaces import remove_large_files, write

pytestmark = pytest.mark.anyio

# The tool ports the real composition root builds (a wiring mistake there fails here).
ROOT = Container()
PORTS: ToolPorts = ROOT.tool_ports()

SAFE_PATH = "Artifact path must be a safe relative logical path."
SYMLINK = "Cannot open Artifact input without symlink traversal."
SPECIAL = "Artifact input must be a regular file or directory."
SCHEMA = "Tool arguments"
GLOB_REFUSED = "Glob pattern must be relative without traversal components."
BAD_REGEX = "Invalid or oversized regex pattern."
TOO_MANY = "Directory exceeds the 10,000-entry listing limit; choose a narrower path."

EVAL = """
[evals.review]
title = "Review"
profile = { kind = "agent", backend = "openai", model = "test" }
payload = { instruction = "INSTRUCTION" }
"""

# Opening a FIFO without a writer blocks forever; any finite bound proves it was not opened,
# so the bound is generous enough for a loaded CI machine.
NOT_BLOCKED_SECONDS = 30
FIVE_BUILTINS = """
[views.agent_tools.read]
builtin = "read"
[views.agent_tools.list]
builtin = "list"
[views.agent_tools.glob]
builtin = "glob"
[views.agent_tools.grep]
builtin = "grep"
[views.agent_tools.view_image]
builtin = "view_image"
"""
IMAGE_FORMAT_REFUSED = (
    "Image must be PNG, JPEG or WebP; GIF, BMP and animated PNG are not supported."
)
IMAGE_SIZE_REFUSED = "Image exceeds the 4 MiB limit or contains no data."


@pytest.fixture(scope="module", autouse=True)
def leaves_nothing_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with nothing_left_in_test_trees(tmp_path_factory):
        yield


@pytest.fixture
def W(tmp_path: Path) -> Iterator[Path]:
    """The canonical workspace; the output root ``O`` is its sibling and never exists."""
    workspace = Path(os.path.realpath(tmp_path)) / "W"
    workspace.mkdir()
    yield workspace
    remove_large_files(tmp_path)


def declare(
    folder: Path,
    name: str,
    *,
    tools: str = FIVE_BUILTINS,
    mounts: dict[str, str] | None = None,
    instruction: str | None = "Review.",
    artf: str = "index.artf",
) -> None:
    head = f'name = "{name}"\n'
    if mounts:
        head += "mounts = { " + ", ".join(f'{k} = "{v}"' for k, v in mounts.items()) + " }\n"
    body = tools
    if instruction is not None:
        body += EVAL.replace("INSTRUCTION", instruction)
    write(folder / artf, head + body)


def fx_a(W: Path, *, mounts: dict[str, str] | None = None) -> None:
    declare(W / "a", "a", mounts=mounts)


def fx_path19(W: Path, *, b_mounts: dict[str, str] | None = None) -> None:
    """FX-A with mount ``source`` -> ``b`` and the child Artifact ``cases``."""
    fx_a(W, mounts={"source": "b"})
    declare(W / "b", "b", tools="", mounts=b_mounts, instruction=None)
    write(W / "b" / "input.txt", "mounted\n")
    declare(W / "a" / "nested" / "cases", "cases", tools="", instruction=None)
    write(W / "a" / "nested" / "cases" / "input.txt", "child\n")


def fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def unix_socket(path: Path) -> None:
    """Bind a Unix socket at ``path`` (relative bind: tmp paths may exceed sun_path)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(path.name)
    finally:
        os.chdir(cwd)


def load(W: Path) -> Any:
    return ROOT.config_service().load(str(W))


def tools(W: Path, eval_id: str = "a/review") -> Tools:
    return Tools(AgentToolRegistry.for_eval(load(W), eval_id, PORTS), W.parent / "O")


def artifact_tools(W: Path, artifact: str) -> Tools:
    return Tools(AgentToolRegistry.for_artifact(load(W), artifact, PORTS), W.parent / "O")


def scoped_tools(W: Path, scope: tuple[str, ...]) -> Tools:
    return Tools(AgentToolRegistry(load(W), scope, PORTS), W.parent / "O")


# A. Logical path validation


async def test_registry_publishes_fx_a_names(W: Path) -> None:
    fx_a(W)
    names = [t.name for t in tools(W).registry.list()]
    assert names == ["glob_a", "grep_a", "list_a", "read_a", "view_image_a"]


async def test_PATH_01_absolute_path(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    t = tools(W)
    for name in ("read_a", "list_a", "view_image_a"):
        assert SAFE_PATH in await t.err(name, {"path": "/etc/passwd"})
    for name in ("glob_a", "grep_a"):
        assert SAFE_PATH in await t.err(name, {"path": "/etc/passwd", "pattern": ".*"})


async def test_PATH_02_parent_traversal_leaks_nothing(W: Path) -> None:
    fx_a(W)
    write(W / "outside/secret", "secret")
    write(W / "a/data/file", "visible")
    t = tools(W)
    for path in ("../outside/secret", "data/../index.artf"):
        text = await t.err("read_a", {"path": path})
        assert SAFE_PATH in text
        assert "secret" not in text.replace(path, "")


async def test_PATH_03_dot_and_empty_components(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    t = tools(W)
    for path in ("data/./file", "./data/file", "data//file", "data/", "data/file/."):
        assert SAFE_PATH in await t.err("read_a", {"path": path})


async def test_PATH_04_backslash_and_colon(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    t = tools(W)
    for name in ("read_a", "list_a", "view_image_a"):
        assert SAFE_PATH in await t.err(name, {"path": "data\\file"})
    for name in ("glob_a", "grep_a"):
        assert SAFE_PATH in await t.err(name, {"path": "data\\file", "pattern": ".*"})
    for path in ("C:/Windows/win.ini", "data:stream"):
        assert SAFE_PATH in await t.err("read_a", {"path": path})


async def test_PATH_05_control_characters(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    t = tools(W)
    for path in ("data/fi\u0001le", "data/file\n", "data/file\u001f"):
        assert SAFE_PATH in await t.err("read_a", {"path": path})


async def test_PATH_06_del_is_a_control_character(W: Path) -> None:
    fx_a(W)
    write(W / "a" / "x\x7f", "readable")
    text = await tools(W).err("read_a", {"path": "x\x7f"})
    assert SAFE_PATH in text
    assert "readable" not in text


async def test_PATH_07_4096_unit_boundary_ascii(W: Path) -> None:
    fx_a(W)

    def p(n: int) -> str:
        return "/".join(["d" * 200] * 20 + ["d" * n])

    assert len(p(76)) == 4096
    t = tools(W)
    assert await t.err("read_a", {"path": p(76)}) == f'No "{p(76)}" in Artifact a.'
    assert SCHEMA in await t.err("read_a", {"path": p(77)})


async def test_PATH_09_symlinked_file_component(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    (W / "a/link").symlink_to("data/file")
    t = tools(W)
    assert await t.err("read_a", {"path": "link"}) == SYMLINK
    assert await t.err("view_image_a", {"path": "link"}) == SYMLINK


async def test_PATH_10_symlinked_directory_component(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    (W / "a/linkdir").symlink_to("data")
    (W / "a/escape").symlink_to(W.parent)
    t = tools(W)
    assert await t.err("read_a", {"path": "linkdir/file"}) == SYMLINK
    assert await t.err("list_a", {"path": "linkdir"}) == SYMLINK
    assert await t.err("list_a", {"path": "escape"}) == SYMLINK


async def test_PATH_11_special_files_refused_without_blocking(W: Path) -> None:
    fx_a(W)
    fifo(W / "a/fifo")
    unix_socket(W / "a/socket")
    t = tools(W)
    for special in ("fifo", "socket"):
        calls: list[tuple[str, dict[str, Any]]] = [
            ("read_a", {"path": special}),
            ("list_a", {"path": special}),
            ("view_image_a", {"path": special}),
            ("grep_a", {"path": special, "pattern": ".*"}),
        ]
        for name, args in calls:
            started = time.monotonic()
            text = await t.err(name, args)
            assert time.monotonic() - started < NOT_BLOCKED_SECONDS
            if special == "fifo":
                assert text == SPECIAL, (name, text)
            else:
                assert text == SPECIAL or text.startswith("Cannot open Artifact input: ")


async def test_PATH_12_file_used_as_directory(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    text = await tools(W).err("read_a", {"path": "data/file/x"})
    assert text.startswith("Cannot open Artifact input: ")
    assert "Not a directory" in text


async def test_PATH_13_missing_path_messages_and_hints(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    t = tools(W)
    assert await t.err("read_a", {"path": "notes.md"}) == 'No "notes.md" in Artifact a.'
    assert (
        await t.err("grep_a", {"path": "data/missing", "pattern": ".*"})
        == 'No "data/missing" in Artifact a.'
    )
    assert await t.err("read_a", {"path": "a/data/file"}) == (
        'No "a/data/file" in Artifact a; paths are relative to the Artifact '
        '(for example "data/file"), without its name.'
    )
    assert await t.err("view_image_a", {"path": "a/image.png"}) == (
        'No "a/image.png" in Artifact a; paths are relative to the Artifact '
        '(for example "image.png"), without its name.'
    )
    assert await t.err("list_a", {"path": "a"}) == (
        'No "a" in Artifact a; paths are relative to the Artifact, without its name '
        '(its root is "").'
    )


async def test_PATH_13_hint_quotes_like_rust_debug(W: Path) -> None:
    fx_a(W)
    t = tools(W)
    assert await t.err("read_a", {"path": 'q"uo"te'}) == 'No "q\\"uo\\"te" in Artifact a.'
    assert await t.err("read_a", {"path": "ünï"}) == 'No "ünï" in Artifact a.'
    assert await t.err("read_a", {"path": "ab/data"}) == 'No "ab/data" in Artifact a.'


async def test_PATH_15_artifact_folder_swapped_for_symlink(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    t = tools(W)
    (W / "a").rename(W / "old-a")
    (W / "a").symlink_to("old-a")
    text = await t.err("read_a", {"path": "data/file"})
    assert "visible" not in text


def fx_hero(W: Path, *, mounts: dict[str, str] | None = None) -> None:
    write(W / "images/hero.png", PNG1)
    write(W / "images/sibling.png", PNG1)
    tools_toml = """
[views.agent_tools.view_image]
builtin = "view_image"
[views.agent_tools.list]
builtin = "list"
[views.agent_tools.read]
builtin = "read"
[views.agent_tools.glob]
builtin = "glob"
[views.agent_tools.grep]
builtin = "grep"
"""
    declare(
        W / "images",
        "hero",
        tools=tools_toml,
        mounts=mounts,
        instruction=None,
        artf="hero.png.artf",
    )


async def test_PATH_16_file_artifact_virtual_root(W: Path) -> None:
    fx_hero(W)
    t = artifact_tools(W, "hero")
    block = await t.image("view_image_hero", {"path": "hero.png"})
    assert block == {
        "type": "image",
        "data": base64.b64encode(PNG1).decode(),
        "mimeType": "image/png",
    }
    assert (
        await t.err("view_image_hero", {"path": "sibling.png"})
        == "File Artifact hero exposes only its target hero.png and mounts."
    )
    for args in ({"path": "."}, {}):
        data = await t.ok("list_hero", args)
        assert data["path"] == args.get("path", "")  # the logical request path, echoed
        assert data["entries"] == [{"name": "hero.png", "path": "hero.png", "kind": "file"}]
        assert data["totalEntries"] == 1
    assert SAFE_PATH in await t.err("read_hero", {"path": "."})


async def test_PATH_16_file_artifact_searches_see_only_the_target(W: Path) -> None:
    fx_hero(W)
    write(W / "images/notes.txt", "hero\n")
    t = artifact_tools(W, "hero")
    for args in ({"path": ".", "pattern": "*"}, {"pattern": "*"}):
        data = await t.ok("glob_hero", args)
        assert data["files"] == ["hero.png"]
        assert data["path"] == args.get("path", "")  # the logical request path, echoed
    data = await t.ok("grep_hero", {"path": ".", "pattern": "hero"})
    assert data["matches"] == [] and data["path"] == "."


async def test_PATH_17_lone_dot_only_for_file_artifacts(W: Path) -> None:
    fx_a(W)
    t = tools(W)
    assert SAFE_PATH in await t.err("list_a", {"path": "."})
    assert SAFE_PATH in await t.err("glob_a", {"path": ".", "pattern": "*"})
    assert SAFE_PATH in await t.err("grep_a", {"path": ".", "pattern": "x"})


async def test_PATH_18_out_of_scope_child_and_mount_no_case_folding(W: Path) -> None:
    declare(
        W,
        "parent",
        tools='[views.agent_tools.read]\nbuiltin = "read"\n',
        mounts={"Remote": "unavailable"},
    )
    declare(W / "Secret", "child", tools="", instruction=None)
    write(W / "Secret/x", "excluded")
    declare(W / "elsewhere", "unavailable", tools="", instruction=None)
    write(W / "elsewhere/x", "excluded")
    write(W / "public", "visible")
    write(W / "secret/x", "distinct")
    t = scoped_tools(W, ("parent",))
    for path in ("Secret/x", "Remote/x"):
        text = await t.err("read_parent", {"path": path})
        assert "Artifact is outside this review" in text
        assert "excluded" not in text
    data = await t.ok("read_parent", {"path": "public"})
    assert data["lines"][0]["text"] == "visible"
    data = await t.ok("read_parent", {"path": "secret/x"})
    assert data["lines"][0]["text"] == "distinct"


async def test_PATH_19_mount_and_child_resolution_metadata(W: Path) -> None:
    fx_path19(W)
    t = tools(W)
    data = await t.ok("read_a", {"path": "source/input.txt"})
    assert (data["artifactId"], data["resolvedArtifactId"], data["path"]) == (
        "a",
        "b",
        "source/input.txt",
    )
    assert data["lines"] == [{"number": 1, "text": "mounted\n"}]
    data = await t.ok("read_a", {"path": "nested/cases/input.txt"})
    assert (data["artifactId"], data["resolvedArtifactId"], data["path"]) == (
        "a",
        "cases",
        "nested/cases/input.txt",
    )
    assert data["lines"] == [{"number": 1, "text": "child\n"}]


# B. read


def fx_read01(W: Path) -> None:
    fx_a(W)
    write(W / "a/text", b"\xef\xbb\xbf" + "one\r\n\n三\nlast".encode())


async def test_READ_01_pagination_with_crlf_and_bom(W: Path) -> None:
    fx_read01(W)
    data = await tools(W).ok("read_a", {"path": "text", "limit": 2})
    assert data["lines"] == [
        {"number": 1, "text": "\ufeffone\r\n"},
        {"number": 2, "text": "\n"},
    ]
    assert (data["startLine"], data["endLine"], data["lineCount"]) == (1, 2, 2)
    assert (data["truncated"], data["nextOffset"]) == (True, 3)
    assert "totalLines" not in data


async def test_READ_02_second_page_reaches_eof(W: Path) -> None:
    fx_read01(W)
    data = await tools(W).ok("read_a", {"path": "text", "offset": 3})
    assert data["lines"] == [{"number": 3, "text": "三\n"}, {"number": 4, "text": "last"}]
    assert (data["endLine"], data["totalLines"]) == (4, 4)
    assert (data["truncated"], data["nextOffset"]) == (False, None)


async def test_READ_03_exact_full_object_shape(W: Path) -> None:
    fx_a(W)
    write(W / "a/notes.md", "alpha\r\nbeta\nlast")
    data = await tools(W).ok("read_a", {"path": "notes.md", "offset": 2})
    assert data == {
        "artifactId": "a",
        "resolvedArtifactId": "a",
        "path": "notes.md",
        "lines": [{"number": 2, "text": "beta\n"}, {"number": 3, "text": "last"}],
        "startLine": 2,
        "endLine": 3,
        "lineCount": 2,
        "truncated": False,
        "nextOffset": None,
        "totalLines": 3,
    }
    assert list(data) == [
        "artifactId",
        "resolvedArtifactId",
        "path",
        "lines",
        "startLine",
        "endLine",
        "lineCount",
        "truncated",
        "nextOffset",
        "totalLines",
    ]


async def test_READ_03_first_page_of_the_shape_example(W: Path) -> None:
    fx_a(W)
    write(W / "a/notes.md", "alpha\r\nbeta\nlast")
    data = await tools(W).ok("read_a", {"path": "notes.md", "limit": 1})
    assert data["lines"] == [{"number": 1, "text": "alpha\r\n"}]
    assert (data["truncated"], data["nextOffset"]) == (True, 2)
    assert "totalLines" not in data


async def test_READ_04_empty_file(W: Path) -> None:
    fx_a(W)
    write(W / "a/text", b"")
    data = await tools(W).ok("read_a", {"path": "text"})
    assert data["lines"] == []
    assert (data["totalLines"], data["lineCount"], data["startLine"]) == (0, 0, 1)
    assert data["endLine"] is None
    assert (data["truncated"], data["nextOffset"]) == (False, None)


async def test_READ_05_page_past_eof_keeps_the_real_total(W: Path) -> None:
    fx_read01(W)
    data = await tools(W).ok("read_a", {"path": "text", "offset": 20})
    assert data["lines"] == []
    assert (data["lineCount"], data["startLine"], data["endLine"]) == (0, 20, None)
    assert (data["totalLines"], data["truncated"], data["nextOffset"]) == (4, False, None)


async def test_READ_07_default_and_maximum_limit(W: Path) -> None:
    fx_a(W)
    write(W / "a/text", "x\n" * 501)
    t = tools(W)
    data = await t.ok("read_a", {"path": "text"})
    assert (data["lineCount"], data["nextOffset"]) == (80, 81)
    data = await t.ok("read_a", {"path": "text", "limit": 500})
    assert (data["lineCount"], data["nextOffset"]) == (500, 501)
    assert SCHEMA in await t.err("read_a", {"path": "text", "limit": 501})
    assert SCHEMA in await t.err("read_a", {"path": "text", "offset": 0})


async def test_READ_08_integer_admission(W: Path) -> None:
    fx_a(W)
    write(W / "a/page.txt", "first\nSECOND\nlast\n")
    t = tools(W)
    data = await t.ok("read_a", {"path": "page.txt", "offset": 2.0, "limit": 1.0})
    assert data["lines"] == [{"number": 2, "text": "SECOND\n"}]
    assert data["startLine"] == 2
    refused: list[Any] = [
        {"path": "page.txt", "offset": 1.5},
        {"path": "page.txt", "offset": None},
        {"path": "page.txt", "offset": 9007199254740992},
        {"path": None},
        {},
        {"path": "x", "extra": True},
    ]
    for args in refused:
        assert (await t.err("read_a", args)).startswith(SCHEMA), args


async def test_READ_09_page_with_a_line_of_exactly_65536_bytes(W: Path) -> None:
    fx_a(W)
    write(W / "a/text", "a" * 65535 + "\n" + "next")
    data = await tools(W).ok("read_a", {"path": "text"})
    assert data["lineCount"] == 1
    assert len(data["lines"][0]["text"]) == 65536
    assert (data["truncated"], data["nextOffset"]) == (True, 2)
    assert "totalLines" not in data


async def test_READ_09_a_first_line_of_65537_bytes_is_refused(W: Path) -> None:
    fx_a(W)
    write(W / "a/text", "a" * 65536 + "\n" + "next")
    assert (
        await tools(W).err("read_a", {"path": "text"})
        == "Artifact line 1 exceeds the 65536-byte read limit."
    )


async def test_READ_10_oversized_first_requested_line(W: Path) -> None:
    fx_a(W)
    write(W / "a/text", "ok\n" + "界" * 30000 + "\n")
    t = tools(W)
    data = await t.ok("read_a", {"path": "text"})
    assert data["lines"] == [{"number": 1, "text": "ok\n"}]
    assert (data["truncated"], data["nextOffset"]) == (True, 2)
    assert (
        await t.err("read_a", {"path": "text", "offset": 2})
        == "Artifact line 2 exceeds the 65536-byte read limit."
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\nvalid\n", "Artifact contains invalid UTF-8 in the requested lines."),
        (b"\x00\nvalid\n", "Binary text (NUL) cannot be read."),
        (b"\xc3\nvalid\n", "Artifact contains invalid UTF-8 in the requested lines."),
    ],
)
async def test_READ_12_binary_or_invalid_in_requested_lines(
    W: Path, content: bytes, message: str
) -> None:
    fx_a(W)
    write(W / "a/text", content)
    t = tools(W)
    assert await t.err("read_a", {"path": "text"}) == message
    data = await t.ok("read_a", {"path": "text", "offset": 2})
    assert data["lines"][0]["text"] == "valid\n"


async def test_READ_13_lines_after_the_page_are_never_decoded(W: Path) -> None:
    fx_a(W)
    write(W / "a/text", b"valid\n\xff\x00")
    data = await tools(W).ok("read_a", {"path": "text", "limit": 1})
    assert data["lines"] == [{"number": 1, "text": "valid\n"}]
    assert (data["truncated"], data["nextOffset"]) == (True, 2)


async def test_READ_14_multibyte_character_across_a_buffer_boundary(W: Path) -> None:
    fx_a(W)
    write(W / "a/text", "a" * 8191 + "é\r\n")
    data = await tools(W).ok("read_a", {"path": "text"})
    text = data["lines"][0]["text"]
    assert text.endswith("é\r\n")
    assert len(text.encode("utf-8")) == 8195


async def test_READ_15_directory_target(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    assert (
        await tools(W).err("read_a", {"path": "data"})
        == "Reading requires a regular file; list the directory first."
    )


# C. list


async def test_LIST_01_root_listing_with_mount_and_entry_shapes(W: Path) -> None:
    fx_path19(W)
    data = await tools(W).ok("list_a", {})
    assert data["artifactId"] == "a"
    assert data["path"] == ""
    assert [e["name"] for e in data["entries"]] == ["index.artf", "nested", "source"]
    assert data["entries"][2] == {
        "name": "source",
        "path": "source",
        "kind": "mount",
        "artifactId": "b",
    }
    assert data["entries"][1] == {"name": "nested", "path": "nested", "kind": "directory"}
    assert (data["totalEntries"], data["truncated"], data["nextOffset"]) == (3, False, None)


async def test_LIST_02_paging_inside_a_child_folder(W: Path) -> None:
    fx_path19(W)
    t = tools(W)
    data = await t.ok("list_a", {"path": "nested/cases", "limit": 1})
    assert data["entries"] == [
        {"name": "index.artf", "path": "nested/cases/index.artf", "kind": "file"}
    ]
    assert (data["totalEntries"], data["truncated"], data["nextOffset"]) == (2, True, 1)
    data = await t.ok("list_a", {"path": "nested/cases", "offset": 1})
    assert data["entries"] == [
        {"name": "input.txt", "path": "nested/cases/input.txt", "kind": "file"}
    ]
    assert (data["truncated"], data["nextOffset"]) == (False, None)


async def test_LIST_03_mount_only_at_the_root_and_limit_applies(W: Path) -> None:
    fx_a(W, mounts={"source": "b"})
    declare(W / "b", "b", tools="", instruction=None)
    write(W / "b/input.txt", "mounted\n")
    data = await tools(W).ok("list_a", {"limit": 1})
    assert data["entries"] == [{"name": "index.artf", "path": "index.artf", "kind": "file"}]
    assert (data["totalEntries"], data["truncated"], data["nextOffset"]) == (2, True, 1)


async def test_LIST_04_201_entries(W: Path) -> None:
    fx_a(W)
    for i in range(201):
        write(W / "a/page" / f"{i:03d}", b"")
    t = tools(W)
    data = await t.ok("list_a", {"path": "page"})
    assert len(data["entries"]) == 200
    assert (data["nextOffset"], data["truncated"]) == (200, True)
    assert data["entries"][0] == {"name": "000", "path": "page/000", "kind": "file"}
    data = await t.ok("list_a", {"path": "page", "offset": 200})
    assert [e["name"] for e in data["entries"]] == ["200"]
    assert (data["nextOffset"], data["truncated"]) == (None, False)
    data = await t.ok("list_a", {"path": "page", "offset": 500})
    assert data["entries"] == []
    assert (data["totalEntries"], data["truncated"], data["nextOffset"]) == (201, False, None)


async def test_LIST_06_links_and_special_entries_listed_not_followed(W: Path) -> None:
    fx_a(W)
    write(W / "a/d/file", "x")
    (W / "a/d/link").symlink_to("file")
    fifo(W / "a/d/fifo")
    (W / "a/d/dead").symlink_to("missing")
    started = time.monotonic()
    data = await tools(W).ok("list_a", {"path": "d"})
    assert time.monotonic() - started < NOT_BLOCKED_SECONDS
    assert {e["name"]: e["kind"] for e in data["entries"]} == {
        "dead": "symlink",
        "fifo": "other",
        "file": "file",
        "link": "symlink",
    }
    assert [e["name"] for e in data["entries"]] == ["dead", "fifo", "file", "link"]


def many_files(folder: Path, count: int) -> None:
    """``count`` empty regular files, as hard links of the first (creating is slow here)."""
    folder.mkdir(parents=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(os.open("00000", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        for i in range(1, count):
            os.link("00000", f"{i:05d}", src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


async def test_LIST_07_10000_entry_limit(W: Path) -> None:
    fx_a(W)
    many_files(W / "a/big", 10_000)
    many_files(W / "a/huge", 10_001)
    t = tools(W)
    data = await t.ok("list_a", {"path": "big"})
    assert (data["totalEntries"], len(data["entries"]), data["nextOffset"]) == (10_000, 200, 200)
    assert await t.err("list_a", {"path": "huge"}) == TOO_MANY


async def test_LIST_08_argument_bounds(W: Path) -> None:
    fx_a(W)
    t = tools(W)
    refused: list[dict[str, Any]] = [
        {"offset": -1},
        {"limit": 0},
        {"limit": 201},
        {"limit": None},
        {"path": None},
        {"offset": None},
    ]
    for args in refused:
        assert (await t.err("list_a", args)).startswith(SCHEMA), args


async def test_LIST_09_listing_a_file(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    assert await tools(W).err("list_a", {"path": "data/file"}) == "Listing requires a directory."


async def test_LIST_10_non_utf8_entry_name_fails_the_listing(W: Path) -> None:
    fx_a(W)
    (W / "a/raw").mkdir()
    os.close(os.open(os.fsencode(W / "a/raw") + b"/\xff", os.O_CREAT | os.O_WRONLY, 0o644))
    assert await tools(W).err("list_a", {"path": "raw"}) == "Artifact paths must be UTF-8."


async def test_LIST_11_file_artifact_root_with_a_mount(W: Path) -> None:
    fx_hero(W, mounts={"ref": "docs"})
    declare(W / "docs", "docs", tools="", instruction=None)
    data = await artifact_tools(W, "hero").ok("list_hero", {"path": "."})
    assert data["path"] == "."
    assert data["entries"] == [
        {"name": "hero.png", "path": "hero.png", "kind": "file"},
        {"artifactId": "docs", "kind": "mount", "name": "ref", "path": "ref"},
    ]
    assert data["totalEntries"] == 2


# D. glob


def fx_glob01(W: Path) -> None:
    fx_a(W)
    write(W / "a/search/a.txt", "Alpha\r\nbeta\nALPHA beta\n")
    write(W / "a/search/sub/b.txt", "alpha\n")
    write(W / "a/search/.hidden.txt", "alpha\n")
    write(W / "a/search/binary.txt", b"alpha\n\0")
    write(W / "a/search/invalid.txt", b"alpha\n\xff")
    (W / "a/search/link.txt").symlink_to("a.txt")


async def test_GLOB_01_star_includes_hidden_skips_links_and_subfolders(W: Path) -> None:
    fx_glob01(W)
    data = await tools(W).ok("glob_a", {"path": "search", "pattern": "*.txt"})
    assert data == {
        "artifactId": "a",
        "resolvedArtifactId": "a",
        "path": "search",
        "files": [
            "search/.hidden.txt",
            "search/a.txt",
            "search/binary.txt",
            "search/invalid.txt",
        ],
        "truncated": False,
    }


async def test_GLOB_02_recursive_from_the_root(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    (W / "a/link").symlink_to("data/file")
    data = await tools(W).ok("glob_a", {"pattern": "**/*"})
    assert data["files"] == ["data/file", "index.artf"]


async def test_GLOB_03_mounts_and_children_crossed_cycle_not_repeated(W: Path) -> None:
    fx_path19(W, b_mounts={"back": "a"})
    # b's own eval admits `hidden` to b's reviews, not to a/review.
    write(
        W / "b/index.artf",
        'name = "b"\nmounts = { back = "a" }\n'
        + EVAL.replace("INSTRUCTION", "Depends on {hidden}."),
    )
    declare(W / "hidden", "hidden", tools='[views.agent_tools.read]\nbuiltin = "read"\n')
    write(W / "hidden/secret.txt", "secret\n")
    t = tools(W)
    assert not any(d.name.endswith("_hidden") for d in t.registry.list())
    data = await t.ok("glob_a", {"pattern": "**/*.txt"})
    assert data["files"] == ["nested/cases/input.txt", "source/input.txt"]
    assert data["truncated"] is False


async def test_GLOB_04_200_result_cap(W: Path) -> None:
    fx_a(W)
    for i in range(201):
        write(W / "a/many" / f"{i:03d}.txt", b"")
    data = await tools(W).ok("glob_a", {"path": "many", "pattern": "**/*.txt"})
    assert len(data["files"]) == 200
    assert (data["files"][0], data["files"][-1]) == ("many/000.txt", "many/199.txt")
    assert data["truncated"] is True


async def test_GLOB_04_exactly_200_matches_is_not_truncated(W: Path) -> None:
    fx_a(W)
    for i in range(200):
        write(W / "a/many" / f"{i:03d}.txt", b"")
    data = await tools(W).ok("glob_a", {"path": "many", "pattern": "*.txt"})
    assert (len(data["files"]), data["truncated"]) == (200, False)


async def test_GLOB_06_pattern_validation(W: Path) -> None:
    fx_a(W)
    t = tools(W)
    for pattern in ("../*", "/abs/*", "a//b", "./x", "x/..", "a\\b", "c:*"):
        assert await t.err("glob_a", {"pattern": pattern}) == GLOB_REFUSED, pattern
    assert await t.err("glob_a", {"pattern": "["}) == "Invalid glob pattern."
    assert (await t.err("glob_a", {"pattern": ""})).startswith(SCHEMA)


async def test_GLOB_07_separator_semantics(W: Path) -> None:
    fx_a(W)
    write(W / "a/y.txt", "")
    write(W / "a/d/x.txt", "")
    write(W / "a/d/e/z.txt", "")
    t = tools(W)
    expected = {
        "*.txt": ["y.txt"],
        "d/*": ["d/x.txt"],
        "**/z.txt": ["d/e/z.txt"],
        "d/**": ["d/e/z.txt", "d/x.txt"],
    }
    for pattern, files in expected.items():
        assert (await t.ok("glob_a", {"pattern": pattern}))["files"] == files, pattern


async def test_GLOB_08_path_must_be_a_directory(W: Path) -> None:
    fx_a(W)
    write(W / "a/data/file", "visible")
    assert (
        await tools(W).err("glob_a", {"path": "data/file", "pattern": "*"})
        == "Glob path must be a directory."
    )


# E. grep


async def test_GREP_01_case_insensitive_glob_filter_skips(W: Path) -> None:
    fx_glob01(W)
    data = await tools(W).ok(
        "grep_a",
        {"path": "search", "pattern": "^alpha", "glob": "**/*.txt", "caseInsensitive": True},
    )
    assert data == {
        "artifactId": "a",
        "resolvedArtifactId": "a",
        "path": "search",
        "matches": [
            {"path": "search/.hidden.txt", "line": 1, "text": "alpha"},
            {"path": "search/a.txt", "line": 1, "text": "Alpha"},
            {"path": "search/a.txt", "line": 3, "text": "ALPHA beta"},
            {"path": "search/sub/b.txt", "line": 1, "text": "alpha"},
        ],
        "truncated": False,
    }


async def test_GREP_02_case_sensitive_by_default(W: Path) -> None:
    fx_a(W)
    write(W / "a/page.txt", "first\nSECOND\nlast\n")
    t = tools(W)
    assert (await t.ok("grep_a", {"pattern": "second"}))["matches"] == []
    data = await t.ok(
        "grep_a",
        {"pattern": "second", "glob": "*.txt", "caseInsensitive": True, "maxResults": 1.0},
    )
    assert data["matches"] == [{"path": "page.txt", "line": 2, "text": "SECOND"}]


async def test_GREP_03_dollar_at_crlf_line_end_exact_max_not_truncated(W: Path) -> None:
    fx_glob01(W)
    data = await tools(W).ok(
        "grep_a", {"path": "search/a.txt", "pattern": "beta$", "maxResults": 2}
    )
    assert data["matches"] == [
        {"path": "search/a.txt", "line": 2, "text": "beta"},
        {"path": "search/a.txt", "line": 3, "text": "ALPHA beta"},
    ]
    assert data["truncated"] is False


async def test_GREP_04_max_results_truncation(W: Path) -> None:
    fx_glob01(W)
    data = await tools(W).ok(
        "grep_a", {"path": "search", "pattern": "alpha", "caseInsensitive": True, "maxResults": 2}
    )
    assert len(data["matches"]) == 2
    assert data["truncated"] is True


async def test_GREP_05_default_200_cap(W: Path) -> None:
    fx_a(W)
    for i in range(201):
        write(W / "a/many" / f"{i:03d}.txt", "match\n")
    data = await tools(W).ok("grep_a", {"path": "many", "pattern": "match"})
    assert len(data["matches"]) == 200
    assert data["truncated"] is True


async def test_GREP_06_file_over_8_mib_skipped_with_truncation(W: Path) -> None:
    fx_a(W)
    write(W / "a/large", b"x" * (8 * 1024 * 1024 + 1))
    data = await tools(W).ok("grep_a", {"path": "large", "pattern": "x"})
    assert (data["matches"], data["truncated"]) == ([], True)


async def test_GREP_07_512_kib_result_cap(W: Path) -> None:
    fx_a(W)
    write(W / "a/large", "ok\n" + "x" * 524288 + "\n")
    data = await tools(W).ok("grep_a", {"path": "large", "pattern": "."})
    assert data["matches"] == [{"path": "large", "line": 1, "text": "ok"}]
    assert data["truncated"] is True


async def test_GREP_08_invalid_pattern_and_argument_bounds(W: Path) -> None:
    fx_a(W)
    t = tools(W)
    assert await t.err("grep_a", {"pattern": "["}) == BAD_REGEX
    refused: list[dict[str, Any]] = [
        {"pattern": ""},
        {"pattern": "a", "glob": ""},
        {"pattern": "a", "maxResults": 0},
        {"pattern": "a", "maxResults": 201},
        {"pattern": "a", "caseInsensitive": 1},
        {"pattern": "a", "glob": None},
    ]
    for args in refused:
        assert (await t.err("grep_a", args)).startswith(SCHEMA), args


async def test_GREP_09_skipped_binary_files_do_not_set_truncated(W: Path) -> None:
    fx_a(W)
    write(W / "a/s/bin.txt", b"alpha\n\0")
    write(W / "a/s/bad.txt", b"alpha\n\xff")
    t = tools(W)
    for pattern in ("alpha", "(?i)alpha"):  # with the prefilter, and without one
        data = await t.ok("grep_a", {"path": "s", "pattern": pattern})
        assert (data["matches"], data["truncated"]) == ([], False), pattern


async def test_GREP_11_backreferences_and_atomic_groups_rejected(W: Path) -> None:
    fx_a(W)
    write(W / "a/t.txt", "foo\noo\n")
    t = tools(W)
    for pattern in ("(o)\\1", "(?>fo)o", "o++"):
        assert await t.err("grep_a", {"pattern": pattern}) == BAD_REGEX, pattern


async def test_GREP_14_compiled_size_limit(W: Path) -> None:
    fx_a(W)
    write(W / "a/t.txt", "x\n")
    assert await tools(W).err("grep_a", {"pattern": "\\w{10000}"}) == BAD_REGEX


async def test_GREP_17_grep_path_that_is_a_symlink_is_an_error(W: Path) -> None:
    fx_glob01(W)
    assert await tools(W).err("grep_a", {"path": "search/link.txt", "pattern": "a"}) == SYMLINK


# view_image (fixtures PNG1, APNG1, JPEG1, WEBP1, GIF1, BMP1, JPEGLS)


@pytest.mark.parametrize(
    ("name", "content", "mime"),
    [("PNG1", PNG1, "image/png"), ("JPEG1", JPEG1, "image/jpeg"), ("WEBP1", WEBP1, "image/webp")],
)
async def test_view_image_accepts_png_jpeg_webp_by_bytes(
    W: Path, name: str, content: bytes, mime: str
) -> None:
    fx_a(W)
    write(W / "a/picture.bin", content)  # the extension is irrelevant
    block = await tools(W).image("view_image_a", {"path": "picture.bin"})
    assert block == {"type": "image", "data": base64.b64encode(content).decode(), "mimeType": mime}


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("APNG1", APNG1),
        ("GIF1", GIF1),
        ("BMP1", BMP1),
        ("JPEGLS", JPEGLS),
        ("text", b"not a PNG"),
        ("signature-only PNG", PNG1[:8]),
        ("truncated PNG", PNG1[:-6]),
    ],
)
async def test_view_image_refuses_other_formats(W: Path, name: str, content: bytes) -> None:
    fx_a(W)
    write(W / "a/image.png", content)
    assert await tools(W).err("view_image_a", {"path": "image.png"}) == IMAGE_FORMAT_REFUSED


async def test_view_image_size_bounds(W: Path) -> None:
    fx_a(W)
    limit = 4 * 1024 * 1024
    write(W / "a/empty.png", b"")
    write(W / "a/max.png", PNG1 + b"\0" * (limit - len(PNG1)))  # bytes after IEND are ignored
    write(W / "a/over.png", PNG1 + b"\0" * (limit - len(PNG1) + 1))
    t = tools(W)
    assert await t.err("view_image_a", {"path": "empty.png"}) == IMAGE_SIZE_REFUSED
    block = await t.image("view_image_a", {"path": "max.png"})
    assert base64.b64decode(block["data"]) == (W / "a/max.png").read_bytes()
    assert await t.err("view_image_a", {"path": "over.png"}) == IMAGE_SIZE_REFUSED


async def test_view_image_directory_and_mount(W: Path) -> None:
    fx_a(W, mounts={"source": "b"})
    declare(W / "b", "b", tools="", instruction=None)
    write(W / "b/shot.webp", WEBP1)
    (W / "a/pictures").mkdir()
    t = tools(W)
    assert (
        await t.err("view_image_a", {"path": "pictures"})
        == "Viewing an image requires a regular file."
    )
    block = await t.image("view_image_a", {"path": "source/shot.webp"})
    assert block["mimeType"] == "image/webp"


async def test_builtin_calls_never_create_the_output_root(W: Path) -> None:
    fx_path19(W)
    write(W / "a/page.txt", "first\n")
    write(W / "a/image.png", PNG1)
    t = tools(W)
    out = W.parent / "never" / "created"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_a", {"path": "page.txt"}),
        ("read_a", {"path": "missing"}),
        ("list_a", {}),
        ("glob_a", {"pattern": "**"}),
        ("grep_a", {"pattern": "first"}),
        ("view_image_a", {"path": "image.png"}),
        ("read_a", {"path": "x", "bogus": 1}),
        ("nope_a", {}),
    ]
    for name, args in calls:
        await t.registry.call(name, args, str(out))
        assert not out.parent.exists()
