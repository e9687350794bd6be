"""Scale benchmark: does every command cost the same per Artifact at 100, 1,000 and 10,000?

Generates, in a temporary directory removed at the end (even on an error or Ctrl-C), a
repository of ``N`` folder Artifacts, each with ``FILES_PER_ARTIFACT`` source files, a
runtime eval running ``true``, and, spread over them, Agent evals, Human evals, child
Artifacts, mounts, references in instructions and dependency evals (see ``generate``).
The tree is committed to git. One ``verify --all`` fills the state first (Agent and Human
evals only reuse: ``--reuse-only agent,human``, so no model and no person is needed), then
each command is timed in a fresh interpreter as a user would start it:

- ``config check``; ``status``; ``status`` after a one-file edit;
- ``verify --all`` with everything reused; ``verify --all`` after a one-file edit;
- ``run list``, ``request list``;
- the monitor's first screen (the Run list read the way the monitor reads it), and its
  Run screen (the newest Run opened: its tree, header and first rows, then one refresh);
- ``prune --keep 1 --dry-run``: every Run but the newest chosen, their requests deleted
  and the unreferenced executions swept, all rolled back.
- ``status`` with an empty file index (the first command on a fresh clone, as in a CI job
  without a cached state home): every file hashed, every declaration parsed; git's own
  cold start (``git status`` with an index read from ``HEAD``, so it hashes every file) is
  printed beside the warm ``git status``.

For each: the time (best of ``--runs``), the time per Artifact, and the ratio to
``git status --porcelain`` on the same committed tree (best of the same number of runs).
The last column says whether the per-Artifact time stays flat: the ratio of the largest
size's per-Artifact time to the previous size's.

    .venv/bin/python bench/scale.py                         # 100, 1,000 and 10,000
    .venv/bin/python bench/scale.py --sizes 100,1000 --json
    .venv/bin/python bench/scale.py --sizes 1000 --profile status   # cProfile one command
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from artifactize.adapters.file_index import RACY_MARGIN_NS
from artifactize.entrypoints.container import FILE_INDEX_FILE

REPO_ROOT = Path(__file__).resolve().parents[1]
FILES_PER_ARTIFACT = 10
FILE_BYTES = 1024
GROUP = 100  # modules per group; each group has one library module the others may mount
MONITOR_ROWS = 50  # the monitor's first page of Runs
FLAT_TARGET = 1.2  # per-Artifact time at the largest size over the previous size
GIT_TARGET = 5.0  # warm status and an all-reused verify, against git status


def _module(index: int) -> str:
    return f"m{index:05d}"


def _declaration(index: int, runtime_every: int = 1) -> str:
    """One module's ``index.artf``: a runtime eval (every ``runtime_every``-th module; every
    library has one), the rest spread by index."""
    name = _module(index)
    head = index - index % GROUP
    lines = [f'name = "{name}"', f'tags = ["group:{index // GROUP}"]']
    mounts = index != head
    if mounts:
        lines.append(f'mounts = {{ lib = "{_module(head)}" }}')
    if index % runtime_every == 0:
        lines += [
            "",
            "[evals.check]",
            'title = "The module builds"',
            f'profile = {{ kind = "runtime", command = "true", args = ["{name}"] }}',
            f'payload.instruction = "Check {{{name}}}."',
        ]
    if index % 3 == 0 and mounts:  # a library never waits for a model
        lines += [
            "",
            "[evals.review]",
            'title = "The module reads well"',
            'profile = { kind = "agent", backend = "anthropic", model = "claude-sonnet-4-5", '
            'reasoning = "low" }',
            f'payload.instruction = "Review {{{name}}} against {{lib}}."',
        ]
    if index % 10 == 1:  # never a library: m00001, m00011, ...
        lines += [
            "",
            "[evals.signoff]",
            'title = "The owner approves"',
            'profile = { kind = "human" }',
            'payload.instruction = "Approve it if it can ship."',
        ]
    if mounts and index % 20 == 7:
        lines += [
            "",
            "[evals.ready]",
            'title = "The library is signed off"',
            'profile = { kind = "dependency", depends_on = ["lib"] }',
        ]
    return "\n".join(lines) + "\n"


def generate(root: Path, artifacts: int, runtime_every: int = 1) -> None:
    """A committed repository of ``artifacts`` folder Artifacts (the root and children count).

    ``mods/mNNNNN`` each hold ``FILES_PER_ARTIFACT`` files; every tenth module has a child
    Artifact ``tests`` (its own folder and files); within each group of ``GROUP`` modules
    the others mount the first one as ``lib`` (some reference it, some depend on it).
    """
    root.mkdir(parents=True)
    (root / "index.artf").write_text(
        'name = "root"\nfingerprint = { files = ["README.md"] }\n', encoding="utf-8"
    )
    (root / "README.md").write_text("generated\n", encoding="utf-8")
    body = ("x = 1  # filler\n" * (FILE_BYTES // 16))[:FILE_BYTES]
    count, index = 1, 0
    while count < artifacts:
        folder = root / "mods" / _module(index)
        (folder / "src").mkdir(parents=True)
        declaration = _declaration(index, runtime_every)
        (folder / "index.artf").write_text(declaration, encoding="utf-8")
        for n in range(FILES_PER_ARTIFACT - 1):
            (folder / "src" / f"f{n}.py").write_text(f"# {index} {n}\n{body}", encoding="utf-8")
        count += 1
        if index % 10 == 5 and count < artifacts:
            child = folder / "tests"
            child.mkdir()
            child_evals = (
                '\n[evals.names]\ntitle = "Tests exist"\n'
                f'profile = {{ kind = "runtime", command = "true", args = ["{index}"] }}\n'
                'payload.instruction = "Tests."\n'
                if index % runtime_every == 0
                else ""
            )
            (child / "index.artf").write_text(
                f'name = "{_module(index)}-tests"\n{child_evals}', encoding="utf-8"
            )
            for n in range(FILES_PER_ARTIFACT - 1):
                (child / f"test_{n}.py").write_text(f"# t {n}\n{body}", encoding="utf-8")
            count += 1
        index += 1
    # gc.auto=0: with 10,000 Artifacts the commit leaves enough loose objects for git to
    # pack them in a detached background gc, which removed object folders while
    # ``let_settle`` walked the tree (a flaky test_scale_counts setup)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    git += ["-c", "gc.auto=0"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "generated"], cwd=root, check=True)


def cli(repo: Path, state: Path, *args: str) -> list[str]:
    """The argv of one CLI command on ``repo`` with its own state (tests use it too)."""
    where = ["--repo", str(repo), "--state-dir", str(state)]
    return [sys.executable, "-m", "artifactize.entrypoints.cli.app", *where, *args]


# No team store: local state only. Without PYTHONDONTWRITEBYTECODE (set on this kind of
# machine), as bench/startup.py: a user's install has its bytecode cached, and with it set
# every command compiled artifactize's modules again (about a third of a warm status).
ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "ARTIFACTIZE_REMOTE": "off",
}
_OK_CODES = {0, 1, 4}  # GREEN, RED/not ready, INCOMPLETE: all normal here


def timed(
    command: Sequence[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, float]:
    """CPU (user + sys of the finished child and its threads) and wall time of one run.

    Both are kept: on a machine shared with other work the wall time waits for a CPU, the
    CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env or ENV, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in _OK_CODES:
        raise SystemExit(
            f"bench: {' '.join(command[3:])} exited {done.returncode}: "
            f"{done.stderr.decode(errors='replace')[-2000:]}"
        )
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, wall


