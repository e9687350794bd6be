"""The text form of ``artifactize init``: the files written, what was detected, what next."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from artifactize.entrypoints.init_project import InitResult

WROTE = "Wrote {path}"
FILL_IN_TESTS = (
    "Detected a {label} project; which program runs its tests is yours to fill in: see the "
    "comment above [evals.tests] in index.artf. Next: artifactize config check"
)
TESTS_RUN = (
    "Detected a {label} project; its tests run as `{tests}`. Next: artifactize config check, "
    "then artifactize verify {name}/tests"
)


def init_text(result: InitResult) -> str:
    """One line per file written, then the project detected and the next step."""
    lines = [WROTE.format(path=path) for path in result.written]
    tests = result.tests
    if tests is None:
        lines.append(FILL_IN_TESTS.format(label=result.project.label))
    else:
        lines.append(
            TESTS_RUN.format(label=result.project.label, tests=" ".join(tests), name=result.name)
        )
    return "\n".join(lines)
