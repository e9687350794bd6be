"""Dependency gates and final obligations over a Run's required scope (pure).

Relations point from a consumer Artifact to an input; strongly connected components are
reviewed as one unit, inputs first (``domain.graph.components``). Two rules follow
(reference/declarations.md §2.4, §4.1):

- **Gate.** Every eval of a consumer component waits until *all* evals of its *direct*
  input components are GREEN. Cycle peers never gate one another. An input Artifact without
  evals is fulfilled only when it is ``basis = true``; otherwise nobody could ever fulfil it,
  and its consumers wait (it is an unmet obligation too). Readiness is BLOCKED when an input
  eval is RED or BLOCKED, WAIT when one is anything else but GREEN, READY otherwise.
- **Obligation.** Every Artifact of the required scope (the selected evals' targets and
  everything they consume, transitively) needs all of its own evals GREEN, or ``basis``.

- **Dependency evals.** A ``kind = "dependency"`` eval's gate looks only at its
  ``depends_on`` targets, and is never bypassed: READY once every eval of every target is
  GREEN (a target without evals always counts), BLOCKED on a RED or BLOCKED one, WAIT
  otherwise. Its state *is* that derived verdict: GREEN, BLOCKED or WAIT_DEPENDENCY.

An eval's state follows from its readiness and its evidence: BLOCKED ⇒ BLOCKED, WAIT ⇒
WAIT_DEPENDENCY, READY ⇒ the evidence (GREEN, RED, ERROR, WAITING_HUMAN, UNREVIEWED).
``ignore_gates`` makes every eval READY, so the evidence alone decides: gate bypass lets
evals run early but never waives an obligation.

``evaluate`` recomputes everything from scratch (the Run's end, ``status``); while a Run is
scheduled, ``LiveGates`` keeps the same gates current result by result, settling again
only the components a result reaches.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from artifactize.domain.declarations.model import DependencyProfile
from artifactize.domain.project.graph import closure, components
from artifactize.domain.project.workspace import EvalRef, Workspace
from artifactize.ports.documents import ValidationDocument
from artifactize.ports.statuses import RequestStatus, ValidationStatus


class Evidence(enum.Enum):
    """What is known about an eval's verdict right now."""

    GREEN = RequestStatus.GREEN.value
    RED = RequestStatus.RED.value
    ERROR = (
        RequestStatus.ERROR.value
    )  # an operational failure: never a verdict, makes dependents wait
    WAITING = "WAITING"  # someone is producing it (a Human review that waits for a person)
    NONE = "NONE"  # nothing usable: not run yet, not run here, or not reusable
    STALE = "STALE"  # nothing current, and this Run may not produce it (--reuse-only)


class Readiness(enum.Enum):
    READY = "READY"
    WAIT = "WAIT"
    BLOCKED = "BLOCKED"


# Eval states (the ``status`` vocabulary of reference/declarations.md §4.1): the request
# statuses an eval's gate and evidence lead to.
GREEN = RequestStatus.GREEN
RED = RequestStatus.RED
ERROR = RequestStatus.ERROR
BLOCKED = RequestStatus.BLOCKED
WAIT_DEPENDENCY = RequestStatus.WAIT_DEPENDENCY
WAITING_HUMAN = RequestStatus.WAITING_HUMAN
UNREVIEWED = RequestStatus.UNREVIEWED
STATE_OF_EVIDENCE = {
    Evidence.GREEN: GREEN,
    Evidence.RED: RED,
    Evidence.ERROR: ERROR,
    Evidence.WAITING: WAITING_HUMAN,
    Evidence.NONE: UNREVIEWED,
    Evidence.STALE: RequestStatus.STALE,
}
# An input eval in one of these states blocks its consumers; any other non-GREEN one makes
# them wait.
BLOCKING_STATES = frozenset({RED, BLOCKED})

