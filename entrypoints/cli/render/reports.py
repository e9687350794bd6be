"""What CI systems read from a Run: output tails, JUnit XML, a GitHub step summary and
``::error`` annotations. Pure: the CLI writes what these functions return.

- **Output tail.** A RED or ERROR runtime eval that ran here prints the last
  ``TAIL_MAX_LINES`` lines of each captured stream, at most ``TAIL_MAX_BYTES`` in all,
  stderr first, each labelled.
- **JUnit.** One ``testsuite`` per Run, one ``testcase`` per requested eval (``classname``
  the Artifact, ``name`` the eval): GREEN passes; RED is a ``<failure>`` with the owner
  fields and, for runtime evals, the output tail; ERROR is an ``<error>`` with its code and
  message; every other status (STALE, BLOCKED, WAIT_*, a waiting Human request,
  UNREVIEWED, BUDGET_EXHAUSTED) is ``<skipped>`` with its reason. ``time`` is the duration
  in seconds.
- **GitHub.** A Markdown table of the Run for ``$GITHUB_STEP_SUMMARY`` and one ``::error``
  workflow command per RED or ERROR eval, at its ``[evals.ID]`` line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from xml.etree import ElementTree

from artifactize.domain.declarations.toml_source import KeyLocator
from artifactize.domain.project.workspace import UnknownName, Workspace
from artifactize.domain.reviews.timestamps import elapsed_ms
from artifactize.ports.statuses import ProfileKind, RequestStatus

TAIL_MAX_LINES = 20
TAIL_MAX_BYTES = 4 * 1024
TAIL_STREAMS = ("stderr", "stdout")  # stderr first: that is where failures explain themselves
TAIL_INDENT = "  "
TAIL_LABEL = "{stream} (last {lines} lines):"
TAIL_TRUNCATED = "[… {bytes} earlier bytes of this tail not shown]"
MILLISECONDS_PER_SECOND = 1000
FAILING = (RequestStatus.RED, RequestStatus.ERROR)

Request = Mapping[str, Any]


# --- output tails ----------------------------------------------------------------------


def _last_bytes(text: str, limit: int) -> tuple[str, int]:
    """The end of ``text`` within ``limit`` UTF-8 bytes (whole characters), and how many
    bytes were left out."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, 0
    kept = data[len(data) - limit :].decode("utf-8", errors="ignore")
    return kept, len(data) - len(kept.encode("utf-8"))


def output_tail(request: Request) -> list[str]:
    """The labelled tail of a RED or ERROR runtime eval's own output (none: empty)."""
    if request.get("status") not in FAILING:
        return []
    if (request.get("profile") or {}).get("kind") != ProfileKind.RUNTIME:
        return []
    child = request.get("child")
    if not isinstance(child, Mapping):
        return []
    budget = TAIL_MAX_BYTES
    lines: list[str] = []
    for stream in TAIL_STREAMS:
        text = str(child.get(stream) or "").rstrip("\n")
        if not text or budget <= 0:
            continue
        last = text.split("\n")[-TAIL_MAX_LINES:]
        body, cut = _last_bytes("\n".join(last), budget)
        budget -= len(body.encode("utf-8"))
        shown = body.split("\n")
        lines.append(TAIL_LABEL.format(stream=stream, lines=len(shown)))
        if cut:
            lines.append(TAIL_INDENT + TAIL_TRUNCATED.format(bytes=cut))
        lines.extend(TAIL_INDENT + line for line in shown)
    return lines


# --- JUnit XML -------------------------------------------------------------------------


def duration_seconds(request: Request) -> float:
    """How long the request took from its start (or creation) to its settling; 0 unknown."""
    begin = request.get("startedAt") or request.get("createdAt")
    end = request.get("completedAt")
    if not begin or not end:
        return 0.0
    return max(elapsed_ms(begin, end), 0) / MILLISECONDS_PER_SECOND


def reason_of(request: Request) -> str:
    """Why a request has no verdict (its saved reason, else its status)."""
    return str(request.get("blockedReason") or request.get("error") or request["status"])


def owner_fields(request: Request) -> dict[str, Any]:
    """The reviewer's fields of a verdict, without the verdict itself."""
    result = request.get("result")
    if not isinstance(result, Mapping):
        return {}
    return {k: v for k, v in result.items() if k != "verdict"}