def _run(command: Sequence[str], cwd: Path) -> tuple[float, float]:
    return timed(command, cwd)


def _best(
    runs: int,
    action: Callable[[], tuple[float, float]],
    before: Callable[[], None] | None = None,
) -> tuple[float, float]:
    """The least CPU and the least wall time over ``runs`` runs (each its own best)."""
    cpus, walls = [], []
    for _ in range(runs):
        if before:
            before()
        cpu, wall = action()
        cpus.append(cpu)
        walls.append(wall)
    return min(cpus), min(walls)


def _monitor_first_screen(state: Path, repo: Path) -> list[str]:
    """A fresh interpreter that reads the monitor's Run list the way its first screen does:
    its read-only state and ``MonitorSource.runs`` (the screen's rows), without a terminal."""
    code = (
        "import os, sys\n"
        "from artifactize.adapters.sqlite.stores import SqliteStatesOnDemand\n"
        "from artifactize.entrypoints.monitor_tui.source import MonitorSource\n"
        "def open_state():\n"
        "    return SqliteStatesOnDemand().open(sys.argv[1], create=False, read_only=True)\n"
        "rows = MonitorSource(open_state, os.path.realpath(sys.argv[2])).runs(MONITOR_ROWS)\n"
        "assert rows, 'no Runs on the first screen'\n"
    ).replace("MONITOR_ROWS", str(MONITOR_ROWS))
    return [sys.executable, "-c", code, str(state), str(repo)]