# Artifact validation statuses, and the order an unsatisfied Artifact takes the first of.
BASIS = "BASIS"
INCOMPLETE = "INCOMPLETE"
WAIT = "WAIT"
STALE = "STALE"
ARTIFACT_STATUS_OF_EVAL_STATE = {
    ERROR: ERROR,
    RED: RED,
    BLOCKED: BLOCKED,
    WAIT_DEPENDENCY: WAIT,
    WAITING_HUMAN: WAIT,
    STALE: STALE,
    UNREVIEWED: UNREVIEWED,
}
UNSATISFIED_ORDER = (ERROR, RED, BLOCKED, WAIT, STALE, UNREVIEWED)
SATISFIED_STATUSES = frozenset({GREEN, BASIS})
SATISFIED = ValidationStatus.SATISFIED
NOT_SATISFIED = ValidationStatus.NOT_SATISFIED
NO_EVALS = "no evals and not `basis`"

# A request status, as evidence for the graph.
EVIDENCE_OF_STATUS: Mapping[str, Evidence] = {
    RequestStatus.GREEN: Evidence.GREEN,
    RequestStatus.RED: Evidence.RED,
    RequestStatus.ERROR: Evidence.ERROR,
    RequestStatus.WAITING_HUMAN: Evidence.WAITING,
    RequestStatus.RUNNING: Evidence.WAITING,
    RequestStatus.STALE: Evidence.STALE,
}


def evidence_of(status: str) -> Evidence:
    """The evidence a saved request status gives; a status without a verdict gives none."""
    return EVIDENCE_OF_STATUS.get(status, Evidence.NONE)


@dataclass(frozen=True)
class Unfulfilled:
    """An input Artifact that is not fulfilled, with its non-GREEN evals and their states."""

    artifact: str
    evals: tuple[tuple[str, str], ...]  # (qualified eval ID, state); empty: an eval-less input

    def describe(self) -> str:
        if not self.evals:
            return f"{self.artifact} ({NO_EVALS})"
        states = ", ".join(f"{eval_id} {state}" for eval_id, state in self.evals)
        return f"{self.artifact} ({states})"


@dataclass(frozen=True)
class Gate:
    """An eval's readiness and the input Artifacts it waits for or is blocked by."""

    readiness: Readiness
    unfulfilled: tuple[Unfulfilled, ...] = ()

    @property
    def blocked_by(self) -> list[str]:
        """The flat ``blockedBy`` list: each unfulfilled Artifact, then its non-GREEN evals."""
        flat: list[str] = []
        for item in self.unfulfilled:
            flat.append(item.artifact)
            flat.extend(eval_id for eval_id, _ in item.evals)
        return flat

    def reason(self) -> str | None:
        """A ``blockedReason`` for a request parked behind this gate; None when READY."""
        if self.readiness is Readiness.READY:
            return None
        what = "; ".join(item.describe() for item in self.unfulfilled)
        verb = "Blocked by" if self.readiness is Readiness.BLOCKED else "Waiting for"
        return f"{verb} {what}."


READY_GATE = Gate(Readiness.READY)


@dataclass(frozen=True)
class GraphState:
    """The gates, eval states and Artifact validation of one scope under some evidence."""

    scope: tuple[str, ...]  # Artifact names, configuration order
    gates: Mapping[str, Gate]  # qualified eval ID -> gate
    evals: Mapping[str, str]  # qualified eval ID -> state
    artifacts: Mapping[str, str]  # Artifact name -> validation status
    unmet: tuple[str, ...] = field(default=())  # Artifacts whose obligation is unmet

    @property
    def satisfied(self) -> bool:
        return not self.unmet

    def to_json(self) -> ValidationDocument:
        """The Run's ``validation`` (camelCase JSON)."""
        return {
            "status": SATISFIED if self.satisfied else NOT_SATISFIED,
            "scope": list(self.scope),
            "artifacts": dict(self.artifacts),
            "evals": dict(self.evals),
            "unmetObligations": list(self.unmet),
        }


def required_scope(workspace: Workspace, refs: Iterable[EvalRef]) -> tuple[str, ...]:
    """Every selected eval's target and all it consumes, transitively, in configuration order."""
    return closure(workspace, {ref.artifact.name: None for ref in refs})


def scope_evals(workspace: Workspace, scope: Sequence[str]) -> list[EvalRef]:
    """Every eval of the scope's Artifacts, in configuration order."""
    return [
        EvalRef(workspace.artifact(name), item)
        for name in scope
        for item in workspace.artifact(name).evals
    ]