def junit_xml(run: Mapping[str, Any], requests: Sequence[Request]) -> str:
    """The Run as a JUnit XML document (one testsuite, one testcase per request)."""
    counts = {"failures": 0, "errors": 0, "skipped": 0}
    suite = ElementTree.Element("testsuite", name=f"artifactize {run['id']}")
    for request in requests:
        artifact, _, eval_id = str(request["evalId"]).partition("/")
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=artifact,
            name=eval_id,
            time=f"{duration_seconds(request):.3f}",
        )
        status = request["status"]
        if status == RequestStatus.GREEN:
            continue
        if status == RequestStatus.RED:
            counts["failures"] += 1
            fields = owner_fields(request)
            element = ElementTree.SubElement(
                case, "failure", message=_failure_message(request), type="RED"
            )
            body = [json.dumps(fields, ensure_ascii=False, indent=2, sort_keys=True)]
            tail = output_tail(request)
            if tail:
                body.extend(["", *tail])
            element.text = "\n".join(body)
        elif status == RequestStatus.ERROR:
            counts["errors"] += 1
            code = str(request.get("errorCode") or "ERROR")
            element = ElementTree.SubElement(
                case, "error", message=str(request.get("error") or code), type=code
            )
            element.text = "\n".join(
                [f"{code}: {request.get('error') or ''}", *output_tail(request)]
            )
        else:
            counts["skipped"] += 1
            ElementTree.SubElement(case, "skipped", message=f"{status}: {reason_of(request)}")
    total = sum(duration_seconds(r) for r in requests)
    suite.set("tests", str(len(requests)))
    for name, value in counts.items():
        suite.set(name, str(value))
    suite.set("time", f"{total:.3f}")
    if run.get("createdAt"):
        suite.set("timestamp", str(run["createdAt"]))
    root = ElementTree.Element("testsuites", name="artifactize")
    root.append(suite)
    ElementTree.indent(root)
    text = ElementTree.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{text}\n'


def _failure_message(request: Request) -> str:
    code = (request.get("result") or {}).get("exitCode")
    if (request.get("profile") or {}).get("kind") == ProfileKind.RUNTIME and code is not None:
        return f"RED: exit {code}"
    fields = owner_fields(request)
    summary = next((str(v) for v in fields.values() if isinstance(v, str)), None)
    return f"RED: {summary}" if summary else "RED"


# --- GitHub ----------------------------------------------------------------------------


def _cell(text: object) -> str:
    """Markdown table cell text: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def github_summary(run: Mapping[str, Any], requests: Sequence[Request]) -> str:
    """A Markdown section for ``$GITHUB_STEP_SUMMARY``: the Run's status and one row per
    requested eval."""
    lines = [
        f"### artifactize verify: {run['status']} ({run['id']})",
        "",
        "| Eval | Status | Source | Detail |",
        "| --- | --- | --- | --- |",
    ]
    for request in requests:
        source = request.get("source") or {}
        origin = str(source.get("kind") or ("executed" if request.get("executionId") else ""))
        detail = _detail(request)
        lines.append(
            f"| `{_cell(request['evalId'])}` | {_cell(request['status'])} | {_cell(origin)} "
            f"| {_cell(detail)} |"
        )
    return "\n".join(lines) + "\n\n"


def _detail(request: Request) -> str:
    status = request["status"]
    if status == RequestStatus.GREEN:
        return ""
    return _failure_message(request) if status == RequestStatus.RED else reason_of(request)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def eval_location(workspace: Workspace, eval_id: str) -> tuple[str, int | None] | None:
    """The declaration file of an eval (workspace-relative) and its ``[evals.ID]`` line."""
    try:
        ref = workspace.find_eval(eval_id)
    except UnknownName:
        return None
    source = ref.artifact.source
    line = KeyLocator(source.text).line_of(f"evals.{ref.eval.id}")
    return source.path, line


def github_annotations(workspace: Workspace | None, requests: Sequence[Request]) -> list[str]:
    """One ``::error`` workflow command per RED or ERROR eval."""
    found = []
    for request in requests:
        status = request["status"]
        if status not in FAILING:
            continue
        eval_id = str(request["evalId"])
        if status == RequestStatus.RED:
            message = _failure_message(request)
            tail = output_tail(request)
            fields = owner_fields(request)
            extra = [json.dumps(fields, ensure_ascii=False, sort_keys=True)] if fields else []
            message = "\n".join([message, *extra, *tail])
        else:
            code = request.get("errorCode") or "ERROR"
            message = "\n".join(
                [f"ERROR {code}: {request.get('error') or ''}", *output_tail(request)]
            )
        props = [f"title={_escape_property(f'{eval_id} {status}')}"]
        location = eval_location(workspace, eval_id) if workspace is not None else None
        if location is not None:
            path, line = location
            props.insert(0, f"file={_escape_property(path)}")
            if line is not None:
                props.insert(1, f"line={line}")
        found.append(f"::error {','.join(props)}::{_escape_data(message)}")
    return found
