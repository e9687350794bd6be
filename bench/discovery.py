"""Discovery benchmark: our full workspace load against a bare walk that only reads the files.

Generates, in a temporary directory that is removed at the end (even on error or Ctrl-C),
a workspace of folder Artifacts (top-level areas of modules, some modules with child
folders, some behind plain directories) and file Artifacts (``NAME.ext.artf`` sidecars
beside real files), plus plain files, plain directories and a ``.git`` directory that
both walks skip. Then, in this one process, it times:

- ours: ``ConfigService(PosixFilesystem(), pause_collector).load(root)`` in a
  ``pause_collector_to_exit`` block (as the CLI wires and runs it), the whole load: walk through
  pinned descriptors, read, TOML parse, validate every declaration, build the workspace;
- bare: ``os.walk`` over the same tree (``.git`` pruned) opening and reading every
  ``.artf`` file, and nothing else;
- cold: ours with a file index (``adapters/file_index.py``) that is empty before each run:
  what the first ``status`` pays, writing the index included;
- warm: ours with the index the cold run filled, opened anew for each run (as each CLI
  process does): unchanged declarations are neither read nor parsed.

The tree is left ``RACY_MARGIN_NS`` old before the indexed runs (files younger than that
are never kept: git's racy rule).

The bare walk parses nothing, so the ratio (ours / bare) is our whole cost measured
against the cost of merely touching the files. Each side gets one warm-up run (the page
cache is then hot) and the best of ``--runs`` timed runs is reported. The in-process
schema admission cache is cleared before every run of ours, as a fresh CLI process
starts with it empty.

    .venv/bin/python bench/discovery.py                       # 10,000 folders, 1,000 files
    .venv/bin/python bench/discovery.py --folders 500 --files 50 --json
    .venv/bin/python bench/discovery.py --profile 25           # cProfile one load, top 25
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import os
import pstats
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tomli

from artifactize.adapters.collector import pause_collector, pause_collector_to_exit
from artifactize.adapters.file_index import RACY_MARGIN_NS, SqliteFileIndex
from artifactize.adapters.posix.filesystem import PosixFilesystem
from artifactize.domain import json_schema
from artifactize.domain.project.discovery import DECLARATION_MAX_BYTES
from artifactize.domain.use_cases.config_service import ConfigService
from artifactize.ports.filesystem import DirectoryHandle, EntryKind

TARGET_RATIO = 3.0
TARGET_WARM_RATIO = 1.2
SKIPPED_DIRECTORIES = frozenset({".git", "node_modules"})


# --- the generated workspace -----------------------------------------------------------

# A handful of input schemas, as a real repository would have: mostly shared, some tweaked.
_JSON_SCHEMAS = [
    '{ type = "object", properties = { path = { type = "string" } }, additionalProperties = false }',
    '{ type = "object", required = ["path"], properties = { path = { type = "string", minLength = 1 } }, additionalProperties = false }',
    '{ type = "object", properties = { path = { type = "string" }, strict = { type = "boolean" } }, additionalProperties = false }',
    '{ type = "object", required = ["query"], properties = { query = { type = "string", maxLength = 200 }, limit = { type = "integer", minimum = 1, maximum = 100 } } }',
    '{ type = "object", properties = { function = { type = "string" }, verbose = { type = "boolean", default = false } }, additionalProperties = false }',
    '{ type = "object", required = ["expression"], properties = { expression = { type = "string", maxLength = {N} } }, additionalProperties = false }',
]
_PLAIN_SCHEMAS = [
    '{ type = "object", required = ["path"], properties = { path = { type = "string" } }, additionalProperties = false }',
    '{ type = "object", required = ["path"], properties = { path = { type = "string", pattern = "^[a-z0-9_/.-]+$" }, lines = { type = "integer", minimum = 1 } }, additionalProperties = false }',
    '{ type = "object", required = ["path"], properties = { path = { type = "string", maxLength = {N} } }, additionalProperties = false, "$defs" = { p = { type = "string" } } }',
]
_PASS_SCHEMAS = [
    '{ type = "object", required = ["checked"], properties = { checked = { type = "integer", minimum = 1 } } }',
    '{ type = "object", required = ["findings"], properties = { findings = { type = "array", items = { "$ref" = "#/$defs/finding" } } }, "$defs" = { finding = { type = "object", required = ["file"], properties = { file = { type = "string" }, line = { type = "integer" } } } } }',
]
_MODELS = [
    ("anthropic", "claude-sonnet-4-5", "medium"),
    ("openai", "gpt-5.1", "high"),
    ("openai-chat", "qwen3:8b", "low"),
]


@dataclass(frozen=True)
class FolderSpec:
    rel: str  # workspace-relative directory, "" for the root
    name: str
    sibling: str | None  # another Artifact an instruction references by its global name
    mount: str | None  # an Artifact mounted under the alias `lib`
    serial: int


def _plan_folders(total: int) -> list[FolderSpec]:
    """``total`` folder Artifacts: the root, areas, modules, child folders, nested modules."""
    specs = [FolderSpec("", "bench", None, None, 0)]
    if total <= 1:
        return specs
    areas = max(1, min(100, round(math.sqrt(total))))
    areas = min(areas, total - 1)
    remaining = total - 1 - areas
    for area in range(areas):
        area_rel = f"area-{area:03d}"
        area_name = f"a{area:03d}"
        specs.append(FolderSpec(area_rel, area_name, None, None, len(specs)))
        count = remaining // areas + (1 if area < remaining % areas else 0)
        module = 0
        previous: str | None = None
        placed = 0
        while placed < count:
            mod_name = f"{area_name}-m{module:03d}"
            # one module in seven sits below a plain (non-Artifact) directory
            mod_rel = (
                f"{area_rel}/pkg/mod-{module:03d}"
                if module % 7 == 3
                else f"{area_rel}/mod-{module:03d}"
            )
            mount = area_name if previous is None else f"{area_name}-m000"
            specs.append(FolderSpec(mod_rel, mod_name, previous, mount, len(specs)))
            placed += 1
            # one module in four has a child folder Artifact (and one in twelve a grandchild)
            if module % 4 == 1 and placed < count:
                child = f"{mod_name}-s0"
                specs.append(FolderSpec(f"{mod_rel}/sub-0", child, mod_name, None, len(specs)))
                placed += 1
                if module % 12 == 1 and placed < count:
                    specs.append(
                        FolderSpec(
                            f"{mod_rel}/sub-0/deep", f"{child}-d0", child, mod_name, len(specs)
                        )
                    )
                    placed += 1
            previous = mod_name
            module += 1
    return specs


def _index_artf(spec: FolderSpec) -> str:
    n = spec.serial
    lines = [
        f"# Folder Artifact {spec.name}, generated by bench/discovery.py.",
        f'name = "{spec.name}"',
        f'tags = ["type:code", "area:{spec.name[:4]}", "lang:{("python", "go", "ts")[n % 3]}"]',
    ]
    if spec.mount is not None:
        lines.append(f'mounts = {{ lib = "{spec.mount}" }}')
    if n % 5 == 2:
        lines.append('fingerprint = { files = ["src", "README.md"], ignore = ["*.pyc", "*.tmp"] }')
    lines += [
        "",
        "[views.agent_tools]",
        'read = { builtin = "read" }',
        'search = { builtin = "grep", description = "Search the sources of {artifactName}." }',
    ]
    if n % 3 == 0:
        lines.append('outline = { builtin = "section", args = ["README.md"] }')
    lines.append("")
    if n % 4 == 3:
        schema = _PLAIN_SCHEMAS[n % len(_PLAIN_SCHEMAS)].replace("{N}", str(100 + n % 5))
        lines += [
            "[views.agent_tools.count]",
            'description = "Count the lines of one file of {artifactName}."',
            'protocol = "plain"',
            'command = "wc"',
            'args = ["-l", "{path}"]',
            f"input_schema = {schema}",
            "timeout_ms = 5000",
        ]
    else:
        schema = _JSON_SCHEMAS[n % len(_JSON_SCHEMAS)].replace("{N}", str(200 + n % 7))
        args = '["tools/lint.py", "{lib}"]' if spec.mount else '["tools/lint.py"]'
        lines += [
            "[views.agent_tools.lint]",
            'description = "Lint one file of {artifactName} and report the findings."',
            'protocol = "json"',
            'command = "python3"',
            f"args = {args}",
            f"input_schema = {schema}",
            'execution_paths = ["tools/lint.py"]',
            "timeout_ms = 20000",
        ]
    backend, model, reasoning = _MODELS[n % len(_MODELS)]
    about = f"{{{spec.name}}}"
    if spec.mount is not None:
        about += " against the library it mounts, {lib}"
    if spec.sibling is not None:
        about += f", and keep it consistent with {{{spec.sibling}}}"
    lines += [
        "",
        "[evals.review]",
        f'title = "{spec.name} is simple and correct"',
        f'profile = {{ kind = "agent", backend = "{backend}", model = "{model}", reasoning = "{reasoning}" }}',
        f'payload.instruction = "Review {about}. Answer GREEN when nothing is wrong."',
    ]
    if n % 2 == 0:
        lines.append(f"pass_schema = {_PASS_SCHEMAS[n % len(_PASS_SCHEMAS)]}")
    if n % 3 == 1:
        target = f"{{{spec.sibling}}}" if spec.sibling else f"{{{spec.name}}}"
        lines += [
            "",
            "[evals.tests]",
            'title = "The unit tests pass"',
            f'profile = {{ kind = "runtime", command = "python3", args = ["-m", "pytest", "-q", "{target}"], timeout_ms = 60000 }}',
            f'payload.instruction = "Run the tests of {target}."',
        ]
    elif n % 3 == 2:
        lines += [
            "",
            "[evals.signoff]",
            'title = "The owner approves the module"',
            'profile = { kind = "human" }',
            f'payload.instruction = """\nRead the README of {{{spec.name}}} and approve it if it can ship."""',
        ]
    return "\n".join(lines) + "\n"


def _sidecar_artf(name: str, owner: str, target: str) -> str:
    return (
        f"# File Artifact: {target} beside this sidecar.\n"
        f'name = "{name}"\n'
        'tags = ["type:doc"]\n'
        "\n"
        "[views.agent_tools]\n"
        'read = { builtin = "read" }\n'
        "\n"
        "[views.human_tools]\n"
        'open = { builtin = "open", args = ["{artifactPath}"] }\n'
        "\n"
        "[evals.current]\n"
        f'title = "{target} matches its module"\n'
        'profile = { kind = "human" }\n'
        f'payload.instruction = "Open {{{name}}} and compare it with {{{owner}}}."\n'
    )


@dataclass(frozen=True)
class TreeStats:
    folder_artifacts: int
    file_artifacts: int
    files: int
    directories: int
    artf_bytes: int


def build_workspace_tree(root: Path, folders: int, files: int) -> TreeStats:
    specs = _plan_folders(folders)
    n_files = n_dirs = artf_bytes = 0

    def write(path: Path, text: str) -> None:
        nonlocal n_files, artf_bytes
        data = text.encode()
        path.write_bytes(data)
        n_files += 1
        if path.name.endswith(".artf"):
            artf_bytes += len(data)

    def mkdir(path: Path) -> None:
        nonlocal n_dirs
        if not path.is_dir():
            path.mkdir(parents=True)
            n_dirs += 1

    for spec in specs:
        folder = root / spec.rel
        mkdir(folder)
        write(folder / "index.artf", _index_artf(spec))
        write(folder / "README.md", f"# {spec.name}\n\nGenerated module.\n")
        if spec.serial % 3 != 1:
            mkdir(folder / "src")
            write(folder / "src" / "main.py", f"def main() -> str:\n    return {spec.name!r}\n")
            write(folder / "src" / "util.py", "VALUE = 1\n")
    hosts = [s for s in specs if s.rel.count("/") >= 1] or specs
    for i in range(files):
        host = hosts[i * len(hosts) // files] if files else hosts[0]
        target = f"spec-{i}.md" if i % 2 else f"diagram-{i}.svg"
        name = f"{host.name}-f{i}"
        folder = root / host.rel
        write(folder / target, "<svg/>\n" if target.endswith(".svg") else f"# Spec {i}\n")
        write(folder / f"{target}.artf", _sidecar_artf(name, host.name, target))
    # A .git directory that both walks must skip, with some weight to skip.
    git = root / ".git"
    for shard in range(32):
        mkdir(git / "objects" / f"{shard:02x}")
        for obj in range(8):
            write(git / "objects" / f"{shard:02x}" / f"{obj:038x}", "blob\n")
    write(git / "HEAD", "ref: refs/heads/main\n")
    write(git / "index.artf", 'name = "never-read"\n')
    return TreeStats(len(specs), files, n_files, n_dirs, artf_bytes)


# --- the two contenders ----------------------------------------------------------------


def ours(root: str) -> int:
    # the collector paused to the end of the command, as the CLI's commands that load a
    # workspace pause it (config check, status: ``pause_collector_to_exit``); the load's own
    # pause alone ends in a pass over every object it made (0.45 s at 10,000 Artifacts),
    # which no command pays
    with pause_collector_to_exit():
        workspace = ConfigService(PosixFilesystem(), pause_collector).load(root)
    return len(workspace.artifacts)


def ours_indexed(root: str, index_path: str) -> int:
    index = SqliteFileIndex(index_path, "bench")
    with pause_collector_to_exit():
        workspace = ConfigService(PosixFilesystem(), pause_collector, index=index).load(root)
    return len(workspace.artifacts)


def _drop(index_path: str) -> None:
    if os.path.exists(index_path):
        os.unlink(index_path)


def bare(root: str) -> int:
    """Touch what discovery must touch, and nothing more: walk, open and read each .artf."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRECTORIES]
        for name in filenames:
            if name.endswith(".artf"):
                with open(os.path.join(dirpath, name), "rb") as handle:
                    handle.read()
                count += 1
    return count


