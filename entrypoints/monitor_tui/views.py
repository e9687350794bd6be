"""What the monitor shows, as plain text rows: the Run list, a Run's header, its
Artifact/eval tree and the detail of one node. No urwid here, so every screen's content is
tested as data.

Counts and totals are computed from the requests as they stand when read (a Run's saved
``summary`` is a snapshot taken when ``verify`` returned; a Human submission after that
changes its requests, not the snapshot).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from artifactize.domain.reviews.run.summaries import run_summary, run_usage, usage_text
from artifactize.entrypoints.review_tui.waiting import age_text
from artifactize.entrypoints.text_lists import NAMED_AT_MOST, named
from artifactize.kernel.timestamps import timestamp
from artifactize.ports.documents import Request
from artifactize.ports.statuses import RequestStatus, RunStatus

NOT_REQUESTED = "not requested"  # an eval of the Run's definitions with no request
# One glyph a status, readable without colour; an unknown status shows as "?".
GLYPHS: dict[str, str] = {
    RequestStatus.QUEUED: "·",
    RequestStatus.RUNNING: "▶",
    RequestStatus.WAIT_DEPENDENCY: "…",
    RequestStatus.BLOCKED: "⊘",
    RequestStatus.WAITING_HUMAN: "◷",
    RequestStatus.UNREVIEWED: "○",
    RequestStatus.GREEN: "✓",
    RequestStatus.RED: "✗",
    RequestStatus.ERROR: "!",
    RunStatus.INCOMPLETE: "◌",
    RequestStatus.SUPERSEDED: "↷",
    RequestStatus.CANCELLED: "⌀",
    RequestStatus.STALE: "~",
    RequestStatus.BUDGET_EXHAUSTED: "$",
    NOT_REQUESTED: " ",
}
UNKNOWN_GLYPH = "?"
COUNT_ORDER = [str(status) for status in RequestStatus]
NO_RUNS = "No Runs yet. Start one with `artifactize verify`."
RUN_COLUMNS = ("RUN", "STATUS", "REQUESTS", "AGE", "REPOSITORY")
EMPTY = "–"
DETAIL_JSON_INDENT = 2


def glyph(status: str) -> str:
    return GLYPHS.get(status, UNKNOWN_GLYPH)


def counts_text(counts: Mapping[str, int]) -> str:
    """``GREEN 3 · WAITING_HUMAN 1`` in lifecycle order; ``–`` for none."""
    ordered = sorted(counts, key=lambda s: COUNT_ORDER.index(s) if s in COUNT_ORDER else 99)
    return " · ".join(f"{status} {counts[status]}" for status in ordered) or EMPTY


@dataclass(frozen=True)
class RunRow:
    run_id: str
    repo: str
    status: str
    counts: dict[str, int]
    created_at: str | None


def run_table(rows: Sequence[RunRow], now: datetime) -> list[str]:
    """A header line, then one aligned line a Run."""
    cells = [
        (
            row.run_id,
            f"{glyph(row.status)} {row.status}",
            counts_text(row.counts),
            age_text(row.created_at, now),
            row.repo,
        )
        for row in rows
    ]
    widths = [max(len(c[i]) for c in [RUN_COLUMNS, *cells]) for i in range(len(RUN_COLUMNS) - 1)]

    def line(values: Sequence[str]) -> str:
        padded = [value.ljust(width) for value, width in zip(values, widths, strict=False)]
        return "  ".join([*padded, values[-1]])

    return [line(RUN_COLUMNS), *(line(c) for c in cells)]


# --- one Run --------------------------------------------------------------------------------


def _names(values: Any) -> list[str]:
    return [str(v) for v in values] if isinstance(values, list) else []


def run_header(run: Mapping[str, Any], requests: Sequence[Request], now: datetime) -> list[str]:
    """The Run view's header: what it is, where it stands, what it spent."""
    created = str(run.get("createdAt") or timestamp(now))
    completed = str(run.get("completedAt") or timestamp(now))
    saved_starts = int(run.get("executionsStarted") or 0)
    summary = run_summary(list(requests), created, completed, saved_starts)
    executed, reused = summary["executed"], summary["reused"]
    # A running Run saves its start count when it ends; meanwhile count what has started.
    started = max(saved_starts, executed["runtime"] + executed["agent"])
    validation = run.get("validation") or {}
    unmet = _names(validation.get("unmetObligations"))
    jobs = run.get("jobs")
    max_executions = run.get("maxExecutions")
    lines = [
        f"{run.get('id')}  {glyph(str(run.get('status')))} {run.get('status')}  {run.get('repoPath')}",
        f"Requests: {counts_text(summary['counts'])}",
        "Validation: "
        + (str(validation.get("status")) if validation else "not yet")
        + (f" (unmet: {named(unmet)})" if unmet else ""),
        f"Duration: {summary['wallMs'] / 1000:.1f}s"
        + ("" if run.get("completedAt") else " so far"),
        f"Budgets: jobs {jobs if jobs is not None else EMPTY} · max executions "
        f"{max_executions if max_executions is not None else EMPTY} · executions started "
        f"{started}",
        f"Executed {executed['total']} (runtime {executed['runtime']}, agent "
        f"{executed['agent']}, human {executed['human']}) · reused {reused['total']} "
        f"(runtime {reused['runtime']}, agent {reused['agent']}, human {reused['human']})",
        usage_text(run_usage(list(requests), summary)) or "Usage: none reported",
    ]
    if run.get("comment"):  # verify --comment: why it was started
        lines.insert(1, f"Comment: {run['comment']}")
    running = [str(r.eval_id) for r in requests if r.status == RequestStatus.RUNNING]
    waiting = [f"{r.eval_id} [{r.id}]" for r in requests if r.status == RequestStatus.WAITING_HUMAN]
    errors = [
        f"{r.eval_id}: {r.error_code or 'ERROR'} {r.error or ''}".rstrip()
        for r in requests
        if r.status == RequestStatus.ERROR
    ]
    if running:
        lines.append("Running: " + named(running))
    if waiting:
        lines.append("Waiting for a person: " + named(waiting) + " (o: review)")
    if run.get("error"):
        errors.insert(0, f"Run: {run.get('error')}")
    lines.extend(f"Error: {error}" for error in errors[:NAMED_AT_MOST])
    if len(errors) > NAMED_AT_MOST:
        lines.append(f"Errors: {len(errors) - NAMED_AT_MOST} more (select their evals below)")
    return lines


