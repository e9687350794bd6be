"""A Run replayed: an all-reused ``verify`` written again from the plan the previous one kept.

A ``verify`` that started nothing (every selected eval reused, derived, or settled without
a review: ``--reuse-only``'s STALE, BLOCKED, UNREVIEWED) made a Run that is a function of
what it observed of the files and programs, of its invocation (options, environment, code)
and of the history: every key's newest record. Its plan keeps what it wrote and printed,
with this Run's own identity (its ID, its times and wall time, its owner process) replaced
by placeholders: the Run's and requests' rows as the state stores them, the progress lines,
the answer, the exit code, the executions its lookups marked used, and the history's stamp
(``StateStore.history_stamp``). The next ``verify`` of the same invocation whose
observations all still hold (``domain.project.observations``) writes the rows again with
its own identity filled in, in one transaction that first checks the stamp, and prints the
same lines and answer: the workspace is not loaded, no key computed, no document built.
Anything else (a stamp moved, a file or program answering otherwise, a plan damaged or
missing) runs the whole ``verify``, which keeps a new plan when it qualifies.

Placeholders are values nothing else in a Run holds: a Run ID with 24 random characters,
two times in 1971 and 1999 with random fractions (so a wall time computed from them is a
random number of twelve digits), and a random pid and start time. A plan is kept only when
the Run's own ID and times are nowhere left in its text (``RunPlan`` checks).
"""

from __future__ import annotations

import dataclasses
import json
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import AnyStr, TypeVar

from artifactize.domain.reviews.run.documents import RunResult
from artifactize.domain.reviews.timestamps import elapsed_ms, timestamp
from artifactize.kernel.document_codec import run_changed
from artifactize.ports.documents import Request, SourceDocument
from artifactize.ports.ids import IdSource, RequestId, RunId
from artifactize.ports.state import RunRows
from artifactize.ports.statuses import RequestStatus
from artifactize.ports.stored_answers import ANSWER_ENCODING

# What a request of a replayable Run may have ended as: nothing started for any of them.
REPLAYABLE_STATUSES = frozenset(
    {
        RequestStatus.GREEN,
        RequestStatus.RED,
        RequestStatus.STALE,
        RequestStatus.BLOCKED,
        RequestStatus.UNREVIEWED,
    }
)
# 2: rows name their shared parts (state revision 6); 3: the answer's hits; 4: the answer in
# bytes (its length in the head, its hits byte offsets)
PLAN_FORMAT = 4
_NEWLINE = re.compile(b"\n")  # searches a view of bytes in place (bytes.find would copy it)
_ID_CHARS = 24
_DIGITS = string.digits


# a text whose pieces are printed: a ``str``, or the bytes of an answer as a view
Text = TypeVar("Text", str, memoryview)


@dataclass(frozen=True)
class RunIdentity:
    """What differs between two Runs made of the same plan; a plan holds placeholders."""

    run_id: str
    created: str
    completed: str
    pid: int
    start_time: float

    @property
    def wall_ms(self) -> int:
        return elapsed_ms(self.created, self.completed)

    def texts(self) -> list[str]:
        """Each value as it stands in a document's JSON. No placeholder's text holds
        another's (the ID has 24 letters and digits, the times' digits are broken by their
        separators, the wall time has 12 digits and starts with 8, the pid 15 and the start
        time 12 with a fraction, both starting with 7), so the order of replacement does not
        matter."""
        found = [
            self.run_id,
            self.created,
            self.completed,
            str(self.wall_ms),
            str(self.pid),
            json.dumps(self.start_time),
        ]
        return found

    @classmethod
    def placeholders(cls, ids: IdSource) -> RunIdentity:
        def moment(year: int) -> str:
            micros = int(ids.choose(_DIGITS, 6))
            seconds = int(ids.choose(_DIGITS, 7))  # within about 116 days of the year's start
            start = datetime(year, 1, 1, tzinfo=UTC)
            return timestamp(start + timedelta(seconds=seconds, microseconds=micros))

        return cls(
            run_id="run-" + ids.choose(string.ascii_letters + _DIGITS, _ID_CHARS),
            created=moment(1971),
            completed=moment(1999),
            pid=int("7" + ids.choose(_DIGITS, 14)),
            start_time=int("7" + ids.choose(_DIGITS, 11)) + 0.25,
        )


