"""Dependency gates, eval states and final obligations (``domain.reviews.run.gates``), over
small workspaces in a MemoryFilesystem. The evals are Human evals: the gate rules do not
depend on the profile.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from artifactize.domain.project.workspace import Workspace
from artifactize.domain.reviews.run.gates import (
    BASIS,
    BLOCKED,
    ERROR,
    GREEN,
    INCOMPLETE,
    RED,
    UNREVIEWED,
    WAIT,
    WAIT_DEPENDENCY,
    WAITING_HUMAN,
    Evidence,
    GraphState,
    Readiness,
    evaluate,
    evidence_of,
    required_scope,
    scope_evals,
)
from artifactize.domain.use_cases.config_service import ConfigService
from tests.fakes.filesystem import MemoryFilesystem, Node


def declare(
    name: str, *evals: str, uses: tuple[str, ...] = (), basis: bool = False, mounts: str = ""
) -> bytes:
    """An Artifact whose evals all name ``uses`` in their instruction (one relation each);
    ``mounts`` relates an Artifact that has no evals (``base`` -> that name)."""
    lines = [f'name = "{name}"']
    if basis:
        lines.append("basis = true")
    if mounts:
        lines.append(f'mounts = {{ base = "{mounts}" }}')
    names = " ".join(f"{{{used}}}" for used in uses) or f"{{{name}}}"
    for eval_id in evals:
        lines += [
            f"[evals.{eval_id}]",
            f'title = "{eval_id}"',
            'profile = { kind = "human" }',
            f'payload.instruction = "Review {names}."',
        ]
    return ("\n".join(lines) + "\n").encode()


def workspace(**artifacts: bytes) -> Workspace:
    tree: dict[str, Node] = {name: {"index.artf": text} for name, text in artifacts.items()}
    return ConfigService(MemoryFilesystem({"/repo": tree})).load("/repo")


def chain() -> Workspace:
    """``top`` consumes ``app``, which consumes ``doc``."""
    return workspace(
        doc=declare("doc", "signoff", "spell"),
        app=declare("app", "check", uses=("doc",)),
        top=declare("top", "look", uses=("app",)),
    )


def graph(ws: Workspace, ignore_gates: bool = False, **evidence: Evidence) -> GraphState:
    known = {name.replace("__", "/"): value for name, value in evidence.items()}
    return evaluate(ws, tuple(ws.artifacts), known, ignore_gates=ignore_gates)


def test_a_consumer_waits_until_every_eval_of_its_input_is_green() -> None:
    ws = chain()
    state = graph(ws, doc__signoff=Evidence.GREEN)
    assert state.gates["doc/signoff"].readiness is Readiness.READY
    gate = state.gates["app/check"]
    assert gate.readiness is Readiness.WAIT
    assert gate.reason() == "Waiting for doc (doc/spell UNREVIEWED)."
    assert gate.blocked_by == ["doc", "doc/spell"]
    assert state.evals == {
        "doc/signoff": GREEN,
        "doc/spell": UNREVIEWED,
        "app/check": WAIT_DEPENDENCY,
        "top/look": WAIT_DEPENDENCY,
    }
    assert state.artifacts == {"app": WAIT, "doc": UNREVIEWED, "top": WAIT}
    assert state.unmet == ("app", "doc", "top") and not state.satisfied


def test_green_inputs_open_the_gate_and_evidence_decides() -> None:
    ws = chain()
    state = graph(ws, doc__signoff=Evidence.GREEN, doc__spell=Evidence.GREEN)
    assert state.gates["app/check"].readiness is Readiness.READY
    assert state.evals["app/check"] == UNREVIEWED
    assert state.gates["top/look"].readiness is Readiness.WAIT  # only direct inputs gate
    assert state.artifacts["doc"] == GREEN and state.unmet == ("app", "top")


def test_everything_green_satisfies_every_obligation() -> None:
    ws = chain()
    everything: dict[str, Evidence] = {ref.qualified_id: Evidence.GREEN for ref in ws.evals()}
    state = evaluate(ws, tuple(ws.artifacts), everything)
    assert state.satisfied and set(state.artifacts.values()) == {GREEN}
    assert state.to_json()["status"] == "SATISFIED"
    assert state.to_json()["unmetObligations"] == []


def test_a_red_input_blocks_consumers_transitively() -> None:
    ws = chain()
    state = graph(ws, doc__signoff=Evidence.RED, doc__spell=Evidence.GREEN)
    app, top = state.gates["app/check"], state.gates["top/look"]
    assert app.readiness is top.readiness is Readiness.BLOCKED
    assert app.blocked_by == ["doc", "doc/signoff"]
    assert app.reason() == "Blocked by doc (doc/signoff RED)."
    assert top.blocked_by == ["app", "app/check"]
    assert state.artifacts == {"app": BLOCKED, "doc": RED, "top": BLOCKED}


@pytest.mark.parametrize("evidence", [Evidence.ERROR, Evidence.WAITING, Evidence.NONE])
def test_operational_waiting_or_missing_evidence_makes_consumers_wait(
    evidence: Evidence,
) -> None:
    state = graph(chain(), doc__signoff=evidence, doc__spell=Evidence.GREEN)
    assert state.gates["app/check"].readiness is Readiness.WAIT


def test_a_blocking_input_wins_over_a_waiting_one() -> None:
    ws = workspace(
        a=declare("a", "x"),
        b=declare("b", "y"),
        c=declare("c", "z", uses=("a", "b")),
    )
    state = graph(ws, a__x=Evidence.WAITING, b__y=Evidence.RED)
    gate = state.gates["c/z"]
    assert gate.readiness is Readiness.BLOCKED and gate.blocked_by == ["b", "b/y"]


def test_cycle_peers_never_gate_one_another() -> None:
    ws = workspace(
        a=declare("a", "x", uses=("b",)),
        b=declare("b", "y", uses=("a",)),
        c=declare("c", "z", uses=("a",)),
    )
    state = graph(ws, a__x=Evidence.RED)
    assert state.gates["a/x"].readiness is Readiness.READY
    assert state.gates["b/y"].readiness is Readiness.READY
    assert state.evals["b/y"] == UNREVIEWED
    assert state.gates["c/z"].readiness is Readiness.BLOCKED  # the whole component gates c
    assert state.gates["c/z"].blocked_by == ["a", "a/x"]  # what blocks, not all that waits


def test_an_input_without_evals_is_fulfilled_only_as_basis() -> None:
    ws = workspace(
        guide=declare("guide", basis=True),
        notes=declare("notes"),
        post=declare("post", "read", uses=("guide",)),
        draft=declare("draft", "read", uses=("notes",)),
    )
    state = graph(ws)
    assert state.gates["post/read"].readiness is Readiness.READY
    waiting = state.gates["draft/read"]
    assert waiting.readiness is Readiness.WAIT
    assert waiting.reason() == "Waiting for notes (no evals and not `basis`)."
    assert waiting.blocked_by == ["notes"]
    assert state.artifacts["guide"] == BASIS and state.artifacts["notes"] == UNREVIEWED
    assert "guide" not in state.unmet and "notes" in state.unmet


def test_own_evals_green_with_an_unmet_dependency_is_incomplete() -> None:
    ws = workspace(
        low=declare("low", "x"),
        mid=declare("mid", mounts="low", basis=True),
        top=declare("top", "y", uses=("mid",)),
    )
    state = graph(ws, top__y=Evidence.GREEN)
    assert state.gates["top/y"].readiness is Readiness.READY  # mid is basis: a direct gate
    assert state.artifacts == {"low": UNREVIEWED, "mid": INCOMPLETE, "top": INCOMPLETE}
    assert state.unmet == ("low", "mid", "top")  # basis waives its own review only


def test_ignoring_gates_lets_evidence_decide_but_keeps_the_obligations() -> None:
    ws = chain()
    state = graph(ws, ignore_gates=True, doc__signoff=Evidence.RED, app__check=Evidence.GREEN)
    assert all(g.readiness is Readiness.READY for g in state.gates.values())
    assert state.evals["app/check"] == GREEN and state.evals["doc/signoff"] == RED
    assert state.artifacts["app"] == INCOMPLETE and state.artifacts["doc"] == RED
    assert not state.satisfied


def test_an_unsatisfied_artifact_takes_its_worst_eval_state() -> None:
    ws = workspace(doc=declare("doc", "a", "b", "c"))
    assert graph(ws, doc__a=Evidence.RED, doc__b=Evidence.ERROR).artifacts["doc"] == ERROR
    assert graph(ws, doc__a=Evidence.RED, doc__b=Evidence.WAITING).artifacts["doc"] == RED
    assert graph(ws, doc__a=Evidence.WAITING).artifacts["doc"] == WAIT
    assert graph(ws, doc__a=Evidence.WAITING).evals["doc/a"] == WAITING_HUMAN


def test_required_scope_and_its_evals_follow_configuration_order() -> None:
    ws = chain()
    assert required_scope(ws, [ws.find_eval("app/check")]) == ("app", "doc")
    assert required_scope(ws, [ws.find_eval("doc/spell")]) == ("doc",)
    assert required_scope(ws, [ws.find_eval("top/look"), ws.find_eval("doc/spell")]) == (
        "app",
        "doc",
        "top",
    )
    evals = [r.qualified_id for r in scope_evals(ws, ("app", "doc"))]
    assert evals == ["app/check", "doc/signoff", "doc/spell"]


def test_a_partial_scope_sees_only_its_own_artifacts() -> None:
    ws = chain()
    state = evaluate(ws, ("doc",), {"doc/signoff": Evidence.GREEN, "doc/spell": Evidence.GREEN})
    assert state.artifacts == {"doc": GREEN} and state.satisfied
    assert set(state.gates) == {"doc/signoff", "doc/spell"}


@pytest.mark.parametrize(
    ("status", "evidence"),
    [
        ("GREEN", Evidence.GREEN),
        ("RED", Evidence.RED),
        ("ERROR", Evidence.ERROR),
        ("WAITING_HUMAN", Evidence.WAITING),
        ("QUEUED", Evidence.NONE),
        ("UNREVIEWED", Evidence.NONE),
        ("WAIT_DEPENDENCY", Evidence.NONE),
        ("BLOCKED", Evidence.NONE),
    ],
)
def test_request_statuses_as_evidence(status: str, evidence: Evidence) -> None:
    assert evidence_of(status) is evidence


# --- LiveGates: the scheduler's incremental gates ----------------------------------------


def _live_world() -> Workspace:
    """A chain, a cycle (``p`` and ``q`` consume each other), an eval-less basis input and a
    dependency eval on ``doc``: every kind of component ``LiveGates`` settles again."""
    ready = (
        b'\n[evals.ready]\ntitle = "ready"\nprofile = { kind = "dependency", depends_on = ["d"] }\n'
    )
    return workspace(
        doc=declare("doc", "signoff", "spell"),
        lib=declare("lib", basis=True),
        app=declare("app", "check", uses=("doc",), mounts="lib"),
        p=declare("p", "one", uses=("q", "app")),
        q=declare("q", "two", uses=("p",)),
        top=declare("top", "look", uses=("p",)),
        gate=b'name = "gate"\nmounts = { d = "doc" }\n' + ready,
    )


def _cycle_world() -> Workspace:
    """``x`` and ``y`` consume each other (a mount, a reference), and ``x``'s dependency eval
    waits for ``y``: a dependency eval whose target is in its own component."""
    ready = (
        b'\n[evals.ready]\ntitle = "ready"\n'
        b'profile = { kind = "dependency", depends_on = ["peer"] }\n'
    )
    return workspace(
        x=b'name = "x"\nmounts = { peer = "y" }\n' + ready + declare("x", "own").split(b"\n", 1)[1],
        y=declare("y", "rev", uses=("x",)),
        top=declare("top", "look", uses=("x",)),
    )


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("ignore_gates", [False, True])
@pytest.mark.parametrize("world", [_live_world, _cycle_world])
def test_live_gates_equal_a_fresh_evaluation_after_every_change(
    seed: int, ignore_gates: bool, world: Callable[[], Workspace]
) -> None:
    """Random evidence, one eval at a time: the incremental gates and states always equal
    ``evaluate``'s, and ``update`` names exactly the evals whose gate moved."""
    import random

    from artifactize.domain.reviews.run.gates import LiveGates

    ws = world()
    scope = tuple(ws.artifacts)
    evals = [ref.qualified_id for ref in scope_evals(ws, scope)]
    rng = random.Random(seed)
    known: dict[str, Evidence] = {}
    live = LiveGates(ws, scope, known, ignore_gates=ignore_gates)
    for _ in range(30):
        eval_id = rng.choice(evals)
        known[eval_id] = rng.choice(list(Evidence))
        before = dict(live.gates)
        moved = live.update({eval_id: known[eval_id]})
        fresh = evaluate(ws, scope, known, ignore_gates=ignore_gates)
        assert live.gates == fresh.gates
        assert live.states == fresh.evals
        assert moved == {e for e in evals if before[e] != fresh.gates[e]}