class NodeKind:
    ARTIFACT = "artifact"
    EVAL = "eval"
    INPUT = "input"
    CYCLE = "cycle"


@dataclass
class TreeNode:
    """A row of the Artifact/eval tree. ``key`` names what the detail pane shows: an
    Artifact name, or a request ID (an eval row)."""

    kind: str
    label: str
    depth: int
    key: str
    status: str | None = None
    children: list[TreeNode] = field(default_factory=list)
    expanded: bool = False

    @property
    def expandable(self) -> bool:
        return bool(self.children)

    def text(self) -> str:
        marker = ("▾ " if self.expanded else "▸ ") if self.expandable else "  "
        return "  " * self.depth + marker + self.label


def _inputs(artifact: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(relation, Artifact name) of what the Artifact consumes: children, mounts and
    references, in that order."""
    found: list[tuple[str, str]] = []
    for prefix, child in sorted((artifact.get("children") or {}).items()):
        found.append((f"child {prefix}", str(child)))
    for alias, target in sorted((artifact.get("mounts") or {}).items()):
        found.append((f"mount {alias}", str(target)))
    declaration = artifact.get("declaration") or {}
    for reference in declaration.get("references") or []:
        name = reference.get("name") if isinstance(reference, Mapping) else reference
        if name and name != artifact.get("name"):  # an instruction naming its own Artifact
            found.append(("reference", str(name)))
    return found


def build_tree(run: Mapping[str, Any], requests: Sequence[Request]) -> list[TreeNode]:
    """The Run's Artifacts as a forest (an Artifact no other one of the Run owns is a root),
    each with its eval rows, its input rows and its child Artifacts; an Artifact met again
    below itself is a cycle row, not expanded again."""
    saved = run.get("definitions") or {}
    artifacts: Mapping[str, Any] = saved.get("artifacts") or {}
    evals: Mapping[str, Any] = saved.get("evals") or {}
    by_eval = {str(r.eval_id): r for r in requests}
    owned = {str(c) for a in artifacts.values() for c in (a.get("children") or {}).values()}
    # Each Artifact's evals, grouped once: a scan of every eval per Artifact was 10,000 ×
    # 14,000 steps in a 10,000-Artifact Run, minutes per refresh.
    evals_of: dict[object, list[tuple[str, Mapping[str, Any]]]] = {}
    for qualified, definition in sorted(evals.items()):
        evals_of.setdefault(definition.get("artifact"), []).append((qualified, definition))

    def artifact_node(name: str, depth: int, path: tuple[str, ...]) -> TreeNode:
        if name in path:
            return TreeNode(NodeKind.CYCLE, f"↻ {name} (cycle)", depth, name)
        artifact = artifacts.get(name) or {}
        node = TreeNode(
            NodeKind.ARTIFACT, f"{name}  {artifact.get('path') or ''}".rstrip(), depth, name
        )
        inputs = _inputs(artifact)
        for qualified, definition in evals_of.get(name, ()):
            request = by_eval.get(qualified)
            status = NOT_REQUESTED if request is None else str(request.status)
            deps = [target for _, target in inputs]
            blocked = _names(None if request is None else request.blocked_by)
            after = f"  ⇐ {', '.join(deps)}" if deps else ""
            label = f"{glyph(status)} {definition.get('id')}  {status}{after}"
            if blocked:
                label += f"  (blocked by {', '.join(blocked)})"
            node.children.append(
                TreeNode(
                    NodeKind.EVAL,
                    label,
                    depth + 1,
                    qualified if request is None else str(request.id),
                    status,
                )
            )
        for relation, target in inputs:
            node.children.append(
                TreeNode(NodeKind.INPUT, f"⇐ {relation}: {target}", depth + 1, target)
            )
        for _, child in sorted((artifact.get("children") or {}).items()):
            if str(child) in artifacts or str(child) in path:
                node.children.append(artifact_node(str(child), depth + 1, (*path, name)))
        return node

    forest = [artifact_node(name, 0, ()) for name in sorted(artifacts) if name not in owned]
    reached = {node.key for tree in forest for node in _walk(tree)}
    for name in sorted(artifacts):  # owned only inside a cycle: shown as a root of its own
        if name not in reached:
            forest.append(artifact_node(name, 0, ()))
            reached.update(node.key for node in _walk(forest[-1]))
    return forest


def _walk(node: TreeNode) -> list[TreeNode]:
    return [node, *(found for child in node.children for found in _walk(child))]


def visible(forest: Sequence[TreeNode]) -> list[TreeNode]:
    """The rows shown: every root, and the children of expanded nodes."""
    rows: list[TreeNode] = []

    def walk(nodes: Sequence[TreeNode]) -> None:
        for node in nodes:
            rows.append(node)
            if node.expanded:
                walk(node.children)

    walk(forest)
    return rows


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=DETAIL_JSON_INDENT, sort_keys=True)


def eval_detail(request: Mapping[str, Any], claim: str | None) -> list[str]:
    """Everything the right pane says of one eval's request."""
    source = request.get("source") or {}
    lines = [
        f"{request.get('evalId')}  [{request.get('id')}]",
        f"Status: {request.get('status')}",
        f"Title: {request.get('title') or EMPTY}",
    ]
    if request.get("blockedReason"):
        lines.append(f"Blocked: {request.get('blockedReason')}")
    if request.get("error") or request.get("errorCode"):
        lines.append(
            f"Error: {request.get('errorCode') or ''} {request.get('error') or ''}".rstrip()
        )
    lines.append(f"Claim: {claim or EMPTY}")
    if isinstance(source, Mapping) and source:
        origin = " ".join(str(source[k]) for k in ("runId", "requestId") if source.get(k))
        lines.append(f"Reused: {source.get('kind')} {origin}".rstrip())
    else:
        lines.append("Reused: no")
    fingerprints = request.get("fingerprints")
    if isinstance(fingerprints, Mapping) and fingerprints:
        lines.append("Fingerprints:")
        lines.extend(f"  {name}: {value}" for name, value in sorted(fingerprints.items()))
    else:
        lines.append(f"Fingerprints: {EMPTY}")
    lines.append(f"Key: {request.get('key') or EMPTY}")
    calls = request.get("toolCalls") or []
    lines.append(f"Tool calls: {len(calls) if isinstance(calls, list) else EMPTY}")
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, Mapping):
                state = " (error)" if call.get("isError") else ""
                lines.append(f"  {call.get('name') or call.get('tool')}{state}")
    for title, key in (
        ("Result", "result"),
        ("Profile", "profile"),
        ("Requested profile", "requestedProfile"),
        ("Usage", "usage"),
    ):
        value = request.get(key)
        if value in (None, [], {}):
            lines.append(f"{title}: {EMPTY}")
        else:
            lines.append(f"{title}:")
            lines.extend("  " + line for line in _json(value).splitlines())
    return lines


def artifact_detail(run: Mapping[str, Any], name: str) -> list[str]:
    artifact = ((run.get("definitions") or {}).get("artifacts") or {}).get(name)
    if not isinstance(artifact, Mapping):
        return [name, "Not among this Run's saved definitions."]
    lines = [
        name,
        f"Kind: {artifact.get('kind')}",
        f"Path: {artifact.get('path') or '.'}",
        f"Tags: {', '.join(_names(artifact.get('tags'))) or EMPTY}",
    ]
    lines.extend(f"Input: {relation} → {target}" for relation, target in _inputs(artifact))
    return lines
