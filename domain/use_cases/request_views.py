"""What ``request list`` and ``request show`` print: saved requests with their audit.

A request view is the saved request (flattened) plus ``claim`` (for a follower, the
original request's claim: that is who reviews it), ``execution`` (the source execution's
JSON), ``definition`` (the eval and its owning Artifact, tags included, joined from the
Run's saved definitions; null for a Run without them) and ``summary`` (its own accounting,
``summaries.request_summary``, recomputed from the saved request so it is current even
while the Run still waits). Reading needs no repository and runs nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import groupby, islice
from operator import attrgetter
from typing import cast

from artifactize.domain.reviews.run.summaries import request_summary
from artifactize.kernel.document_codec import execution_json, request_json
from artifactize.ports.documents import (
    Execution,
    ExecutionDocument,
    Request,
    RequestDefinition,
    RequestDocument,
    RequestListed,
    RequestView,
)
from artifactize.ports.ids import RequestId, RunId
from artifactize.ports.state import (
    ExecutionRecord,
    HumanClaim,
    RequestRecord,
    RunRecord,
    StateStore,
)
from artifactize.ports.statuses import RequestStatus

NO_REVIEWER = "-"
UNKNOWN_STATUS = "--status: unknown status {value}; one of {names} (comma-separated)."
EMPTY_STATUS = "--status needs at least one status, e.g. --status WAITING_HUMAN."
REQUEST_STATUSES = tuple(RequestStatus)


def parse_statuses(text: str) -> frozenset[str]:
    """``--status S[,S]`` (any case) as statuses; raises ValueError naming the valid ones."""
    wanted = [part.strip().upper() for part in text.split(",") if part.strip()]
    if not wanted:
        raise ValueError(EMPTY_STATUS)
    for value in wanted:
        if value not in REQUEST_STATUSES:
            names = ", ".join(REQUEST_STATUSES)
            raise ValueError(UNKNOWN_STATUS.format(value=value, names=names))
    return frozenset(wanted)


_RUN_OF = attrgetter("run_id")
LINES_PER_PAGE = 2000  # text lines made and printed at a time
LIST_COLUMNS = ("REQUEST", "RUN", "EVAL", "STATUS", "REVIEWER")
# A list with at most this many requests of a Run reads each one's definitions out of it
# (``StateStore.definitions_for``: ~80 ms at 10,000 Artifacts); with more it decodes the Run
# once for all of them (~0.5 s there).
FEW_OF_A_RUN = 4


class RequestViews:
    def __init__(self, state: StateStore) -> None:
        self.state = state
        self._runs: dict[RunId, RunRecord | None] = {}

    def _run(self, run_id: RunId) -> RunRecord | None:
        if run_id not in self._runs:
            self._runs[run_id] = self.state.get_run(run_id)
        return self._runs[run_id]

    def pages(
        self, run_id: RunId | None, statuses: frozenset[str] | None, limit: int | None
    ) -> Iterator[list[RequestView]]:
        """The views of the requests of ``statuses`` (None: any), the first ``limit`` of
        them, one Run's at a time, read as they are written: a request list holds one Run,
        not the history (eleven 10,000-Artifact Runs, 158,000 requests, took 7.8 GB of
        memory listed whole), and a ``limit`` stops the reading once met. Each page is what
        ``views`` makes of that Run's chosen requests, so the pages together are the whole
        list's."""
        one = _one_status(statuses)  # filtered by the store: the waiting few by their index
        source = (
            self.state.iter_requests(one) if run_id is None else self.state.list_requests(run_id)
        )
        chosen = (r for r in source if statuses is None or r.status in statuses)
        runs = groupby(chosen if limit is None else islice(chosen, limit), _RUN_OF)
        claims = self.state.human_claims()  # few; read once for every page
        return (self._dropping_run(self.views(list(of_run), claims)) for _, of_run in runs)

    def line_pages(
        self, run_id: RunId | None, statuses: frozenset[str] | None, limit: int | None
    ) -> Iterator[list[str]]:
        """``pages``' requests as the text list's lines (``list_line``), ``LINES_PER_PAGE`` at
        a time, made from the requests' columns (``StateStore.iter_request_lines``): no
        request is decoded, only a waiting one's execution is read (a follower shows its
        original's claim)."""
        source = self.state.iter_request_lines(run_id, _one_status(statuses))
        kept = (line for line in source if statuses is None or line.status in statuses)
        chosen = kept if limit is None else islice(kept, limit)
        claims = self.state.human_claims()
        while page := list(islice(chosen, LINES_PER_PAGE)):
            executions = self.state.get_executions(
                {
                    line.execution_id
                    for line in page
                    if line.status == RequestStatus.WAITING_HUMAN and line.execution_id is not None
                }
            )
            yield [
                _line(
                    (line.id, line.run_id, line.eval_id, line.status),
                    claims.get(
                        _claimed(
                            line.id,
                            line.status,
                            executions.get(line.execution_id) if line.execution_id else None,
                        )
                    ),
                    line.reviewer,
                )
                for line in page
            ]

    def _dropping_run(self, views: list[RequestView]) -> list[RequestView]:
        """``views`` of one Run's requests, its decoded Run forgotten (14 MB of definitions
        at 10,000 Artifacts: a list of many Runs keeps none)."""
        self._runs.clear()
        return views

    def view(self, request: RequestRecord) -> RequestView:
        """One request's view: of its Run, only its eval's and Artifact's definitions are
        read (``StateStore.definitions_for``), not the Run whole."""
        execution = self.state.get_execution(request.execution_id) if request.execution_id else None
        saved = self._definitions(request, few=True)
        return self._view(request, execution, self.state.human_claim, saved)

    def views(
        self,
        requests: Sequence[RequestRecord],
        claims: Mapping[RequestId, HumanClaim] | None = None,
    ) -> list[RequestView]:
        """``view`` of each, with the executions read in a few statements and the claims
        once: one by one, a list of 86,000 requests (10,000 Artifacts, six Runs) made
        170,000 queries."""
        executions = self.state.get_executions(
            {r.execution_id for r in requests if r.execution_id is not None}
        )
        claims = self.state.human_claims() if claims is None else claims
        of_run = Counter(r.run_id for r in requests)
        views: list[RequestView] = []
        for r in requests:
            views.append(
                self._view(
                    r,
                    executions.get(r.execution_id) if r.execution_id else None,
                    claims.get,
                    self._definitions(r, few=of_run[r.run_id] <= FEW_OF_A_RUN),
                )
            )
        return views

    def _definitions(self, request: RequestRecord, *, few: bool) -> object:
        """What ``request_definition`` joins for ``request``: read out of its Run for one
        of a few, from the Run decoded once for one of many."""
        if few:
            eval_id = request.data.eval_id
            return self.state.definitions_for(request.run_id, eval_id) if eval_id else None
        run = self._run(request.run_id)
        return run.data.definitions if run is not None else None

    def listed(
        self,
        requests: Sequence[RequestRecord],
        claims: Mapping[RequestId, HumanClaim] | None = None,
    ) -> list[RequestListed]:
        """What ``list_line`` shows of each: its view without the execution, definition and
        summary, which a text list does not show (each Run's definitions alone are 14 MB at
        10,000 Artifacts). Only a request waiting for a person needs its execution: a
        follower shows its original's claim."""
        waiting = {
            r.execution_id
            for r in requests
            if r.status == RequestStatus.WAITING_HUMAN and r.execution_id is not None
        }
        executions = self.state.get_executions(waiting)
        claims = self.state.human_claims() if claims is None else claims
        listed: list[RequestListed] = []
        for request in requests:
            execution = executions.get(request.execution_id) if request.execution_id else None
            claim = claims.get(_claimed(request.id, request.status, execution))
            listed.append(
                {
                    **cast(RequestDocument, request_json(request.data)),
                    "claim": claim.to_json() if claim is not None else None,
                }
            )
        return listed

    def _view(
        self,
        request: RequestRecord,
        execution: ExecutionRecord | None,
        claim_of: Callable[[RequestId], HumanClaim | None],
        definitions: object,
    ) -> RequestView:
        claim = claim_of(_claimed(request.id, request.status, execution))
        return {
            **cast(RequestDocument, request_json(request.data)),
            "claim": claim.to_json() if claim is not None else None,
            "execution": saved_execution(execution.data) if execution is not None else None,
            "definition": request_definition(definitions, request.data),
            "summary": request_summary(request.data),
        }