def placeholder_hits(text: AnyStr, olds: Sequence[AnyStr]) -> list[tuple[int, int]]:
    """Where each of ``olds`` (a placeholder's texts) stands in ``text``: (offset, which),
    in order. They never overlap (no placeholder's text holds another's)."""
    hits = []
    for which, old in enumerate(olds):
        at = text.find(old)
        while at >= 0:
            hits.append((at, which))
            at = text.find(old, at + len(old))
    hits.sort()
    return hits


def _pieces(
    text: Text, hits: Sequence[tuple[int, int]], olds: Sequence[Text], news: Sequence[Text]
) -> list[Text] | None:
    """``text`` (a ``str``, or a ``memoryview`` of bytes: its pieces are views, no copy)
    with the placeholder at each hit replaced, as the pieces that make it up; None when a
    hit does not stand on its placeholder or overlaps the one before."""
    pieces: list[Text] = []
    end = 0
    for at, which in hits:
        old = olds[which]
        if at < end or text[at : at + len(old)] != old:
            return None
        pieces += (text[end:at], news[which])
        end = at + len(old)
    pieces.append(text[end:])
    return pieces


def filler(placeholders: RunIdentity, values: RunIdentity) -> Callable[[str], str]:
    """``text`` with each placeholder's text replaced by the value's: what one
    ``str.replace`` per placeholder gives, in one copy of the text (six replacements made
    six copies of a Run's 10 MB of request documents, in memory not touched yet)."""
    olds, news = placeholders.texts(), values.texts()

    def fill(text: str) -> str:
        pieces = _pieces(text, placeholder_hits(text, olds), olds, news)
        if pieces is None:  # placeholders that overlap: never made (``texts``)
            for old, new in zip(olds, news, strict=True):
                text = text.replace(old, new)
            return text
        return "".join(pieces)

    return fill


def printed_bytes(answer: str) -> bytes | None:
    """The bytes a replay prints for ``answer``: its strict UTF-8, which a UTF-8 output
    writes for the text itself; None when it holds a lone surrogate (an undecodable name's
    byte, which an output with ``surrogateescape`` writes back as that byte, and a strict
    one refuses), for which no plan is kept."""
    try:
        return answer.encode("utf-8")
    except UnicodeEncodeError:
        return None


def replayable(result: RunResult) -> bool:
    """Whether ``result`` started nothing and waits for nothing: every request ended
    without a review of its own (reused, derived, or settled as not reviewed here)."""
    run = result.run
    if run.executions_started or run.error is not None or run.wait_timed_out:
        return False
    if run.owner is None or run.completed_at is None or not result.requests:
        return False
    return all(
        r.status in REPLAYABLE_STATUSES and r.started_at is None and r.session_id is None
        for r in result.requests
    )


def with_identity(result: RunResult, identity: RunIdentity) -> RunResult:
    """``result``'s documents with its own ID, times, wall times and owner replaced by
    ``identity``'s (a request derived in the Run names the Run's own request)."""
    old = result.run.id
    new = RunId(identity.run_id)
    wall = identity.wall_ms
    summary = result.run.summary
    run = run_changed(
        result.run,
        id=new,
        created_at=identity.created,
        completed_at=identity.completed,
        owner={"pid": identity.pid, "startTime": identity.start_time},
        summary=None if summary is None else {**summary, "wallMs": wall},
    )
    requests = [_request_with(r, old, new, identity, wall) for r in result.requests]
    return RunResult(run, requests)


def _request_with(
    request: Request, old: RunId, new: RunId, identity: RunIdentity, wall: int
) -> Request:
    source = request.source
    if source is not None and source.get("runId") == old:
        ordinal = str(source["requestId"]).removeprefix(f"{old}-")
        source = SourceDocument(
            runId=new, requestId=RequestId(f"{new}-{ordinal}"), kind=source["kind"]
        )
    summary = request.summary
    if summary is not None and summary.get("wallMs") is not None:
        summary = {**summary, "wallMs": wall}
    return dataclasses.replace(
        request,
        id=RequestId(f"{new}-{request.ordinal}"),
        run_id=new,
        source=source,
        created_at=identity.created,
        completed_at=None if request.completed_at is None else identity.completed,
        summary=summary,
    )