def test_live_gates_settle_only_what_a_result_reaches(monkeypatch: pytest.MonkeyPatch) -> None:
    """A result settles no component of its own (only its eval's state moves), and of the
    components it feeds only those whose inputs' states moved."""
    from typing import Any

    from artifactize.domain.reviews.run import gates as gates_module
    from artifactize.domain.reviews.run.gates import LiveGates

    ws = _live_world()
    live = LiveGates(ws, tuple(ws.artifacts), {})
    calls: list[int] = []
    original = gates_module._settle_component

    def counting(*args: Any) -> None:
        calls.append(1)
        original(*args)

    monkeypatch.setattr(gates_module, "_settle_component", counting)
    assert live.update({"top/look": Evidence.GREEN}) == set()
    assert calls == []  # nothing consumes ``top``
    # doc's state moves: its consumers app and gate settle again; app stays WAIT (doc/
    # signoff is not GREEN yet), so p, q and top, which consume app, are not looked at
    live.update({"doc/spell": Evidence.GREEN})
    assert len(calls) == 2


def _eval_visits(evals: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many eval states ``LiveGates`` computes to take one result of each of one
    Artifact's ``evals`` evals, from the start of the Run."""
    from typing import Any

    from artifactize.domain.reviews.run import gates as gates_module
    from artifactize.domain.reviews.run.gates import LiveGates

    ws = workspace(big=declare("big", *(f"e{n}" for n in range(evals))))
    visits: list[int] = []
    original = gates_module._state

    def counting(*args: Any) -> str:
        visits.append(1)
        return original(*args)

    monkeypatch.setattr(gates_module, "_state", counting)
    live = LiveGates(ws, ("big",), {})
    for n in range(evals):
        live.update({f"big/e{n}": Evidence.WAITING})  # RUNNING
        live.update({f"big/e{n}": Evidence.GREEN})
    assert set(live.states.values()) == {GREEN}
    return len(visits)


def test_live_gates_visits_grow_linearly_with_an_artifacts_evals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ten times the evals in one Artifact, ten times the states computed (it was a hundred
    times: every result settled the Artifact's whole component again)."""
    small = _eval_visits(20, monkeypatch)
    large = _eval_visits(200, monkeypatch)
    assert small == 20 + 2 * 20  # the first settlement, then one per result
    assert large == 10 * small
