"""The built-ins under hostile conditions, on a real filesystem, through the registry.

- A directory swapped for a symlink (to ``/`` or to a sibling holding a canary) thousands of
  times while ``read``, ``list``, ``glob`` and ``grep`` run over it: nothing from outside the
  workspace may ever appear in a result.
- FIFOs, Unix sockets and device nodes: listed as ``other``, refused fast, skipped by searches.
- The exact boundaries: 10,000 directory entries, 8 MiB per grep file, 64 MiB searched,
  4096 UTF-16 units of logical path, 64 KiB of compact JSON arguments.
- A file Artifact target replaced after the workspace loaded: every call refuses, runs nothing.

The module leaves no child process, no temporary file and no open descriptor behind.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.adapters.posix.process import PosixProcessRunner
from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.domain.text import compact_json_size, utf16_length
from artifactize.domain.tools.builtins import traversal
from artifactize.domain.tools.registry import AgentToolRegistry, ToolPorts
from artifactize.domain.tools.results import ToolResult
from artifactize.domain.use_cases.config_service import ConfigService
from tests.fakes.threads import THREADS
from tests.support.builtin_tools import Tools
from tests.support.processes import nothing_left_in_test_trees
from tests.support.workspaces import remove_large_files, write

pytestmark = pytest.mark.anyio

SAFE_PATH = "Artifact path must be a safe relative logical path."
SPECIAL = "Artifact input must be a regular file or directory."
TOO_MANY = "Directory exceeds the 10,000-entry listing limit; choose a narrower path."
ARGS_TOO_LARGE = "Tool arguments must be an object of at most 64 KiB."
TARGET_CHANGED = "File Artifact target must remain a regular file."
MIB = 1024 * 1024

TOOLS_TOML = """
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
EVAL_TOML = """
[evals.review]
title = "Review"
profile = { kind = "agent", backend = "openai", model = "test" }
payload = { instruction = "Review." }
"""

OWNED_BY_A = {"artifactId": "a", "resolvedArtifactId": "a"}


@pytest.fixture(scope="module", autouse=True)
def leaves_nothing_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with nothing_left_in_test_trees(tmp_path_factory):
        yield


@pytest.fixture
def W(tmp_path: Path) -> Iterator[Path]:
    workspace = Path(os.path.realpath(tmp_path)) / "W"
    write(workspace / "a" / "index.artf", 'name = "a"\n' + TOOLS_TOML + EVAL_TOML)
    yield workspace
    remove_large_files(tmp_path)


def tools(W: Path, eval_id: str = "a/review", environment: dict[str, str] | None = None) -> Tools:
    workspace = ConfigService(PosixFilesystem()).load(str(W))
    ports = ToolPorts(
        PosixFilesystem(), RyRegexEngine(), PosixProcessRunner(), environment or {}, threads=THREADS
    )
    return Tools(AgentToolRegistry.for_eval(workspace, eval_id, ports), W.parent / "O")