def _monitor_run_screen(state: Path, repo: Path) -> list[str]:
    """A fresh interpreter that opens the newest Run in the monitor (its tree, header and
    first rows rendered headless, as a terminal of 160 × 50 shows them), then refreshes it
    once with nothing changed."""
    code = (
        "import os, sys\n"
        "from artifactize.adapters.sqlite.stores import SqliteStatesOnDemand\n"
        "from artifactize.entrypoints.monitor_tui.app import MonitorApp\n"
        "from artifactize.entrypoints.monitor_tui.source import MonitorSource\n"
        "def open_state():\n"
        "    return SqliteStatesOnDemand().open(sys.argv[1], create=False, read_only=True)\n"
        "app = MonitorApp(MonitorSource(open_state, os.path.realpath(sys.argv[2])), list)\n"
        "app.refresh()\n"
        "app.on_key('enter')\n"
        "app.refresh()\n"
        "assert app.run_screen is not None and app.run_screen.rows, 'no tree'\n"
        "app.widget.render((160, 50), focus=True)\n"
    )
    return [sys.executable, "-c", code, str(state), str(repo)]


REUSE_ONLY = ("--reuse-only", "agent,human")


def let_settle(tree: Path) -> None:
    """Wait until every file of ``tree`` is older than the racy margin. The file index
    re-reads a file whose mtime or ctime is not safely older than its own write (git's racy
    rule), and a `status` answer is kept only over a state changed more than that margin
    before: whether a step runs would otherwise depend on how fast the generation, the fill
    or the command before was, not on the size (setting the times back cannot help: that
    moves the ctime)."""
    newest = max(entry.stat().st_ctime_ns for entry in tree.rglob("*"))
    wait_ns = newest + RACY_MARGIN_NS - time.time_ns()
    if wait_ns > 0:
        time.sleep(wait_ns / 1e9 + 0.05)


def measure(artifacts: int, runs: int, workdir: Path) -> dict[str, Any]:
    repo = workdir / f"repo-{artifacts}"
    state = workdir / f"state-{artifacts}"
    generate(repo, artifacts)
    let_settle(repo)  # a user's files are not written seconds before; the bench's would be
    edited = repo / "mods" / _module(1) / "src" / "f0.py"
    original = edited.read_text(encoding="utf-8")
    flip = [0]

    def edit() -> None:
        flip[0] += 1
        edited.write_text(original + f"# edit {flip[0]}\n", encoding="utf-8")

    def restore_and_reverify() -> None:
        edited.write_text(original, encoding="utf-8")
        _run(cli(repo, state, "--json", "verify", "--all", *REUSE_ONLY), repo)

    _, fill = _run(cli(repo, state, "--json", "verify", "--all", "--jobs", "2", *REUSE_ONLY), repo)
    let_settle(state)
    git_cpu, git = _best(runs, lambda: _run(["git", "status", "--porcelain"], repo))
    git_cold_cpu, git_cold = _best(runs, lambda: _git_status_without_index(repo, workdir))
    figures: dict[str, tuple[float, float]] = {}
    # The fill is the state's first command: it loaded the workspace before it created the
    # state home, so the file index holds no declaration yet (docs/reviews.md); ``config
    # check`` only reads the index, so it is timed once a ``status`` (its first run here)
    # has kept them, as for a user's second command.
    figures["status"] = _best(runs, lambda: _run(cli(repo, state, "--json", "status"), repo))
    figures["config check"] = _best(runs, lambda: _run(cli(repo, state, "config", "check"), repo))
    figures["verify --all (all reused)"] = _best(
        runs, lambda: _run(cli(repo, state, "--json", "verify", "--all", *REUSE_ONLY), repo)
    )
    figures["run list"] = _best(runs, lambda: _run(cli(repo, state, "--json", "run", "list"), repo))
    figures["request list"] = _best(
        runs, lambda: _run(cli(repo, state, "--json", "request", "list"), repo)
    )
    figures["monitor first screen"] = _best(
        runs, lambda: _run(_monitor_first_screen(state, repo), repo)
    )
    figures["monitor Run screen"] = _best(
        runs, lambda: _run(_monitor_run_screen(state, repo), repo)
    )
    figures["prune --keep 1 --dry-run"] = _best(
        runs,
        lambda: _run(cli(repo, state, "--json", "prune", "--keep", "1", "--dry-run"), repo),
    )
    # A first run on a fresh clone (CI without a cached state home): every file is hashed.
    figures["status, empty file index"] = _best(
        runs, lambda: _run(cli(repo, state, "--json", "status"), repo), lambda: _drop_index(state)
    )
    edit()
    figures["status after a one-file edit"] = _best(
        runs, lambda: _run(cli(repo, state, "--json", "status"), repo), edit
    )
    figures["verify after a one-file edit"] = _best(
        runs,
        lambda: _run(cli(repo, state, "--json", "verify", "--all", *REUSE_ONLY), repo),
        edit,
    )
    restore_and_reverify()
    return {
        "artifacts": artifacts,
        "fillSeconds": fill,
        "gitStatusSeconds": git,
        "gitStatusCpuSeconds": git_cpu,
        "gitStatusWithoutIndexSeconds": git_cold,
        "gitStatusWithoutIndexCpuSeconds": git_cold_cpu,
        "commands": {
            name: {
                "seconds": seconds,
                "msPerArtifact": seconds * 1000 / artifacts,
                "toGitStatus": seconds / git,
                "cpuSeconds": cpu,
                "cpuMsPerArtifact": cpu * 1000 / artifacts,
                "cpuToGitStatus": cpu / git_cpu,
            }
            for name, (cpu, seconds) in figures.items()
        },
    }


