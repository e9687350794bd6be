"""The text form of ``status``: each eval with its state and what ``verify`` would do, the
program a runtime eval would run, why a WAIT_DEPENDENCY eval waits, then the summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from artifactize.domain.use_cases.status import StatusReport
    from artifactize.ports.documents import ProgramDocument

ACTION_WORDS = {
    "execute": "will execute",
    "reuse": "will reuse",
    "wait": "wait",
    "blocked": "blocked",
    "derive": "will derive",
    "stale": "stale (reuse-only)",
}
WAIT_EXPLAINED = (
    "  wait: {count} eval(s) wait for an input, a person, or a selection "
    "(select them, or verify with --recursive)."
)
# Under a WAIT_DEPENDENCY eval: why it waits (docs/declarations.md, "surprise first").
DEPENDENCY_EXPLAINED = (
    "    why: {target} consumes {inputs} (named by one of its evals, mounted or a child), and "
    "every eval of an Artifact runs once all evals of what it consumes are GREEN "
    "(--ignore-gates runs it anyway)"
)
FINGERPRINT_FAILED = "Fingerprints failed for: {evals}."


def program_lines(program: ProgramDocument | str | None) -> list[str]:
    """A runtime eval's program (and where its links lead), its warning, or why it has none."""
    if program is None:
        return []
    if isinstance(program, str):
        return [f"program: none — {program}"]
    shown = program["path"]
    if program["realPath"] != shown:
        shown += f" -> {program['realPath']}"
    lines = [f"program: {shown}"]
    if program["warning"]:
        lines.append(f"warning: {program['warning']}")
    return lines


def status_text(report: StatusReport) -> str:
    """Evals, Artifacts, unmet obligations, then the ``Verify actions:`` summary."""
    from artifactize.domain.reviews.run import gates

    lines = ["Evals:"]
    for item in report.evals:
        eval_id, state = item["evalId"], item["state"]
        marks = "selected" if item["selected"] else ("included" if item["included"] else "scope")
        line = f"  {eval_id} [{marks}]: {state} -> {item['action']}"
        if item["reason"]:
            line += f" — {item['reason']}"
        lines.append(line)
        changes = item["changes"]
        if changes is not None:
            lines.append(f"    {changes['summary']}")
        program = item["programError"] if "programError" in item else item.get("program")
        lines.extend(f"    {text}" for text in program_lines(program))
        waits_for = report.waits_for.get(eval_id)
        if state == gates.WAIT_DEPENDENCY and waits_for:
            target = eval_id.split("/", 1)[0]
            inputs = ", ".join(waits_for)
            lines.append(DEPENDENCY_EXPLAINED.format(target=target, inputs=inputs))
    lines.append("Artifacts:")
    lines.extend(f"  {name}: {state}" for name, state in report.artifacts.items())
    lines.append(f"Validation: {'SATISFIED' if report.satisfied else 'NOT SATISFIED'}")
    lines.extend(f"  Unmet obligation: {name}" for name in report.unmet)
    if report.fingerprint_failures:
        lines.append(FINGERPRINT_FAILED.format(evals=", ".join(report.fingerprint_failures)))
    from artifactize.domain.use_cases.status import ACTIONS, EXTRA_ACTIONS

    counts = report.action_counts()
    summary = ", ".join(f"{ACTION_WORDS[action]} {counts[action]}" for action in ACTIONS)
    summary += "".join(
        f", {ACTION_WORDS[action]} {counts[action]}" for action in EXTRA_ACTIONS if action in counts
    )
    lines.append(f"Verify actions: {summary}")
    if counts["wait"]:
        lines.append(WAIT_EXPLAINED.format(count=counts["wait"]))
    return "\n".join(lines)
