"""Lists of names on one line are cut at ``NAMED_AT_MOST``: at 10,000 Artifacts the doctor's
backend line named 3,000 evals (45,000 characters) and the monitor's header thousands."""

from __future__ import annotations

from typing import Any

from artifactize.entrypoints.cli.render.doctor import doctor_text
from artifactize.entrypoints.text_lists import NAMED_AT_MOST, named


def evals(count: int) -> list[str]:
    return [f"m{i:05d}/review" for i in range(count)]


def test_names_are_listed_up_to_the_limit_then_counted() -> None:
    assert named([]) == ""
    assert named(evals(NAMED_AT_MOST)) == ", ".join(evals(NAMED_AT_MOST))
    past = named(evals(NAMED_AT_MOST + 1))
    assert past == ", ".join(evals(NAMED_AT_MOST)) + " (+1 more)"
    assert named(evals(3000)).endswith(f" (+{3000 - NAMED_AT_MOST} more)")


def report(count: int) -> dict[str, Any]:
    return {
        "backends": [{"backend": "anthropic", "evals": evals(count), "ready": False}],
        "stateHome": {"writable": True, "path": "/state", "detail": None},
        "teamStore": {"configured": False, "detail": None},
        "editor": {"needed": False, "variable": None, "command": "vi"},
        "desktopOpener": {"path": "/usr/bin/xdg-open", "program": "xdg-open", "needed": False},
        "ready": True,
        "problems": [],
    }


def test_the_doctors_backend_line_names_at_most_the_limit() -> None:
    at_limit = doctor_text(report(NAMED_AT_MOST)).splitlines()[0]
    assert at_limit == f"Agent backend anthropic ({', '.join(evals(NAMED_AT_MOST))}):"
    past = doctor_text(report(3000)).splitlines()[0]
    assert past.endswith(f" (+{3000 - NAMED_AT_MOST} more)):")
    assert past.count("/review") == NAMED_AT_MOST