def _claimed(request_id: RequestId, status: str, execution: ExecutionRecord | None) -> RequestId:
    """Whose claim a request shows: its own, or for a follower (waiting on an execution
    another request owns) that request's, who reviews the execution it waits on."""
    owner = execution.data.request_id if execution is not None else None
    if status == RequestStatus.WAITING_HUMAN and owner is not None:
        return owner
    return request_id


def _one_status(statuses: frozenset[str] | None) -> str | None:
    """The one status a list keeps, for the store to filter by (None: several, or any)."""
    return next(iter(statuses)) if statuses is not None and len(statuses) == 1 else None


def request_definition(saved: object, request: Request) -> RequestDefinition | None:
    """``{eval, artifact}`` of a request, joined from its Run's ``definitions`` (``saved``,
    or the part of them ``StateStore.definitions_for`` read); None for a Run without them."""
    if not isinstance(saved, Mapping):
        return None
    found = (saved.get("evals") or {}).get(request.eval_id)
    if not isinstance(found, dict):
        return None
    name = found.get("artifact")
    artifacts = saved.get("artifacts") or {}
    return {"eval": found, "artifact": artifacts.get(name) if isinstance(name, str) else None}


def saved_execution(execution: Execution) -> ExecutionDocument:
    """An execution as ``--json`` shows it: its saved JSON."""
    return cast(ExecutionDocument, execution_json(execution))


def list_line(view: RequestListed) -> str:
    """One tab-separated row: request, Run, eval, status, reviewer: the claimant while the
    request waits, whoever signed it off once settled (``-`` for neither)."""
    claim = view.get("claim")
    if isinstance(claim, Mapping):
        reviewer = str(claim["reviewer"])
    else:
        reviewer = str(view.get("reviewer") or NO_REVIEWER)
    return "\t".join(
        (str(view["id"]), str(view["runId"]), str(view["evalId"]), str(view["status"]), reviewer)
    )


def _line(fields: tuple[str, str, str, str], claim: HumanClaim | None, signer: str | None) -> str:
    """``list_line``'s row of a request's columns, its claim and who signed it off."""
    reviewer = claim.reviewer if claim is not None else signer or NO_REVIEWER
    return "\t".join((*fields, str(reviewer)))