@dataclass(frozen=True)
class ScopeShape:
    """The components of a scope (inputs first), each Artifact's component and the input
    components of each: what ``evaluate`` and ``LiveGates`` start from. It depends on the
    workspace and the scope only, so a Run computes it once for its scheduling and its end
    (``scope_shape``), not once for each."""

    workspace: Workspace
    scope: tuple[str, ...]
    comps: list[list[str]]
    component_of: dict[str, int]
    inputs: list[list[int]]


def scope_shape(workspace: Workspace, scope: Sequence[str]) -> ScopeShape:
    comps = components(workspace, scope)
    component_of = {name: index for index, members in enumerate(comps) for name in members}
    inputs = _direct_input_components(workspace, component_of)
    return ScopeShape(workspace, tuple(scope), comps, component_of, inputs)


def _shape_of(workspace: Workspace, scope: Sequence[str], shape: ScopeShape | None) -> ScopeShape:
    """``shape`` when it was computed for this very workspace and scope, else computed now."""
    if shape is not None and shape.workspace is workspace and shape.scope == tuple(scope):
        return shape
    return scope_shape(workspace, scope)


def evaluate(
    workspace: Workspace,
    scope: Sequence[str],
    evidence: Mapping[str, Evidence],
    *,
    ignore_gates: bool = False,
    shape: ScopeShape | None = None,
) -> GraphState:
    """Gates, eval states and validation of ``scope`` (closed under inputs) given
    ``evidence`` per qualified eval ID (absent = ``Evidence.NONE``); ``shape``: the scope's
    ``scope_shape``, when the caller holds it."""
    known = _shape_of(workspace, scope, shape)
    comps, inputs = known.comps, known.inputs
    gates: dict[str, Gate] = {}
    states: dict[str, str] = {}
    for index in range(len(comps)):  # inputs first: their states are known
        _settle_component(workspace, comps, inputs, index, evidence, gates, states, ignore_gates)
    artifacts = _validation(workspace, comps, inputs, states)
    ordered = {name: artifacts[name] for name in scope}
    unmet = tuple(name for name, status in ordered.items() if status not in SATISFIED_STATUSES)
    return GraphState(tuple(scope), gates, states, ordered, unmet)


def _settle_component(
    workspace: Workspace,
    comps: Sequence[Sequence[str]],
    inputs: Sequence[Sequence[int]],
    index: int,
    evidence: Mapping[str, Evidence],
    gates: dict[str, Gate],
    states: dict[str, str],
    ignore_gates: bool,
) -> None:
    """The gates and states of one component's evals, its input components' states known."""
    gate = READY_GATE if ignore_gates else _gate(workspace, comps, inputs[index], states)
    derived: list[str] = []
    for name in comps[index]:
        for item in workspace.artifact(name).evals:
            qualified = f"{name}/{item.id}"
            if isinstance(item.profile, DependencyProfile):
                derived.append(qualified)
                continue
            gates[qualified] = gate
            states[qualified] = _state(gate, evidence.get(qualified, Evidence.NONE))
    for qualified in derived:  # after their component's other evals (cycle peers)
        gates[qualified] = _derived_gate(workspace, qualified, states)
        states[qualified] = _derived_state(gates[qualified])


