"""``verify --junit PATH``, ``--quiet`` and the GitHub Actions reports (docs/ci.md).

- ``--junit PATH`` writes the Run as JUnit XML (``entrypoints/cli/render/reports.py``). The folder
  must exist and the file must lie outside the reviewed repository's Artifacts (a report
  written there would change their fingerprints): both are checked before any Run. The
  file is written whole (a temporary file renamed over it), also for an INCOMPLETE or RED
  Run, never for one that did not start.
- With ``GITHUB_ACTIONS=true``, ``verify`` appends a Markdown table of the Run to
  ``$GITHUB_STEP_SUMMARY`` (when set) and prints one ``::error file=…,line=…`` workflow
  command per RED or ERROR eval: on stdout in text mode, on stderr with ``--json`` (so
  stdout stays one JSON document; the runner reads workflow commands on both).
- Text output prints the tail of a RED or ERROR runtime eval's output under its line;
  ``--quiet`` keeps only the per-eval lines and the ``Summary:`` and ``Execution:`` lines.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from artifactize.entrypoints.cli.options import option
from artifactize.entrypoints.errors import CommandError

if TYPE_CHECKING:
    from artifactize.domain.project.workspace import Workspace
    from artifactize.domain.reviews.run.documents import RunResult
    from artifactize.ports.documents import Request


def _junit_path(value: str | None) -> Path | None:
    """``--junit`` as a path; a folder is refused as typer's ``dir_okay=False`` would.

    Taken as ``str`` and converted here, so the refusal is ours, worded as typer's
    ``dir_okay=False`` would word it.
    """
    if value is None:
        return None
    if Path(value).is_dir():
        raise typer.BadParameter(f"file {value!r} is a directory.")
    return Path(value)


JunitOption = Annotated[
    str | None,
    option(
        "--junit",
        "Write the Run as JUnit XML to PATH (its folder must exist, outside the "
        "reviewed Artifacts).",
        callback=_junit_path,
    ),
]
QuietOption = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Print only the per-eval lines and the summary."),
]

GITHUB_ACTIONS = "GITHUB_ACTIONS"
GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
QUIET_KEEPS = ("Summary:", "Execution:")
REQUEST_LINE_INDENT = "  "
JUNIT_NO_FOLDER = "--junit {path}: the folder {folder} does not exist."
JUNIT_IN_ARTIFACT = (
    "--junit {path}: the report would be written inside the Artifact `{name}` and change "
    "its fingerprint; write it outside the reviewed Artifacts (e.g. $RUNNER_TEMP)."
)
JUNIT_NOT_WRITTEN = "--junit {path}: the report could not be written: {reason}"


@dataclass
class CiReports:
    junit: Path | None  # resolved: its folder exists
    github: bool
    step_summary: str | None
    quiet: bool

    @classmethod
    def from_environment(
        cls, junit_option: Path | str | None, repo: str, *, quiet: bool
    ) -> CiReports:
        """Check ``--junit``'s folder now (before the workspace loads)."""
        resolved = None
        if junit_option is not None:
            junit = Path(junit_option)
            folder = junit.parent if str(junit.parent) else Path()
            if not folder.is_dir():
                raise CommandError(JUNIT_NO_FOLDER.format(path=junit, folder=folder))
            resolved = Path(os.path.realpath(folder)) / junit.name
        github = os.environ.get(GITHUB_ACTIONS) == "true"
        summary = os.environ.get(GITHUB_STEP_SUMMARY) or None
        return cls(resolved, github, summary if github else None, quiet)

    def check_outside_artifacts(self, repo: str, workspace: Workspace) -> None:
        """Refuse a ``--junit`` file inside one of the workspace's Artifacts (exit 2)."""
        if self.junit is None:
            return
        root = Path(os.path.realpath(repo))
        try:
            relative = self.junit.relative_to(root).as_posix()
        except ValueError:
            return  # outside the repository
        for name, artifact in workspace.artifacts.items():
            prefix = artifact.path
            if prefix == "" or relative == prefix or relative.startswith(prefix + "/"):
                raise CommandError(JUNIT_IN_ARTIFACT.format(path=self.junit, name=name))

    def text(self, result: RunResult, render: Callable[[RunResult], str]) -> str:
        """The Run's text, with failure tails under their lines (or ``--quiet``'s subset)."""
        from artifactize.entrypoints.cli.render.reports import output_tail
        from artifactize.kernel.document_codec import request_json

        heads: dict[str, tuple[int, Request]] = {}
        for order, r in enumerate(result.requests):
            heads.setdefault(f"{REQUEST_LINE_INDENT}{r.eval_id} [{r.id}]:", (order, r))
        lines: list[str] = []
        for line in render(result).split("\n"):
            request = _request_of(line, heads)
            if self.quiet and request is None and not line.startswith(QUIET_KEEPS):
                continue
            lines.append(line)
            if request is not None and not self.quiet:
                tails = output_tail(request_json(request))
                lines.extend(REQUEST_LINE_INDENT * 2 + tail for tail in tails)
        return "\n".join(lines)

    def write(self, result: RunResult, workspace: Workspace | None, *, json_output: bool) -> None:
        """The JUnit file, the step summary and the annotations of a Run that started;
        nothing is converted when neither ``--junit`` nor GitHub Actions asks for them (each
        request's JSON, ~0.1 s at 10,000 Artifacts, was built and thrown away)."""
        if self.junit is None and not self.github:
            return
        from artifactize.entrypoints.cli.render import reports
        from artifactize.kernel.document_codec import request_json, run_json

        run: dict[str, Any] = run_json(result.run)
        requests = [request_json(r) for r in result.requests]
        if self.junit is not None:
            _write_whole(self.junit, reports.junit_xml(run, requests))
        if not self.github:
            return
        if self.step_summary is not None:
            try:
                with Path(self.step_summary).open("a", encoding="utf-8") as summary:
                    summary.write(reports.github_summary(run, requests))
            except OSError as exc:
                typer.echo(f"warning: {GITHUB_STEP_SUMMARY} not written: {exc}", err=True)
        stream = sys.stderr if json_output else sys.stdout
        for line in reports.github_annotations(workspace, requests):
            print(line, file=stream, flush=True)


def _write_whole(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise CommandError(JUNIT_NOT_WRITTEN.format(path=path, reason=exc.strerror)) from None


def _request_of(line: str, heads: dict[str, tuple[int, Request]]) -> Request | None:
    """The first request (in the Run's order) whose head line starts ``line``.

    Every head ends with ``]:``, so a head that starts the line is the line cut just after
    one of its ``]:``: a dictionary lookup per such cut, not a scan of every head per line
    (which made a text ``verify`` at 10,000 Artifacts quadratic: 155 million prefix tests,
    ~10 s of CPU)."""
    if not line.startswith(REQUEST_LINE_INDENT):
        return None
    found: tuple[int, Request] | None = None
    cut = line.find("]:")
    while cut != -1:
        head = heads.get(line[: cut + 2])
        if head is not None and (found is None or head[0] < found[0]):
            found = head
        cut = line.find("]:", cut + 1)
    return None if found is None else found[1]
