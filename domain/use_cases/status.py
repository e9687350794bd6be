"""``status``: what ``verify`` would do for a selection, without doing any of it (pure).

For every eval of the selection's required scope it computes the reuse key (fingerprints
only: no eval, tool or process runs, no Run is created) and looks up, read-only, what the
state already knows, then evaluates the graph with the *same* rules ``verify`` settles a Run
with (``gates.evaluate``): an eval's state comes from its gate first, its evidence second.

- **Evidence.** The newest GREEN/RED record of the current key (``latest_record`` with
  ``touch=False``: looking never extends a record's life), else a Human execution of the key
  that waits for a person (``WAITING_HUMAN``), else nothing. A fingerprint failure is ERROR.
- **STALE.** An eval without current evidence whose eval ID has an older GREEN/RED record
  (under another key) is STALE instead of UNREVIEWED: it was reviewed, and something changed.
- **Action.** What ``verify`` with the same flags would do: ``reuse`` a record (attached
  before gates resolve, so even behind a closed gate), ``execute`` a READY eval without one
  (for a Human eval: ask a person), ``wait`` for an input, a person, or a selection (an eval
  only in the scope is looked up, never run, without ``--recursive``), ``blocked`` behind a
  RED input. ``derive``: a dependency eval, whose state follows from its targets' evals
  (PASS once all are GREEN); it never executes and has no key.

``selected`` is whether the selector named the eval; ``included`` whether ``verify`` would
create a request for it (selected, or in the scope with ``--recursive``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from artifactize.domain.declarations.model import HumanProfile, RuntimeProfile
from artifactize.domain.project.workspace import EvalRef, Workspace, content_digest
from artifactize.domain.reviews.human.asking import FOLLOWING_HUMAN
from artifactize.domain.reviews.reuse.artifactsum import GitignoreMemo, OpenFolders
from artifactize.domain.reviews.reuse.errors import FingerprintError
from artifactize.domain.reviews.reuse.fingerprints import ComputedFingerprint, FingerprintScripts
from artifactize.domain.reviews.reuse.keys import DERIVED_NO_KEY, KeyInputs, key_inputs
from artifactize.domain.reviews.run import gates
from artifactize.domain.reviews.run.context import IGNORE_GATES
from artifactize.domain.reviews.run.derived import pulled_in
from artifactize.domain.reviews.run.fingerprint_jobs import compute_scripts_apart
from artifactize.domain.reviews.run.gates import Evidence, GraphState, Readiness
from artifactize.domain.reviews.run.policy import DEFAULT_POLICY, RunPolicy
from artifactize.domain.reviews.run.reuse import NOT_SELECTED, NOT_SELECTED_UNKEYED
from artifactize.domain.reviews.run.reuse_only import miss_reason
from artifactize.ports.collector import CollectorPause
from artifactize.ports.documents import (
    EvalStatusDocument,
    KeyChanges,
    LastVerdict,
    ProgramDocument,
    StatusDocument,
)
from artifactize.ports.file_index import FileIndex
from artifactize.ports.filesystem import Filesystem
from artifactize.ports.state import ExecutionRecord, RequestRecord, StateStore
from artifactize.ports.statuses import VERDICT_STATUSES
from artifactize.ports.threads import WorkerThreads

if TYPE_CHECKING:
    from artifactize.domain.project.program_checks import ProgramChecks

# ``status`` eval states (reference/declarations.md §4.1): a GREEN verdict reads PASS.
PASS = "PASS"
STALE = "STALE"
EVAL_STATE_OF_GRAPH_STATE: Mapping[str, str] = {gates.GREEN: PASS}
ARTIFACT_STATE_OF_VALIDATION: Mapping[str, str] = {
    gates.GREEN: PASS,
    gates.WAIT: gates.WAIT_DEPENDENCY,
}

# Actions, in the order the summary line counts them.
EXECUTE = "execute"
REUSE = "reuse"
WAIT = "wait"
BLOCKED = "blocked"
ACTIONS = (EXECUTE, REUSE, WAIT, BLOCKED)
STALE_ACTION = "stale"  # --reuse-only: nothing to reuse, and this kind may not run
DERIVE = "derive"  # a dependency eval: its verdict follows from its targets' evals
# Counted only when some eval takes them, so the summary of a plain status stays as it was.
EXTRA_ACTIONS = (DERIVE, STALE_ACTION)

REUSE_REASON = "Reuses the {verdict} verdict of Run {run_id} (same key)."
EXECUTE_REASON = "No reusable verdict of the current key."
DERIVED_PASS = "Derived: every eval of its depends_on targets is GREEN."
EXECUTE_UNKEYED = "It has no reuse key: {reason}"
EXECUTE_FORCED = "--force: reviewed again, nothing reused."
ASK_HUMAN = "A person will be asked (artifactize request list)."
ASK_HUMAN_FORCED = "--force: a person will be asked again (artifactize request list)."
FINGERPRINT_FAILED = "Fingerprint failed: {error}"

# Bump when what ``Status.answer_inputs`` digests changes shape.
ANSWER_INPUTS_FORMAT = 1


@dataclass(frozen=True)
class StatusPorts:
    """Read-only: a missing state (``None``) means nothing was ever reviewed here."""

    filesystem: Filesystem
    state: StateStore | None
    scripts: FingerprintScripts | None = None  # owner fingerprint scripts, when configured
    threads: WorkerThreads = field(kw_only=True)  # fingerprints, --fingerprint-jobs at a time
    # Resolves each runtime eval's program, to show what it would run; None: not shown.
    programs: ProgramChecks | None = None
    # Digests of unchanged files (ports.file_index), saved once the keys are computed.
    index: FileIndex | None = None
    # Paused for the report: it allocates a few objects per file and eval, all alive until
    # it returns, and makes no cycles; the collector would traverse the loaded workspace
    # again and again (a sixth of a status at 10,000 Artifacts). None: it runs as usual.
    pause_collector: CollectorPause | None = None


@dataclass(frozen=True)
class StatusOptions:
    recursive: bool = False
    ignore_gates: bool = False
    force: bool = False
    policy: RunPolicy = DEFAULT_POLICY  # --reuse-only: show what a reuse-only run would do


@dataclass(frozen=True)
class StatusReport:
    """``evals``: each eval's status as the typed document ``status --json`` prints, built
    once as plain data (not an object per eval that is then converted: a tenth of a
    second at 10,000 Artifacts); treat them as read-only."""

    selection: tuple[str, ...]
    scope: tuple[str, ...]
    evals: tuple[EvalStatusDocument, ...]  # selection order, then the scope's others
    artifacts: Mapping[str, str]  # Artifact name -> ``status`` Artifact state
    unmet: tuple[str, ...]
    fingerprint_failures: tuple[str, ...] = field(default=())  # qualified eval IDs
    # Eval ID -> the input Artifacts its gate waits for (only the evals that wait).
    waits_for: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def satisfied(self) -> bool:
        return not self.unmet

    def action_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(ACTIONS, 0)
        for item in self.evals:
            action = item["action"]
            counts[action] = counts.get(action, 0) + 1
        return counts

    def to_json(self) -> StatusDocument:
        return {
            "satisfied": self.satisfied,
            "selection": list(self.selection),
            "scope": list(self.scope),
            "evals": list(self.evals),
            "artifacts": dict(self.artifacts),
            "unmetObligations": list(self.unmet),
            "actions": self.action_counts(),
            "fingerprintFailures": list(self.fingerprint_failures),
        }


@dataclass(frozen=True)
class StatusKeys:
    """What ``Status.keys`` computed: the selection (``refs``), the other evals of its
    required scope, and every eval's key or the failure that stopped it."""

    refs: tuple[EvalRef, ...]
    selected: tuple[str, ...]  # qualified eval IDs, in selection order
    others: tuple[str, ...]  # the scope's other evals
    scope: tuple[str, ...]  # Artifact names
    keys: Mapping[str, KeyInputs | FingerprintError]

    @property
    def ids(self) -> list[str]:
        return [*self.selected, *self.others]