class LiveGates:
    """The gates of a scope kept current while evidence comes in, for the scheduler.

    Built like ``evaluate`` (once: O(scope)); ``update`` then settles again only the
    component of each eval whose evidence changed and, while their states change, the
    components that consume them (inputs first). A Run of N results so costs O(N) plus
    the consumers each result reaches, not O(N) per result (``evaluate`` after each).
    The gates it holds always equal ``evaluate``'s under the same evidence.
    """

    def __init__(
        self,
        workspace: Workspace,
        scope: Sequence[str],
        evidence: Mapping[str, Evidence],
        *,
        ignore_gates: bool = False,
        shape: ScopeShape | None = None,
    ) -> None:
        self.workspace = workspace
        self.ignore_gates = ignore_gates
        known = _shape_of(workspace, scope, shape)
        self.comps, component_of, self.inputs = known.comps, known.component_of, known.inputs
        consumers: list[set[int]] = [set() for _ in self.comps]
        for index, sources in enumerate(self.inputs):
            for source in sources:
                consumers[source].add(index)
        self.component_of_eval: dict[str, int] = {}
        for index, members in enumerate(self.comps):
            for name in members:
                for item in workspace.artifact(name).evals:
                    self.component_of_eval[f"{name}/{item.id}"] = index
                    # a dependency eval reads its targets' states, whatever the relations
                    for target in workspace.eval_inputs.get(f"{name}/{item.id}", ()):
                        target_index = component_of.get(target)
                        if (
                            target_index is not None
                            and target_index != index
                            and isinstance(item.profile, DependencyProfile)
                        ):
                            consumers[target_index].add(index)
        self.consumers = [sorted(items) for items in consumers]
        # per component, its evals' qualified IDs, and those of its dependency evals (their
        # state is derived from their targets' states, never from their own evidence)
        self.members: list[list[str]] = [[] for _ in self.comps]
        self.derived: list[list[str]] = [[] for _ in self.comps]
        for index, names in enumerate(self.comps):
            for name in names:
                for item in workspace.artifact(name).evals:
                    qualified = f"{name}/{item.id}"
                    self.members[index].append(qualified)
                    if isinstance(item.profile, DependencyProfile):
                        self.derived[index].append(qualified)
        self.derived_ids = {qualified for items in self.derived for qualified in items}
        self.evidence: dict[str, Evidence] = dict(evidence)
        self.gates: dict[str, Gate] = {}
        self.states: dict[str, str] = {}
        for index in range(len(self.comps)):
            self._settle(index)

    def _settle(self, index: int) -> None:
        _settle_component(
            self.workspace,
            self.comps,
            self.inputs,
            index,
            self.evidence,
            self.gates,
            self.states,
            self.ignore_gates,
        )

    def update(self, evidence: Mapping[str, Evidence]) -> set[str]:
        """Take new evidence of some evals; the qualified IDs whose gate changed.

        A result moves its own eval's state only (its component's gate reads the input
        components, never the component itself), so only that eval is looked at, then its
        component's dependency evals, if any; the components that consume a component whose
        states moved settle again whole (their gate reads every eval of their inputs)."""
        moved: set[int] = set()  # components whose states changed
        changed: set[str] = set()
        for eval_id, found in evidence.items():
            index = self.component_of_eval.get(eval_id)
            if index is None or self.evidence.get(eval_id, Evidence.NONE) == found:
                continue
            self.evidence[eval_id] = found
            if eval_id in self.derived_ids:
                continue  # its state is its targets' verdict, not its evidence
            state = _state(self.gates[eval_id], found)
            if state != self.states[eval_id]:
                self.states[eval_id] = state
                moved.add(index)
        dirty: list[int] = []
        for index in moved:
            for qualified in self.derived[index]:  # in order, as ``_settle_component``
                gate = _derived_gate(self.workspace, qualified, self.states)
                if gate != self.gates[qualified]:
                    changed.add(qualified)
                self.gates[qualified] = gate
                self.states[qualified] = _derived_state(gate)
            for consumer in self.consumers[index]:
                heapq.heappush(dirty, consumer)
        done = -1
        while dirty:
            index = heapq.heappop(dirty)
            if index == done:
                continue
            done = index
            members = self.members[index]
            before = [(self.gates[e], self.states[e]) for e in members]
            self._settle(index)
            states_changed = False
            for eval_id, (gate, state) in zip(members, before, strict=True):
                if self.gates[eval_id] != gate:
                    changed.add(eval_id)
                states_changed = states_changed or self.states[eval_id] != state
            if states_changed:
                for consumer in self.consumers[index]:
                    heapq.heappush(dirty, consumer)
        return changed


def _direct_input_components(
    workspace: Workspace, component_of: Mapping[str, int]
) -> list[list[int]]:
    """Per component, the other components its members consume directly (sorted)."""
    found: list[set[int]] = [set() for _ in range(max(component_of.values(), default=-1) + 1)]
    for relation in workspace.relations:
        consumer = component_of.get(relation.consumer)
        source = component_of.get(relation.input)
        if consumer is not None and source is not None and consumer != source:
            found[consumer].add(source)
    return [sorted(items) for items in found]