def _drop_index(state: Path) -> None:
    """Remove the file index (and its journal files): the next command hashes every file."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        (state / f"{FILE_INDEX_FILE}{suffix}").unlink(missing_ok=True)


def _git_status_without_index(repo: Path, workdir: Path) -> tuple[float, float]:
    """``git status --porcelain`` with an index read from ``HEAD`` just now, so it holds no
    file's stat data and git hashes every file again: git's own cold start, the reference
    for ``status`` with an empty file index. Only the status is timed."""
    index = workdir / "git-index-cold"
    index.unlink(missing_ok=True)
    env = {**ENV, "GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "read-tree", "HEAD"], cwd=repo, env=env, check=True)
    return timed(["git", "status", "--porcelain"], repo, env)


def _profile(artifacts: int, command: str, workdir: Path, top: int) -> None:
    repo = workdir / f"repo-{artifacts}"
    state = workdir / f"state-{artifacts}"
    generate(repo, artifacts)
    _run(cli(repo, state, "--json", "verify", "--all", "--jobs", "2", *REUSE_ONLY), repo)
    args = {"status": ["status"], "verify": ["verify", "--all", *REUSE_ONLY]}[command]
    out = workdir / "profile.out"
    argv = cli(repo, state, "--json", *args)
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), *argv[1:]],
        cwd=repo,
        env=ENV,
        capture_output=True,
        check=False,
    )
    import pstats

    pstats.Stats(str(out)).sort_stats("cumulative").print_stats(top)
    pstats.Stats(str(out)).sort_stats("tottime").print_stats(top)


def _print(results: list[dict[str, Any]]) -> None:
    names = list(results[0]["commands"])
    header = "| command | " + " | ".join(f"{r['artifacts']:,}" for r in results)
    print(header + " | flat (last/previous per Artifact) |")
    print("| --- |" + " ---: |" * (len(results) + 1))
    for name in names:
        cells = []
        for result in results:
            figure = result["commands"][name]
            cells.append(
                f"{figure['seconds']:.2f} s · {figure['msPerArtifact']:.2f} ms/A · "
                f"{figure['toGitStatus']:.1f}x git · CPU {figure['cpuSeconds']:.2f} s, "
                f"{figure['cpuToGitStatus']:.1f}x git"
            )
        flat = ""
        if len(results) > 1:
            last, previous = results[-1]["commands"][name], results[-2]["commands"][name]
            flat = (
                f"{last['msPerArtifact'] / previous['msPerArtifact']:.2f}x · CPU "
                f"{last['cpuMsPerArtifact'] / previous['cpuMsPerArtifact']:.2f}x"
            )
        print(f"| {name} | " + " | ".join(cells) + f" | {flat} |")
    for result in results:
        print(
            f"{result['artifacts']:,} Artifacts: git status --porcelain "
            f"{result['gitStatusSeconds'] * 1000:.0f} ms "
            f"(CPU {result['gitStatusCpuSeconds'] * 1000:.0f} ms), with an index read from HEAD "
            f"{result['gitStatusWithoutIndexSeconds'] * 1000:.0f} ms "
            f"(CPU {result['gitStatusWithoutIndexCpuSeconds'] * 1000:.0f} ms); "
            "first verify --all --jobs 2 "
            f"{result['fillSeconds']:.1f} s"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", choices=["status", "verify"])
    parser.add_argument("--top", type=int, default=30)
    options = parser.parse_args(argv)
    sizes = [int(s) for s in options.sizes.split(",")]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = Path(tempfile.mkdtemp(prefix="artifactize-scale-"))
    try:
        if options.profile:
            _profile(sizes[0], options.profile, workdir, options.top)
            return 0
        results = [measure(size, options.runs, workdir) for size in sizes]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if options.json:
        print(json.dumps({"results": results}, indent=2))
    else:
        _print(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