# --- a breakdown of ours, for orientation (not part of the ratio) -----------------------


def adapter_walk(root: str) -> int:
    """Our filesystem adapter alone: the same pinned, no-follow walk and reads, no parsing."""
    filesystem = PosixFilesystem()

    def walk(handle: DirectoryHandle) -> int:
        count = 0
        for entry in handle.entries():
            if entry.kind is EntryKind.DIRECTORY and entry.name not in SKIPPED_DIRECTORIES:
                with handle.open_directory(entry.name) as child:
                    count += walk(child)
            elif entry.kind is EntryKind.FILE and entry.name.endswith(".artf"):
                handle.read_file(entry.name, DECLARATION_MAX_BYTES).decode("utf-8")
                count += 1
        return count

    with filesystem.open_root(filesystem.canonical_directory(root)) as handle:
        return walk(handle)


def read_declarations(root: str) -> list[str]:
    texts = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRECTORIES]
        for name in filenames:
            if name.endswith(".artf"):
                with open(os.path.join(dirpath, name), encoding="utf-8") as handle:
                    texts.append(handle.read())
    return texts


def toml_only(texts: list[str]) -> int:
    """``tomli`` (the parser the domain uses) alone over every declaration already in memory: the floor of any load."""
    for text in texts:
        tomli.loads(text)
    return len(texts)