def _gate(
    workspace: Workspace,
    comps: Sequence[Sequence[str]],
    input_components: Sequence[int],
    states: Mapping[str, str],
) -> Gate:
    unfulfilled: list[Unfulfilled] = []
    blocking: list[Unfulfilled] = []
    for index in input_components:
        for name in comps[index]:
            artifact = workspace.artifact(name)
            if not artifact.evals:
                if not artifact.declaration.basis:
                    unfulfilled.append(Unfulfilled(name, ()))
                continue
            pending = tuple(
                (f"{name}/{e.id}", states[f"{name}/{e.id}"])
                for e in artifact.evals
                if states[f"{name}/{e.id}"] != GREEN
            )
            if not pending:
                continue
            item = Unfulfilled(name, pending)
            unfulfilled.append(item)
            if any(state in BLOCKING_STATES for _, state in pending):
                blocking.append(item)
    if blocking:
        return Gate(Readiness.BLOCKED, tuple(blocking))
    if unfulfilled:
        return Gate(Readiness.WAIT, tuple(unfulfilled))
    return READY_GATE


def _derived_gate(workspace: Workspace, qualified: str, states: Mapping[str, str]) -> Gate:
    """A dependency eval's gate, from its ``depends_on`` targets only and never bypassed:
    a target is fulfilled when every one of its evals is GREEN (one without evals, basis
    or not, always is); any RED or BLOCKED eval blocks it; anything else makes it wait."""
    unfulfilled: list[Unfulfilled] = []
    blocking = False
    for target in workspace.eval_inputs.get(qualified, ()):
        pending = tuple(
            (f"{target}/{e.id}", states.get(f"{target}/{e.id}", UNREVIEWED))
            for e in workspace.artifact(target).evals
            if states.get(f"{target}/{e.id}") != GREEN
        )
        if pending:
            unfulfilled.append(Unfulfilled(target, pending))
            blocking = blocking or any(state in BLOCKING_STATES for _, state in pending)
    if not unfulfilled:
        return READY_GATE
    return Gate(Readiness.BLOCKED if blocking else Readiness.WAIT, tuple(unfulfilled))


def _derived_state(gate: Gate) -> str:
    """A dependency eval's state is its verdict: GREEN once its gate opens."""
    if gate.readiness is Readiness.READY:
        return GREEN
    return BLOCKED if gate.readiness is Readiness.BLOCKED else WAIT_DEPENDENCY


def _state(gate: Gate, evidence: Evidence) -> str:
    if gate.readiness is Readiness.BLOCKED:
        return BLOCKED
    if gate.readiness is Readiness.WAIT:
        return WAIT_DEPENDENCY
    return STATE_OF_EVIDENCE[evidence]


def _validation(
    workspace: Workspace,
    comps: Sequence[Sequence[str]],
    inputs: Sequence[Sequence[int]],
    states: Mapping[str, str],
) -> dict[str, str]:
    """Per Artifact: BASIS or GREEN when it and everything it consumes is fulfilled,
    INCOMPLETE when only something it consumes is not, else its worst own eval state."""
    own: dict[str, str | None] = {}  # None: its own obligation is met
    for name in (n for members in comps for n in members):
        artifact = workspace.artifact(name)
        if not artifact.evals:
            own[name] = None if artifact.declaration.basis else UNREVIEWED
            continue
        present = {
            ARTIFACT_STATUS_OF_EVAL_STATE[states[f"{name}/{e.id}"]]
            for e in artifact.evals
            if states[f"{name}/{e.id}"] != GREEN
        }
        own[name] = next((s for s in UNSATISFIED_ORDER if s in present), None)
    fulfilled: list[bool] = []  # per component: it and everything below it meets its obligation
    result: dict[str, str] = {}
    for index, members in enumerate(comps):
        below = all(fulfilled[i] for i in inputs[index])
        fulfilled.append(below and all(own[name] is None for name in members))
        for name in members:
            status = own[name]
            if status is None:
                met = BASIS if not workspace.artifact(name).evals else GREEN
                status = met if fulfilled[index] else INCOMPLETE
            result[name] = status
    return result