def hard_linked_files(folder: Path, count: int) -> None:
    """``count`` empty regular files, as hard links of the first (creating files is slow)."""
    folder.mkdir(parents=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(os.open("00000", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        for i in range(1, count):
            os.link("00000", f"{i:05d}", src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


# The symlink race


_LIBC = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange(first: Path, second: Path) -> None:
    """Atomically swap two directory entries (``renameat2(RENAME_EXCHANGE)``).

    Where the call is missing or refused, swap in three steps instead (with a short gap in
    which the name is missing).
    """
    renameat2 = getattr(_LIBC, "renameat2", None)
    if renameat2 is not None and not renameat2(
        _AT_FDCWD, bytes(first), _AT_FDCWD, bytes(second), _RENAME_EXCHANGE
    ):
        return
    middle = first.with_name(first.name + "-swap")
    os.rename(first, middle)
    os.rename(second, first)
    os.rename(middle, second)


@dataclass
class Swapper:
    """Swaps ``directory`` for a symlink, alternately to ``/`` and to ``outside``, and back.

    Each swap is one atomic exchange, so the name always exists: a walker finds either the
    real directory or a symlink, never a gap.
    """

    directory: Path
    outside: Path
    swaps: int = 0
    failure: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        links = []
        for index, target in enumerate(("/", str(self.outside))):
            link = self.directory.with_name(f"{self.directory.name}-link{index}")
            link.symlink_to(target)
            links.append(link)
        try:
            while not self._stop.is_set():
                link = links[self.swaps % 2]
                exchange(self.directory, link)  # the symlink takes the directory's name
                exchange(self.directory, link)  # and gives it back
                self.swaps += 1
        except BaseException as error:
            self.failure = error
        finally:
            for link in links:
                link.unlink()

    def stop(self) -> None:
        self._stop.set()


CANARY = "CANARY-7f3a9c"


@pytest.mark.parametrize("swapped", ["a/data", "a"])
async def test_directory_swapped_for_a_symlink_never_leaks_outside_content(
    W: Path, swapped: str
) -> None:
    """The swapped directory is a folder of the Artifact, or the Artifact folder itself."""
    inside = W / swapped
    write(W / "a" / "data" / "file.txt", "inside\n")
    write(W / "a" / "data" / "sub" / "x.txt", "inside\n")
    outside = W.parent / "outside"  # mirrors both layouts, with a canary in every file
    for prefix in ("", "data/"):
        for name in ("file.txt", "sub/x.txt", "canary-only.txt"):
            write(outside / f"{prefix}{name}", f"{CANARY}\n")
    t = tools(W)
    allowed_names = {"file.txt", "sub"}
    # Mid-swap the real directory has another name, ``data-link0`` say: workspace content.
    allowed_files = {
        f"{d}/{f}"
        for d in ("data", "data-swap", "data-link0", "data-link1")
        for f in ("file.txt", "sub/x.txt")
    }  # (when the Artifact folder is swapped, its real name is outside the Artifact)
    calls: dict[str, dict[str, Any]] = {
        "read_a": {"path": "data/file.txt"},
        "list_a": {"path": "data"},
        "glob_a": {"pattern": "**/*.txt"},
        "grep_a": {"pattern": f"inside|{CANARY}|root"},
    }
    outcomes: dict[str, list[int]] = {name: [0, 0] for name in calls}  # [ok, error]

    def check(name: str, result: ToolResult) -> None:
        text = json.dumps(result.to_json(), ensure_ascii=False)
        assert CANARY not in text and "canary-only" not in text, text
        outcomes[name][1 if result.is_error else 0] += 1
        if result.is_error:
            return
        data = result.to_json()["content"][0]["data"]
        if name == "read_a":
            assert [line["text"] for line in data["lines"]] == ["inside\n"]
        elif name == "list_a":
            assert {e["name"] for e in data["entries"]} <= allowed_names, data
        elif name == "glob_a":
            assert set(data["files"]) <= allowed_files, data
        else:
            assert {m["path"] for m in data["matches"]} <= allowed_files, data
            assert {m["text"] for m in data["matches"]} <= {"inside"}, data

    async def hammer(name: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            check(name, await t(name, calls[name]))

    swapper = Swapper(inside, outside)
    thread = threading.Thread(target=swapper.run, name="swapper")
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # interleave the swapper and the workers finely
    thread.start()
    try:
        deadline = time.monotonic() + 1.3
        async with anyio.create_task_group() as group:
            for name in calls:
                for _ in range(2):
                    group.start_soon(hammer, name, deadline)
    finally:
        swapper.stop()
        thread.join()
        sys.setswitchinterval(interval)
    assert swapper.failure is None, swapper.failure
    assert swapper.swaps >= 1000, swapper.swaps
    # The tree is back in place, and every tool both succeeded and was refused along the way.
    for name, args in calls.items():
        check(name, await t(name, args))
    for name, (succeeded, refused) in outcomes.items():
        assert succeeded > 0, (name, outcomes)
        assert refused > 0, (name, outcomes)


# Special files


def make_socket(path: Path) -> None:
    cwd = os.getcwd()
    os.chdir(path.parent)  # a relative bind: tmp paths may exceed the 108-byte sun_path
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(path.name)
    finally:
        os.chdir(cwd)


def make_device(path: Path) -> bool:
    """A character device like /dev/null (needs CAP_MKNOD); False when refused."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError):
        return False
    return True


async def test_special_files_are_other_refused_fast_and_skipped(W: Path) -> None:
    folder = W / "a" / "sp"
    write(folder / "ok.txt", "hello\n")
    os.mkfifo(folder / "fifo")
    make_socket(folder / "socket")
    specials = ["fifo", "socket"]
    if make_device(folder / "device"):
        specials.append("device")
    t = tools(W)

    data = await t.ok("list_a", {"path": "sp"})
    kinds = {e["name"]: e["kind"] for e in data["entries"]}
    assert kinds == {"ok.txt": "file", **dict.fromkeys(specials, "other")}

    for special in specials:
        for name in ("read_a", "view_image_a", "list_a"):
            with anyio.fail_after(2):
                assert await t.err(name, {"path": f"sp/{special}"}) == SPECIAL, (name, special)
        for name in ("glob_a", "grep_a"):
            with anyio.fail_after(2):
                text = await t.err(name, {"path": f"sp/{special}", "pattern": "x"})
            assert text == SPECIAL, (name, special)

    with anyio.fail_after(5):
        globbed = await t.ok("glob_a", {"path": "sp", "pattern": "*"})
        everything = await t.ok("glob_a", {"pattern": "**"})
        grepped = await t.ok("grep_a", {"path": "sp", "pattern": "."})
        filtered = await t.ok("grep_a", {"pattern": ".", "glob": "sp/*"})
    assert globbed == {**OWNED_BY_A, "path": "sp", "files": ["sp/ok.txt"], "truncated": False}
    assert everything["files"] == ["index.artf", "sp/ok.txt"]
    assert grepped["matches"] == [{"path": "sp/ok.txt", "line": 1, "text": "hello"}]
    assert grepped["truncated"] is False
    assert filtered["matches"] == [{"path": "sp/ok.txt", "line": 1, "text": "hello"}]


async def test_fifo_with_a_writer_is_still_refused_without_reading(W: Path) -> None:
    fifo = W / "a" / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # keeps the writer's open from failing
    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(writer, b"streamed\n")
        t = tools(W)
        for name in ("read_a", "view_image_a"):
            with anyio.fail_after(2):
                assert await t.err(name, {"path": "fifo"}) == SPECIAL
        with anyio.fail_after(2):
            data = await t.ok("grep_a", {"pattern": "streamed"})
        assert data["matches"] == []
    finally:
        os.close(writer)
        os.close(reader)


# Boundaries


async def test_directory_of_10000_entries_lists_and_10001_fails(W: Path) -> None:
    folder = W / "a" / "big"
    hard_linked_files(folder, 10_000)
    t = tools(W)
    data = await t.ok("list_a", {"path": "big", "offset": 9_999})
    assert data["totalEntries"] == 10_000
    assert data["entries"] == [{"name": "09999", "path": "big/09999", "kind": "file"}]
    assert (await t.ok("glob_a", {"path": "big", "pattern": "09999"})) == {
        **OWNED_BY_A,
        "path": "big",
        "files": ["big/09999"],
        "truncated": False,
    }
    grepped = await t.ok("grep_a", {"path": "big", "pattern": "x"})
    assert (grepped["matches"], grepped["truncated"]) == ([], False)

    os.link(folder / "00000", folder / "10000")
    assert await t.err("list_a", {"path": "big"}) == TOO_MANY
    assert await t.err("list_a", {"path": "big", "offset": 10_000}) == TOO_MANY
    # An over-full directory fails searches too, with an error rather than a truncated result.
    assert await t.err("glob_a", {"path": "big", "pattern": "*"}) == TOO_MANY
    assert await t.err("grep_a", {"path": "big", "pattern": "x"}) == TOO_MANY
    assert await t.err("glob_a", {"pattern": "**/nothing"}) == TOO_MANY


async def test_the_walk_stops_at_its_entry_limit_inside_and_between_folders(
    W: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk counts every entry it visits, in listing order, depth first, and stops past
    its limit wherever that falls: before, inside or after a folder of plain files (which
    the walk adds in one step when the whole folder fits)."""
    visits = ["d1", "d1/x0", "d1/x1", "d1/x2", "d2", "d2/x0", "d2/x1", "d2/x2", "f.txt"]
    for name in visits:
        if name.startswith("x", 3) or name == "f.txt":
            write(W / "a" / "t" / name, "x\n")
    t = tools(W)
    for limit in range(len(visits) + 2):
        monkeypatch.setattr(traversal, "TRAVERSAL_ENTRIES_MAX", limit)
        data = await t.ok("glob_a", {"path": "t", "pattern": "**"})
        files = [f"t/{name}" for name in visits[:limit] if name not in ("d1", "d2")]
        assert (data["files"], data["truncated"]) == (files, limit < len(visits)), limit


def sized_text(size: int, first_line: str) -> bytes:
    """``size`` bytes of text lines, the first one ``first_line``."""
    head = (first_line + "\n").encode()
    body = size - len(head)
    line = b"x" * 1023 + b"\n"
    data = head + line * (body // len(line)) + b"y" * (body % len(line))
    assert len(data) == size
    return data


async def test_grep_searches_a_file_of_exactly_8_mib_and_skips_one_byte_more(W: Path) -> None:
    folder = W / "a" / "g"
    write(folder / "exact", sized_text(8 * MIB, "needle"))
    write(folder / "over", sized_text(8 * MIB + 1, "needle"))
    t = tools(W)
    data = await t.ok("grep_a", {"path": "g/exact", "pattern": "needle"})
    assert data == {
        **OWNED_BY_A,
        "path": "g/exact",
        "matches": [{"path": "g/exact", "line": 1, "text": "needle"}],
        "truncated": False,
    }
    data = await t.ok("grep_a", {"path": "g/over", "pattern": "needle"})
    assert (data["matches"], data["truncated"]) == ([], True)
    data = await t.ok("grep_a", {"path": "g", "pattern": "needle"})
    assert data["matches"] == [{"path": "g/exact", "line": 1, "text": "needle"}]
    assert data["truncated"] is True


async def test_grep_stops_at_64_mib_searched(W: Path) -> None:
    folder = W / "a" / "cap"
    write(folder / "f0", sized_text(8 * MIB, "hit"))
    for i in range(1, 8):  # hard links: 64 MiB searched, 8 MiB on disk
        os.link(folder / "f0", folder / f"f{i}")
    t = tools(W)
    data = await t.ok("grep_a", {"path": "cap", "pattern": "hit|needle"})
    assert [m["path"] for m in data["matches"]] == [f"cap/f{i}" for i in range(8)]
    assert data["truncated"] is False  # exactly 64 MiB is within the bound

    write(folder / "f8", sized_text(8 * MIB, "needle"))
    data = await t.ok("grep_a", {"path": "cap", "pattern": "hit|needle"})
    assert [m["path"] for m in data["matches"]] == [f"cap/f{i}" for i in range(8)]
    assert data["truncated"] is True


def astral_path(units: int) -> str:
    """A logical path of exactly ``units`` UTF-16 units, mostly astral characters.

    Components stay under 255 bytes (60 four-byte characters); the first does not exist.
    """
    component = "😀" * 60  # 120 units
    parts = [component] * 33  # 33 * 120 + 32 separators = 3992 units
    rest = units - 3992 - 1  # after one more separator
    parts.append("😀" * (rest // 2) + "d" * (rest % 2))
    path = "/".join(parts)
    assert utf16_length(path) == units
    return path


async def test_logical_path_of_4096_utf16_units_accepted_4097_refused(W: Path) -> None:
    t = tools(W)
    accepted, refused = astral_path(4096), astral_path(4097)
    assert len(accepted) < 4096 and len(refused) < 4096  # code points: the schema admits both
    quoted = json.dumps(accepted, ensure_ascii=False)
    for name in ("read_a", "list_a", "view_image_a"):
        assert await t.err(name, {"path": accepted}) == f"No {quoted} in Artifact a."
        assert await t.err(name, {"path": refused}) == SAFE_PATH
    for name in ("glob_a", "grep_a"):
        args = {"pattern": "x"}
        assert await t.err(name, {**args, "path": accepted}) == f"No {quoted} in Artifact a."
        assert await t.err(name, {**args, "path": refused}) == SAFE_PATH


def grep_args_of_size(size: int) -> dict[str, Any]:
    """grep arguments whose compact JSON is exactly ``size`` bytes, every string within its
    own maxLength (4096): a control character serializes to six bytes (``\\u0001``)."""
    args: dict[str, Any] = {"pattern": "", "path": "\x01" * 4096, "glob": "\x01" * 4096}
    room = size - compact_json_size(args)
    controls = min(4096, room // 6)
    args["pattern"] = "\x01" * controls + "p" * (room - 6 * controls)
    assert len(args["pattern"]) <= 4096
    assert compact_json_size(args) == size
    return args


async def test_arguments_of_exactly_64_kib_are_admitted_and_one_byte_more_refused(
    W: Path,
) -> None:
    t = tools(W)
    admitted = await t.err("grep_a", grep_args_of_size(64 * 1024))
    assert admitted == SAFE_PATH  # past admission: the control characters fail the path rule
    assert await t.err("grep_a", grep_args_of_size(64 * 1024 + 1)) == ARGS_TOO_LARGE
    for not_an_object in ([], "x", None, 1, [{"path": "x"}]):
        assert await t.err("read_a", not_an_object) == ARGS_TOO_LARGE
    # Size is checked before the schema: oversized arguments are refused the same way.
    assert await t.err("read_a", {"path": "x", "extra": "y" * 65536}) == ARGS_TOO_LARGE


# A file Artifact target replaced after the workspace loaded


def fx_file_artifact(W: Path) -> Path:
    """File Artifact ``doc`` (W/docs/doc.md) mounted by ``a`` and a help built-in on ``doc``."""
    write(W / "a" / "index.artf", 'name = "a"\nmounts = { doc = "doc" }\n' + TOOLS_TOML + EVAL_TOML)
    write(W / "a" / "notes.md", "notes\n")
    write(W / "docs" / "doc.md", "# Doc\n")
    write(W / "docs" / "doc.md.real", "# Impostor\n")
    write(
        W / "docs" / "doc.md.artf",
        'name = "doc"\n'
        + TOOLS_TOML
        + '[views.agent_tools.usage]\nbuiltin = "help"\nargs = ["marker-prog"]\n'
        + EVAL_TOML,
    )
    bindir = W.parent / "bin"
    program = write(bindir / "marker-prog", f'#!/bin/sh\ntouch "{W.parent}/ran"\necho usage\n')
    program.chmod(0o755)
    return bindir


def replace_target(target: Path, how: str) -> None:
    target.unlink()
    if how == "symlink":
        target.symlink_to(target.name + ".real")
    elif how == "fifo":
        os.mkfifo(target)
    elif how == "directory":
        target.mkdir()


@pytest.mark.parametrize("how", ["symlink", "missing", "fifo", "directory"])
async def test_replaced_file_artifact_target_refuses_every_call(W: Path, how: str) -> None:
    bindir = fx_file_artifact(W)
    environment = {"PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    marker = W.parent / "ran"
    on_doc = tools(W, "doc/review", environment)
    on_a = tools(W, "a/review", environment)
    # Before the swap everything works, the help program included.
    assert (await on_doc.ok("read_doc", {"path": "doc.md"}))["lines"][0]["text"] == "# Doc\n"
    assert (await on_a.ok("read_a", {"path": "doc/doc.md"}))["resolvedArtifactId"] == "doc"
    usage = await on_doc("usage_doc", {})
    assert not usage.is_error and usage.to_json()["content"][0]["text"] == "usage\n"
    assert marker.exists()
    marker.unlink()

    replace_target(W / "docs" / "doc.md", how)
    calls: list[tuple[Tools, str, dict[str, Any]]] = [
        (on_doc, "read_doc", {"path": "doc.md"}),
        (on_doc, "list_doc", {}),
        (on_doc, "glob_doc", {"pattern": "*"}),
        (on_doc, "grep_doc", {"pattern": "Doc"}),
        (on_doc, "view_image_doc", {"path": "doc.md"}),
        (on_doc, "usage_doc", {}),
        # Every admitted file Artifact is checked, even when the call names another one.
        (on_a, "read_a", {"path": "notes.md"}),
        (on_a, "list_a", {}),
        (on_a, "glob_a", {"pattern": "**"}),
        (on_a, "grep_a", {"pattern": "Impostor"}),
    ]
    for registry, name, args in calls:
        assert await registry.err(name, args) == TARGET_CHANGED, name
    assert not marker.exists(), "the help program ran"


# The regex binding on short-lived worker threads

_FRESH_INTERPRETER_SCRIPT = """
import threading
from artifactize.adapters.ry_regex import RyRegexEngine
from artifactize.ports.regex import RegexError

engine = RyRegexEngine()

def compile_invalid():
    try:
        engine.compile("*", case_insensitive=False, size_limit=1 << 21)
    except RegexError:
        pass

for _ in range(5):  # the first thread imports the binding, then exits
    worker = threading.Thread(target=compile_invalid)
    worker.start()
    worker.join()
print("survived")
"""


def test_invalid_patterns_on_successive_worker_threads_do_not_crash() -> None:
    """Built-ins compile on worker threads that exit; ry 0.0.105 segfaulted on the next error
    raised once the thread that first imported it was gone."""
    result = subprocess.run(
        [sys.executable, "-c", _FRESH_INTERPRETER_SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, "survived\n"), result.stderr
