"""The CI reports of a Run (``--junit``, GitHub Actions): built only when one is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifactize.domain.reviews.run.documents import RunResult
from artifactize.entrypoints.cli.ci_reports import CiReports
from artifactize.kernel import document_codec
from artifactize.kernel.document_codec import request_from_json, run_from_json
from artifactize.ports.documents import Request


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[Request]:
    """The requests converted to JSON from now on (``request_json``, read at call time)."""
    converted: list[Request] = []
    original = document_codec.request_json

    def counting(request: Request) -> dict[str, object]:
        converted.append(request)
        return original(request)

    monkeypatch.setattr(document_codec, "request_json", counting)
    return converted


def _result(count: int) -> RunResult:
    run = run_from_json({"id": "run-a", "status": "GREEN"})
    requests = [
        request_from_json(
            {"id": f"run-a-{i}", "evalId": f"m{i}/check", "ordinal": i, "status": "GREEN"}
        )
        for i in range(1, count + 1)
    ]
    return RunResult(run, requests)


def test_no_report_asked_converts_no_request(monkeypatch: pytest.MonkeyPatch) -> None:
    converted = _counted(monkeypatch)
    CiReports(None, False, None, False).write(_result(50), None, json_output=True)
    assert converted == []


def test_a_junit_report_converts_each_request_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    converted = _counted(monkeypatch)
    junit = tmp_path / "junit.xml"
    CiReports(junit, False, None, False).write(_result(50), None, json_output=True)
    assert len(converted) == 50
    assert junit.read_text(encoding="utf-8").startswith("<?xml")
