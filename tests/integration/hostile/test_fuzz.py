"""Hypothesis fuzzing of what comes from outside: declarations, tool results, ``--args``,
``--fields`` and store records. Each input either passes or gets its own documented refusal;
nothing else may be raised (a traceback). Example counts are bounded (ten times as many
under ``make soak``) and the database is off, so a CI run is quick and repeatable."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from artifactize.domain.declarations.diagnostics import KeyProblems
from artifactize.domain.declarations.model import ArtifactKind
from artifactize.domain.declarations.parse import parse_declaration
from artifactize.domain.reviews.human.submission import FieldsError, human_result
from artifactize.domain.reviews.remote.records import build_record, validate_record
from artifactize.domain.reviews.remote.server_admission import StoreRequestError, check_record
from artifactize.domain.tools.commands.json_output import InvalidOutput, normalize_json_output
from artifactize.domain.use_cases.tools_check import InvocationError
from artifactize.entrypoints.cli.app import _parse_args_json
from artifactize.kernel.bounded_json import JsonRefused, read_json, read_json_batch
from tests.support.hostile import record_counts, scaled
from tests.support.remote_records import KINDS, execution

EXAMPLES = 200
# Shrinking a huge hostile value warns that its repr is large; that is the point of it.
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

# JSON values, extremes included: huge and non-finite numbers, long integers, odd text.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**4299), max_value=10**4299),  # up to 4,300 digits: writable
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["GREEN", "RED", "text", "json", "image", "verdict", "isError", "content"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(
            st.one_of(st.text(max_size=12), st.sampled_from(["type", "text", "data", "verdict"])),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=25,
)
# Text mutations that plain json.dumps never produces.
SPLICES = st.sampled_from(
    ["1e400", "NaN", "-Infinity", "9" * 4301, "[" * 600 + "]" * 600, '"a":1,"a":2', "{", "\ud800"]
)


def dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=True, default=str)


@st.composite
def hostile_json(draw: st.DrawFn, base: st.SearchStrategy[Any] = VALUES) -> str:
    text = dumped(draw(base))
    if draw(st.booleans()):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:at] + draw(SPLICES) + text[at:]
    return text


def counted(name: str) -> Callable[[], None]:
    trials = [0]

    def count() -> None:
        trials[0] += 1

    count.report = lambda: record_counts(name, trials[0], 0)  # type: ignore[attr-defined]
    return count


# Fixed examples in CI, new ones under `make soak`: the profile tests/conftest.py loads.
FUZZ = settings(
    max_examples=scaled(EXAMPLES),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- declarations ---------------------------------------------------------------------

DECLARATION_KEYS = st.sampled_from(
    ["name", "tags", "basis", "mounts", "fingerprint", "evals", "views", "review_policy",
     "agent_tools", "human_tools", "agent_sessions", "profile", "payload", "title", "kind",
     "command", "args", "protocol", "builtin", "description", "input_schema", "timeout_ms",
     "execution_paths", "pass_schema", "fail_schema", "instruction", "session", "script"]
)  # fmt: skip
DECLARATION_VALUES = st.recursive(
    st.one_of(SCALARS, st.sampled_from(["agent", "human", "runtime", "json", "read", "x"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(DECLARATION_KEYS, inner, max_size=5)
    ),
    max_leaves=30,
)


def test_declarations_never_crash() -> None:
    count = counted("fuzz: declarations")

    @FUZZ
    @given(st.dictionaries(DECLARATION_KEYS, DECLARATION_VALUES, max_size=8), st.booleans())
    def check(document: dict[str, Any], is_root: bool) -> None:
        count()
        problems = KeyProblems()
        parse_declaration(
            document, ArtifactKind.FOLDER, target=None, is_root=is_root, problems=problems
        )

    check()
    count.report()  # type: ignore[attr-defined]


# --- tool results ---------------------------------------------------------------------

BLOCKS = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=30)}),
    st.fixed_dictionaries({"type": st.just("json"), "data": VALUES}),
    st.dictionaries(st.sampled_from(["type", "text", "data", "path", "mimeType"]), VALUES),
)
RESULTS = st.fixed_dictionaries(
    {"content": st.lists(BLOCKS, max_size=4)}, optional={"isError": VALUES}
)


def no_file(_: tuple[str, ...]) -> bytes:
    raise InvalidOutput("no file")


def test_tool_results_are_a_result_or_invalid_output() -> None:
    count = counted("fuzz: json tool results")

    @FUZZ
    @given(st.one_of(hostile_json(RESULTS), hostile_json()), st.booleans())
    def check(text: str, as_latin1: bool) -> None:
        count()
        data = text.encode("latin-1", "replace") if as_latin1 else text.encode("utf-8", "replace")
        with contextlib.suppress(InvalidOutput):
            normalize_json_output(data, "/out", no_file)

    check()
    count.report()  # type: ignore[attr-defined]


# --- --args and --fields --------------------------------------------------------------


def test_args_are_an_object_or_exit_2() -> None:
    count = counted("fuzz: --args")

    @FUZZ
    @given(hostile_json())
    def check(text: str) -> None:
        count()
        try:
            assert isinstance(_parse_args_json(text), dict)
        except InvocationError as error:
            assert str(error).startswith("Invalid --args JSON: ")
            assert "sys." not in str(error)

    check()
    count.report()  # type: ignore[attr-defined]


def test_fields_are_a_result_or_a_fields_error() -> None:
    count = counted("fuzz: --fields")

    @FUZZ
    @given(st.one_of(hostile_json(), st.binary(max_size=64)))
    def check(fields: str | bytes) -> None:
        count()
        try:
            human_result("GREEN", fields)
        except FieldsError as error:
            assert "sys." not in error.message

    check()
    count.report()  # type: ignore[attr-defined]


# --- store records --------------------------------------------------------------------

BASE_RECORD = build_record(execution(), KINDS, "summary")
RECORD_CHANGES = st.dictionaries(
    st.sampled_from([*sorted(BASE_RECORD), "durationMs", "execution", "extra"]), VALUES, max_size=3
)


@st.composite
def record_texts(draw: st.DrawFn) -> str:
    record = {**BASE_RECORD, **draw(RECORD_CHANGES)}
    return draw(hostile_json(st.just(record)))


@pytest.mark.parametrize("side", ["client", "server"])
def test_store_records_are_a_record_or_a_refusal(side: str) -> None:
    count = counted(f"fuzz: store records ({side})")

    @FUZZ
    @given(record_texts())
    def check(text: str) -> None:
        count()
        if side == "client":
            try:
                raw = read_json_batch(text)
            except JsonRefused:
                return  # the whole answer is refused: fail closed, as documented
            validate_record(raw)  # a record, or the problem as a string: never raises
            return
        try:
            record = read_json(text)
        except JsonRefused:
            return  # HTTP 400
        with contextlib.suppress(StoreRequestError):
            check_record(BASE_RECORD["key"], record, len(text.encode("utf-8", "replace")))

    check()
    count.report()  # type: ignore[attr-defined]