def _reset_caches() -> None:
    json_schema._admit_cached.cache_clear()


def best_of(
    run: Callable[[], object], runs: int, before: Callable[[], None] | None = None
) -> float:
    if before:
        before()
    run()  # warm-up: page cache, imports, regex caches
    times = []
    for _ in range(runs):
        if before:
            before()
        gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def profile_once(root: str, top: int) -> str:
    _reset_caches()
    ours(root)  # warm
    _reset_caches()
    profiler = cProfile.Profile()
    profiler.enable()
    ours(root)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through the with-block that removes the tree


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--folders", type=int, default=10_000, help="folder Artifacts (default 10000)"
    )
    parser.add_argument("--files", type=int, default=1_000, help="file Artifacts (default 1000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per side (default 5)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--profile", type=int, metavar="TOP", default=0, help="also cProfile one load"
    )
    args = parser.parse_args(argv)
    if args.folders < 1 or args.files < 0 or args.runs < 1:
        parser.error("--folders must be at least 1, --files at least 0, --runs at least 1")

    with tempfile.TemporaryDirectory(prefix="artifactize-bench-") as tmp:
        root = os.path.join(os.path.realpath(tmp), "repo")
        started = time.perf_counter()
        tree = build_workspace_tree(Path(root), args.folders, args.files)
        generated_s = time.perf_counter() - started
        expected = tree.folder_artifacts + tree.file_artifacts
        found = ours(root)
        touched = bare(root)
        if found != expected or touched != expected:
            raise SystemExit(
                f"expected {expected} Artifacts, ours found {found}, bare read {touched}"
            )
        ours_s = best_of(lambda: ours(root), args.runs, _reset_caches)
        bare_s = best_of(lambda: bare(root), args.runs)
        index_path = os.path.join(os.path.realpath(tmp), "file-index.sqlite")
        time.sleep(RACY_MARGIN_NS / 1e9 + 0.1)

        def cold_reset() -> None:
            _reset_caches()
            _drop(index_path)

        cold_s = best_of(lambda: ours_indexed(root, index_path), args.runs, cold_reset)
        ours_indexed(root, index_path)  # fill it
        warm_s = best_of(lambda: ours_indexed(root, index_path), args.runs, _reset_caches)
        if ours_indexed(root, index_path) != expected:
            raise SystemExit("the warm load found another number of Artifacts")
        adapter_s = best_of(lambda: adapter_walk(root), args.runs)
        texts = read_declarations(root)
        toml_s = best_of(lambda: toml_only(texts), args.runs)
        report = profile_once(root, args.profile) if args.profile else None

    ratio = ours_s / bare_s
    figures = {
        "folderArtifacts": tree.folder_artifacts,
        "fileArtifacts": tree.file_artifacts,
        "files": tree.files,
        "directories": tree.directories,
        "artfBytes": tree.artf_bytes,
        "runs": args.runs,
        "generateSeconds": round(generated_s, 3),
        "oursSeconds": round(ours_s, 4),
        "bareSeconds": round(bare_s, 4),
        "ratio": round(ratio, 2),
        "targetRatio": TARGET_RATIO,
        "coldSeconds": round(cold_s, 4),
        "coldRatio": round(cold_s / bare_s, 2),
        "warmSeconds": round(warm_s, 4),
        "warmRatio": round(warm_s / bare_s, 2),
        "targetWarmRatio": TARGET_WARM_RATIO,
        "breakdown": {
            "adapterWalkSeconds": round(adapter_s, 4),
            "tomlSeconds": round(toml_s, 4),
            "restSeconds": round(ours_s - adapter_s - toml_s, 4),
        },
        "python": sys.version.split()[0],
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(
            f"workspace: {tree.folder_artifacts} folder + {tree.file_artifacts} file Artifacts, "
            f"{tree.files} files in {tree.directories} directories, "
            f"{tree.artf_bytes / 1e6:.1f} MB of .artf (generated in {generated_s:.1f} s)"
        )
        print(f"ours (full load: walk, read, parse, validate, build): {ours_s * 1000:9.1f} ms")
        print(f"bare (os.walk + open/read of each .artf, no parsing): {bare_s * 1000:9.1f} ms")
        verdict = "within" if ratio <= TARGET_RATIO else "over"
        print(
            f"ratio ours/bare: {ratio:.2f}x ({verdict} the {TARGET_RATIO:g}x target; "
            f"best of {args.runs} after a warm-up)"
        )
        print(
            f"cold (empty file index, written at the end):       {cold_s * 1000:9.1f} ms"
            f"  ratio {cold_s / bare_s:.2f}x (target {TARGET_RATIO:g}x)"
        )
        print(
            f"warm (the index knows every declaration):          {warm_s * 1000:9.1f} ms"
            f"  ratio {warm_s / bare_s:.2f}x (target {TARGET_WARM_RATIO:g}x)"
        )
        print("breakdown of ours (each timed on its own):")
        print(f"  our adapter's walk + reads, no parsing:  {adapter_s * 1000:9.1f} ms")
        print(f"  tomli.loads of every .artf in memory:     {toml_s * 1000:9.1f} ms")
        print(
            f"  the rest (validate, build, glue, GC):     {(ours_s - adapter_s - toml_s) * 1000:9.1f} ms"
        )
    if report:
        print(report, file=sys.stderr if args.json else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