@dataclass
class _Lookup:
    """What the state knows about one eval: current record, waiting Human request, history."""

    keys: KeyInputs | None
    error: str | None = None
    record: ExecutionRecord | None = None
    waiting: RequestRecord | None = None
    last: ExecutionRecord | None = None  # newest GREEN/RED record of the eval ID, any key
    previous: ExecutionRecord | None = None  # newest one with the same evalDefHash

    def evidence(self) -> Evidence:
        if self.error is not None:
            return Evidence.ERROR
        if self.record is not None:
            return gates.evidence_of(self.record.status)
        return Evidence.WAITING if self.waiting is not None else Evidence.NONE


class Status:
    """One read-only projection of ``verify`` over a selection."""

    def __init__(self, ports: StatusPorts, workspace: Workspace, options: StatusOptions) -> None:
        self.ports = ports
        self.workspace = workspace
        self.options = options
        self._history: dict[str, list[ExecutionRecord]] | None = None
        self._latest: dict[str, ExecutionRecord] | None = None  # key -> newest record
        self._waiting: dict[str, RequestRecord] | None = None
        self._unrecorded: set[str] = set()  # evals whose history _records reads
        # Each Artifact's fingerprint, computed once for all the evals that cover it.
        self._fingerprints: dict[str, ComputedFingerprint] = {}
        self._gitignores: GitignoreMemo = {}  # each folder's .gitignore read once for all
        self._folders: OpenFolders | None = None  # the shared ancestors, while keys are computed
        self._refs: dict[str, EvalRef] = {}  # each eval found once, not once per question
        # Every eval that runs the same program looks it up once (one report's length).
        self._programs = ports.programs.memoized() if ports.programs is not None else None
        self._program_of: dict[str, ProgramDocument | str | None] = {}

    @property
    def ignore_gates(self) -> bool:
        return self.options.ignore_gates or self.workspace.dependency_gates == IGNORE_GATES

    def report(self, refs: Sequence[EvalRef]) -> StatusReport:
        """The status of every eval of ``refs``' required scope (``refs``: the selection)."""
        with self._paused():
            return self._report(self._computed_keys(refs))

    def keys(self, refs: Sequence[EvalRef]) -> StatusKeys:
        """The first half of ``report``: the scope and every eval's key, without the state
        (``answer_inputs`` then tells whether a stored answer still holds)."""
        with self._paused():
            return self._computed_keys(refs)

    def report_of(self, computed: StatusKeys) -> StatusReport:
        """The second half of ``report``: the state read and every eval decided."""
        with self._paused():
            return self._report(computed)

    def attach_state(self, state: StateStore | None) -> None:
        """Read ``state`` from now on (opened once the keys are known: a stored answer that
        holds needs no state opened at all)."""
        self.ports = replace(self.ports, state=state)

    def answer_inputs(self, computed: StatusKeys) -> str:
        """A digest of everything the report of ``computed`` depends on besides the state:
        the workspace's content, the options, the selection and its scope, every eval's key
        (or its failure) and the program each runtime eval would run. Equal digests and an
        unchanged state give the same report (``ports.stored_answers``)."""
        evals: list[object] = []
        for eval_id in computed.ids:
            keys = computed.keys[eval_id]
            if isinstance(keys, FingerprintError):
                evals.append([eval_id, "error", str(keys)])
                continue
            fingerprints = sorted(keys.fingerprints.items())
            evals.append(
                [
                    eval_id,
                    keys.def_hash,
                    keys.dependencies,
                    fingerprints,
                    keys.key,
                    keys.unkeyed_reason,
                ]
            )
            program = self._program(eval_id)
            if program is not None:
                evals.append(program)
        policy = self.options.policy
        options = [
            self.options.recursive,
            self.options.ignore_gates,
            self.options.force,
            sorted(str(kind) for kind in policy.reuse_only),
            policy.profile,
        ]
        document = [
            ANSWER_INPUTS_FORMAT,
            content_digest(self.workspace),
            options,
            list(computed.selected),
            list(computed.scope),
            evals,
        ]
        text = json.dumps(document, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _paused(self) -> AbstractContextManager[object]:
        pause = self.ports.pause_collector
        return nullcontext() if pause is None else pause()

    def _computed_keys(self, refs: Sequence[EvalRef]) -> StatusKeys:
        scope = gates.required_scope(self.workspace, refs)
        selected = [ref.qualified_id for ref in refs]
        chosen = set(selected)
        others = [
            ref.qualified_id
            for ref in gates.scope_evals(self.workspace, scope)
            if ref.qualified_id not in chosen
        ]
        ids = [*selected, *others]
        folders = self._folders = OpenFolders()
        try:
            keys = self._keys(ids)
        finally:
            self._folders = None
            folders.close()
        if self.ports.index is not None:
            self.ports.index.save()
        return StatusKeys(tuple(refs), tuple(selected), tuple(others), scope, keys)

    def _report(self, computed: StatusKeys) -> StatusReport:
        refs, selected, others, scope = (
            computed.refs,
            computed.selected,
            computed.others,
            computed.scope,
        )
        chosen = set(selected)
        ids = computed.ids
        keys = computed.keys
        self._prefetch(keys.values())
        self._unrecorded = {e for e, k in keys.items() if not self._has_current_record(k)}
        lookups = {eval_id: self._lookup(eval_id, keys[eval_id]) for eval_id in ids}
        pulled = {ref.qualified_id for ref in pulled_in(self.workspace, refs)}
        evidence: dict[str, Evidence] = {e: lookup.evidence() for e, lookup in lookups.items()}
        included = chosen | pulled  # once: a union per eval was quadratic (3 s at 10,000)
        recursive = self.options.recursive
        misses = {  # decided once per eval, for its evidence and its status
            eval_id
            for eval_id, lookup in lookups.items()
            if self._reuse_only_miss(eval_id, lookup, included=eval_id in included)
        }
        for eval_id in misses:
            evidence[eval_id] = Evidence.STALE
        graph = gates.evaluate(self.workspace, scope, evidence, ignore_gates=self.ignore_gates)
        evals = tuple(
            self._eval_status(
                eval_id,
                lookups[eval_id],
                graph,
                selected=eval_id in chosen,
                included=eval_id in included or recursive,
                miss=eval_id in misses,
            )
            for eval_id in [*selected, *others]
        )
        states = {item["evalId"]: item["state"] for item in evals}
        failures = tuple(e for e, lookup in lookups.items() if lookup.error is not None)
        waits_for = {
            eval_id: tuple(item.artifact for item in gate.unfulfilled)
            for eval_id, gate in graph.gates.items()
            if gate.unfulfilled and eval_id in lookups
        }
        return StatusReport(
            tuple(selected),
            scope,
            evals,
            _artifact_states(self.workspace, graph, states),
            graph.unmet,
            failures,
            waits_for,
        )

    # --- looking up ---------------------------------------------------------------------

    def _keys(self, ids: Sequence[str]) -> dict[str, KeyInputs | FingerprintError]:
        """Every eval's key: those that need no fingerprint script on this thread, the
        others' scripts ``--fingerprint-jobs`` at once (``compute_scripts_apart``)."""
        return compute_scripts_apart(
            lambda eval_id, here: self._key(eval_id, without_scripts=here),
            ids,
            self.options.policy.fingerprint_jobs or 1,
            self.ports.threads,
        )

    def _key(self, eval_id: str, *, without_scripts: bool = False) -> KeyInputs | FingerprintError:
        """The eval's key, or the failure that stopped it; ``without_scripts``:
        ``NeedsScript`` rather than run a fingerprint script."""
        try:
            return key_inputs(
                self.workspace,
                eval_id,
                self.ports.filesystem,
                self.ports.scripts,
                index=self.ports.index,
                computed=self._fingerprints,
                gitignores=self._gitignores,
                folders=self._folders,
                without_scripts=without_scripts,
            )
        except FingerprintError as exc:
            return exc

    def _prefetch(self, keys: Iterable[KeyInputs | FingerprintError]) -> None:
        """The newest record of every key, in one read (``_lookup`` then asks no more)."""
        if self.ports.state is None:
            return
        wanted = [k.key for k in keys if isinstance(k, KeyInputs) and k.key is not None]
        self._latest = self.ports.state.latest_of_keys(wanted, touch=False)

    def _has_current_record(self, keys: KeyInputs | FingerprintError) -> bool:
        """Whether ``_prefetch`` found a record of the eval's key (else ``_lookup`` reads
        its history); a failed fingerprint reads nothing."""
        if isinstance(keys, FingerprintError):
            return True
        return keys.key is not None and self._latest is not None and keys.key in self._latest

    def _lookup(self, eval_id: str, keys: KeyInputs | FingerprintError) -> _Lookup:
        if isinstance(keys, FingerprintError):
            return _Lookup(None, error=FINGERPRINT_FAILED.format(error=keys))
        found = _Lookup(keys)
        state = self.ports.state
        if state is None:
            return found
        if keys.key is not None:
            found.record = (
                self._latest.get(keys.key)
                if self._latest is not None
                else state.latest_record(keys.key, touch=False)
            )
            if found.record is None:
                found.waiting = self._waiting_requests().get(keys.key)
        if found.record is None:
            history = self._records().get(eval_id, [])
            found.last = history[0] if history else None
            found.previous = next((r for r in history if r.eval_def_hash == keys.def_hash), None)
        return found

    def _records(self) -> dict[str, list[ExecutionRecord]]:
        """Eval ID -> the newest GREEN/RED record of each of its keys, newest first (read
        once per report, grouped once: not a scan of every record per eval)."""
        if self._history is None:
            assert self.ports.state is not None
            self._history = {}
            for record in self.ports.state.latest_records_of(self._unrecorded):
                if record.status in VERDICT_STATUSES:
                    self._history.setdefault(str(record.data.eval_id), []).append(record)
        return self._history

    def _waiting_requests(self) -> dict[str, RequestRecord]:
        """Key -> a saved request that waits for a person on it (read once per report)."""
        if self._waiting is None:
            assert self.ports.state is not None
            self._waiting = {}
            for request in self.ports.state.all_requests(gates.WAITING_HUMAN):
                key = request.data.key
                if request.status == gates.WAITING_HUMAN and isinstance(key, str):
                    self._waiting.setdefault(key, request)
        return self._waiting

    # --- deciding -----------------------------------------------------------------------

    def _ref(self, eval_id: str) -> EvalRef:
        found = self._refs.get(eval_id)
        if found is None:
            found = self._refs[eval_id] = self.workspace.find_eval(eval_id)
        return found

    def _reuse_only_miss(self, eval_id: str, lookup: _Lookup, *, included: bool) -> bool:
        """An eval ``verify --reuse-only`` would settle STALE: a request of a reuse-only
        kind, nothing to reuse, and no fingerprint failure."""
        included = included or self.options.recursive
        kind = self._ref(eval_id).eval.profile.kind
        return (
            included
            and self.options.policy.reuses_only(kind)
            and lookup.error is None
            and lookup.record is None
        )

    def _eval_status(
        self,
        eval_id: str,
        lookup: _Lookup,
        graph: GraphState,
        *,
        selected: bool,
        included: bool,
        miss: bool,
    ) -> EvalStatusDocument:
        """The eval's status as ``status --json`` prints it. ``miss``: ``_reuse_only_miss``
        of the eval (``verify --reuse-only`` settles it STALE)."""
        item = self._ref(eval_id).eval
        human = isinstance(item.profile, HumanProfile)
        state = graph.evals[eval_id]
        if state == gates.UNREVIEWED and lookup.last is not None:
            state = STALE
        action, reason = self._action(lookup, graph.gates[eval_id], human, included)
        if miss:
            assert lookup.keys is not None
            state, action = STALE, STALE_ACTION
            reason = miss_reason(item.profile.kind, eval_id, lookup.keys.unkeyed_reason)
        keys = lookup.keys
        document: EvalStatusDocument = {
            "evalId": eval_id,
            "kind": item.profile.kind,
            "state": EVAL_STATE_OF_GRAPH_STATE.get(state, state),
            "action": action,
            "reason": reason,
            "selected": selected,
            "included": included,
            "evalDefHash": keys.def_hash if keys else None,
            "fingerprint": keys.fingerprints.get(eval_id.split("/", 1)[0]) if keys else None,
            "fingerprints": dict(keys.fingerprints) if keys else {},
            "key": keys.key if keys else None,
            "last": _last(lookup.last, eval_id),
            "changes": _changes(eval_id, keys, lookup.previous),
        }
        program = self._program(eval_id)
        if isinstance(program, str):
            document["programError"] = program
        elif program is not None:
            document["program"] = program
        return document

    def _program(self, eval_id: str) -> ProgramDocument | str | None:
        """What a runtime eval would run (or why it cannot), resolved as ``verify`` would;
        once per eval (``answer_inputs`` digests it before the report shows it)."""
        if eval_id in self._program_of:
            return self._program_of[eval_id]
        ref = self._ref(eval_id)
        found = None
        if self._programs is not None and isinstance(ref.eval.profile, RuntimeProfile):
            found = self._programs.runtime_program(self.workspace, ref)
        self._program_of[eval_id] = found
        return found

    def _action(
        self, lookup: _Lookup, gate: gates.Gate, human: bool, included: bool
    ) -> tuple[str, str | None]:
        """What ``verify`` would do with this eval, and why, in ``verify``'s order: a
        fingerprint failure stops it, a record is attached before any gate, then the gate."""
        if lookup.error is not None:
            return BLOCKED, lookup.error
        if lookup.keys is not None and lookup.keys.unkeyed_reason == DERIVED_NO_KEY:
            if gate.readiness is Readiness.READY:
                return DERIVE, DERIVED_PASS
            return DERIVE, gate.reason()
        keys = lookup.keys
        assert keys is not None
        forced = self.options.force and included
        if lookup.record is not None and not forced:
            verdict = lookup.record.status
            run_id = _run_of(lookup.record)
            return REUSE, REUSE_REASON.format(verdict=verdict, run_id=run_id)
        if not included:
            if lookup.waiting is not None:
                return WAIT, f"{FOLLOWING_HUMAN} ({lookup.waiting.id})"
            if keys.key is None:
                return WAIT, NOT_SELECTED_UNKEYED.format(reason=keys.unkeyed_reason)
            return WAIT, NOT_SELECTED
        if gate.readiness is Readiness.BLOCKED:
            return BLOCKED, gate.reason()
        if gate.readiness is Readiness.WAIT:
            return WAIT, gate.reason()
        if lookup.waiting is not None and not forced:
            return WAIT, f"{FOLLOWING_HUMAN} ({lookup.waiting.id})"
        if human:
            return EXECUTE, ASK_HUMAN_FORCED if forced else ASK_HUMAN
        if forced:
            return EXECUTE, EXECUTE_FORCED
        if keys.key is None:
            return EXECUTE, EXECUTE_UNKEYED.format(reason=keys.unkeyed_reason)
        return EXECUTE, EXECUTE_REASON


def _artifact_states(
    workspace: Workspace, graph: GraphState, states: Mapping[str, str]
) -> dict[str, str]:
    """The graph's validation in the ``status`` vocabulary; an Artifact whose worst own
    eval is STALE (not merely UNREVIEWED) reads STALE."""
    result: dict[str, str] = {}
    for name, status in graph.artifacts.items():
        own = [states[f"{name}/{e.id}"] for e in workspace.artifact(name).evals]
        if status == gates.UNREVIEWED and STALE in own:
            status = STALE
        result[name] = ARTIFACT_STATE_OF_VALIDATION.get(status, status)
    return result


def _run_of(record: ExecutionRecord) -> str | None:
    """The Run that produced a record's result (None: it records no provenance)."""
    provenance = record.data.provenance
    return None if provenance is None else provenance.get("runId")


def _last(record: ExecutionRecord | None, eval_id: str) -> LastVerdict | None:
    """The newest historical verdict of the eval: ``{runId, verdict, fingerprint?}``."""
    if record is None:
        return None
    last: LastVerdict = {
        "runId": _run_of(record),
        "verdict": record.status,
    }
    fingerprint = (record.data.fingerprints or {}).get(eval_id.split("/", 1)[0])
    if fingerprint is not None:
        last["fingerprint"] = fingerprint
    return last


def _changes(
    eval_id: str, keys: KeyInputs | None, previous: ExecutionRecord | None
) -> KeyChanges | None:
    """Which key inputs changed since the newest record of the same definition.

    Records keep each dependency's fingerprint, not its file manifest, so the change is
    named per Artifact (``dependencies``), never per file."""
    if keys is None or previous is None or keys.key is None:
        return None
    before: Mapping[str, str] = previous.data.fingerprints or {}
    names = sorted(set(before) | set(keys.fingerprints))
    changed = [n for n in names if before.get(n) != keys.fingerprints.get(n)]
    run_id = _run_of(previous)
    target = eval_id.split("/", 1)[0]
    parts = [f"{'Artifact' if n == target else 'dependency'} {n} changed" for n in changed]
    summary = "; ".join(parts) or "the key changed"
    return {
        "sinceRunId": run_id,
        "dependencies": changed,
        "summary": f"Fingerprint changed since Run {run_id}: {summary}",
    }