def touched(result: RunResult) -> tuple[str, ...]:
    """The executions the Run's lookups marked used: what each request and each piece of
    evidence reused."""
    found = [r.execution_id for r in result.requests if r.execution_id is not None]
    for evidence in result.run.evidence.values():
        execution = evidence.get("executionId")
        if isinstance(execution, str):
            found.append(execution)
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class RunPlan:
    """What a replayable Run wrote and printed, its identity replaced by ``placeholders``."""

    stamp: str
    placeholders: RunIdentity
    rows: RunRows
    touched: tuple[str, ...]
    progress: tuple[tuple[bool, str], ...]  # (with the elapsed time, the line's text)
    # stdout as printed, in ``ANSWER_ENCODING``: printed again as bytes, never decoded (a
    # Run's answer is 67 MB at 10,000 Artifacts)
    answer: bytes | memoryview
    exit_code: int
    # where the placeholders stand in ``answer``, in bytes (``placeholder_hits``): found
    # when the plan is kept, so a replay does not search a 67 MB answer for six texts (0.2 s
    # at 10,000 Artifacts) and prints it in pieces instead of joining them
    answer_hits: tuple[tuple[int, int], ...] | None = None

    def holds_no_trace_of(self, result: RunResult) -> bool:
        """Whether nothing of ``result``'s own ID and times is left in the plan's text (a
        field that holds them and was not replaced would be written again as it was), and
        no shared part holds a placeholder (the plan names a part by its digest, which
        the part with this Run's identity filled in would not have)."""
        run = result.run
        traces = [run.id, run.created_at, run.completed_at or run.created_at]
        shared = list(self.rows.shared.values())
        texts = [self.rows.run[3], *(t for _, t in self.progress), *shared]
        texts.extend(row[6] for row in self.rows.requests)
        if any(trace in text for text in texts for trace in traces):
            return False
        answer = bytes(self.answer)
        if any(trace.encode(*ANSWER_ENCODING) in answer for trace in traces):
            return False
        held = self.placeholders.texts()
        return not any(placeholder in text for text in shared for placeholder in held)

    def to_data(self) -> bytes | None:
        """One header line, then the Run's data, one line per request (its eval ID,
        ordinal, execution ID, status and body digest, then its data, tab-separated:
        compact JSON never holds a newline, nor a tab, raw, and IDs hold neither), and the
        answer, as it is, last (its length in the header); in ``ANSWER_ENCODING``. None when
        a request's ID is not its Run's and ordinal's (it could not be made again from
        them). The shared parts' texts are not kept."""
        run_id = self.rows.run[0]
        answer = bytes(self.answer)
        olds = [old.encode(*ANSWER_ENCODING) for old in self.placeholders.texts()]
        head = {
            "format": PLAN_FORMAT,
            "stamp": self.stamp,
            "placeholders": dataclasses.asdict(self.placeholders),
            "run": [*self.rows.run[:3], *self.rows.run[4:]],
            "requests": len(self.rows.requests),
            "touched": list(self.touched),
            "progress": [list(line) for line in self.progress],
            "answerHits": [n for hit in placeholder_hits(answer, olds) for n in hit],
            "answerBytes": len(answer),
        }
        lines = [json.dumps(head, ensure_ascii=False), self.rows.run[3]]
        for row in self.rows.requests:
            request_id, of_run, eval_id, ordinal, execution, status, data, body = row
            if of_run != run_id or request_id != f"{run_id}-{ordinal}":
                return None
            columns = (eval_id, str(ordinal), execution or "", status, body or "", data)
            if any("\t" in column or "\n" in column for column in columns[:5]):
                return None
            lines.append("\t".join(columns))
        lines.append("")
        return "\n".join(lines).encode(*ANSWER_ENCODING) + answer

    @classmethod
    def from_data(cls, data: bytes | memoryview, exit_code: int) -> RunPlan | None:
        """The plan ``to_data`` wrote, or None for any other bytes. The answer stays a view
        of ``data``; only what comes before it is decoded."""
        try:
            found = _NEWLINE.search(data)
            if found is None:
                return None
            head = json.loads(bytes(data[: found.start()]))
            if head["format"] != PLAN_FORMAT:
                return None
            size = head["answerBytes"]
            cut = len(data) - size if type(size) is int else -1
            if not found.end() <= cut <= len(data):
                return None
            # the run's data, a line per request, and the empty rest before the answer
            lines = str(data[found.end() : cut], *ANSWER_ENCODING).split("\n")
            run_id, repo, status, created, definitions = head["run"]
            if not all(isinstance(v, str) for v in (run_id, repo, status, created)):
                return None
            if not isinstance(definitions, str | None):
                return None
            numbers = head["answerHits"]
            if not isinstance(numbers, list) or not set(map(type, numbers)) <= {int}:
                return None
            hits = tuple(zip(numbers[::2], numbers[1::2], strict=True))
            if len(lines) != head["requests"] + 2 or lines[-1]:
                return None  # the answer does not start where the rows end
            cells = [line.split("\t") for line in lines[1:-1]]
            if not set(map(len, cells)) <= {6}:
                return None  # a row of another shape
            ordinals = [int(cell[1]) for cell in cells]
            rows = [
                (f"{run_id}-{n}", run_id, e, n, x or None, s, d, b or None)
                for (e, _, x, s, b, d), n in zip(cells, ordinals, strict=True)
            ]
            run_data = lines[0]
            return cls(
                stamp=str(head["stamp"]),
                placeholders=RunIdentity(**head["placeholders"]),
                rows=RunRows((run_id, repo, status, run_data, created, definitions), tuple(rows)),
                touched=tuple(str(t) for t in head["touched"]),
                progress=tuple((bool(timed), str(line)) for timed, line in head["progress"]),
                answer=memoryview(data)[cut:],
                exit_code=exit_code,
                answer_hits=hits,
            )
        except (ValueError, TypeError, KeyError):
            return None

    def answer_pieces(self, values: RunIdentity) -> list[memoryview]:
        """The answer with ``values`` in place of the placeholders, as pieces of bytes to
        print one after the other (views of the answer between the values); searched for
        the placeholders again when its hits do not stand on them (a plan is a file)."""
        texts = [old.encode(*ANSWER_ENCODING) for old in self.placeholders.texts()]
        olds = [memoryview(old) for old in texts]
        news = [memoryview(new.encode(*ANSWER_ENCODING)) for new in values.texts()]
        answer = memoryview(self.answer)
        hits = self.answer_hits
        valid = hits is not None and all(0 <= which < len(olds) for _, which in hits)
        pieces = _pieces(answer, hits, olds, news) if hits is not None and valid else None
        if pieces is None:
            pieces = _pieces(answer, placeholder_hits(bytes(answer), texts), olds, news)
        if pieces is None:  # placeholders that overlap: never made (``texts``)
            whole = bytes(answer)
            for old, new in zip(olds, news, strict=True):
                whole = whole.replace(old, new)
            return [memoryview(whole)]
        return pieces

    def filled_rows(self, fill: Callable[[str], str]) -> RunRows:
        """The rows with this Run's identity in place of the placeholders (the shared parts
        they name hold none: ``holds_no_trace_of``)."""
        run_id, repo, status, data, created, definitions = self.rows.run
        new = fill(run_id)
        # filled all at once, joined by newlines (compact JSON holds none): six passes over
        # one text instead of six calls per request (0.5 s at 10,000 Artifacts)
        joined = "\n".join(row[6] for row in self.rows.requests)
        texts = fill(joined).split("\n") if self.rows.requests else []
        requests = tuple(
            (f"{new}-{o}", new, e, o, x, s, d, b)
            for (_, _, e, o, x, s, _, b), d in zip(self.rows.requests, texts, strict=True)
        )
        return RunRows((new, repo, status, fill(data), fill(created), definitions), requests)


def progress_lines(
    lines: Sequence[tuple[bool, str]], run_id: str, placeholder: str
) -> tuple[tuple[bool, str], ...]:
    """The progress lines a Run printed, its ID replaced by the placeholder's."""
    return tuple((timed, text.replace(run_id, placeholder)) for timed, text in lines)
