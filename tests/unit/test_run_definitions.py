"""A Run's recorded definitions (``recorded_declarations.run_definitions``): each eval is
written twice (under ``evals``, and in its Artifact's ``declaration``) and converted once."""

from __future__ import annotations

import json

import pytest

from artifactize.domain.reviews.human import recorded_declarations
from artifactize.domain.reviews.human.recorded_declarations import (
    artifact_json,
    eval_json,
    run_definitions,
)
from artifactize.domain.reviews.run.gates import scope_evals
from tests.unit.test_gates import chain


def test_the_definitions_are_those_each_eval_and_artifact_converts_alone() -> None:
    space = chain()
    refs = scope_evals(space, ("doc", "app", "top"))
    expected = {
        "evals": {ref.qualified_id: eval_json(ref) for ref in refs},
        "artifacts": {name: artifact_json(space.artifact(name)) for name in ("doc", "app", "top")},
    }
    found = run_definitions(refs)
    assert json.dumps(found) == json.dumps(expected)  # the same keys in the same order


def test_each_eval_is_converted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    space = chain()
    refs = scope_evals(space, ("doc", "app", "top"))
    converted: list[object] = []
    plain_json = recorded_declarations.plain_json

    def counting(value: object) -> object:
        if any(value is ref.eval for ref in refs):
            converted.append(value)
        return plain_json(value)

    monkeypatch.setattr(recorded_declarations, "plain_json", counting)
    run_definitions(refs)
    assert len(converted) == len(refs) == 4
