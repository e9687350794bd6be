"""``dumps_indented`` writes what ``json.dumps(value, ensure_ascii=False, indent=2)`` writes,
byte for byte, and fails where it fails with the same error (every ``--json`` answer goes
through it: ``entrypoints/cli/output.py``)."""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifactize.kernel.indented_json import (
    PIECES_PER_WRITE,
    dumps_indented,
    dumps_indented_parts,
    write_indented_array,
)


def _reference(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


class Colour(enum.StrEnum):
    RED = "RED"
    NON_ASCII = "grün\u2028"


class Size(enum.IntEnum):
    BIG = 2**70


class Mapping(dict[Any, Any]):
    pass


class Items(list[Any]):
    pass


class Ratio(float):
    pass


# Every code point, lone surrogates and control characters included (the default alphabet
# leaves surrogates out).
_TEXT = st.text(st.characters(exclude_categories=()), max_size=12)
_FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [0.0, -0.0, 1e16, 1e-7, 1.5e300, 5e-324, 123456789.125, Ratio(2.5), math.nan]
)
_INTEGERS = st.integers() | st.integers(min_value=2**63 - 2, max_value=2**200)
_SCALARS = (
    st.none()
    | st.booleans()
    | _INTEGERS
    | _FLOATS
    | _TEXT
    | st.sampled_from([Colour.RED, Colour.NON_ASCII, Size.BIG])
)
_KEYS = (
    _TEXT
    | st.integers()
    | _FLOATS
    | st.booleans()
    | st.none()
    | st.sampled_from([Colour.RED, Size.BIG])
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=4).map(tuple)
        | st.lists(inner, max_size=3).map(Items)
        | st.dictionaries(_KEYS, inner, max_size=5)
        | st.dictionaries(_TEXT, inner, max_size=3).map(Mapping)
    ),
    max_leaves=40,
)


@settings(max_examples=400)
@given(_DOCUMENTS)
def test_the_same_bytes_as_json_dumps(document: Any) -> None:
    assert dumps_indented(document) == _reference(document)


@pytest.mark.parametrize(
    "document",
    [
        "",
        'a\x00\x1f"\\\n\u2028\ud800é',
        Colour.RED,
        0,
        -(2**100),
        True,
        None,
        math.inf,
        -math.inf,
        [],
        {},
        [[]],
        {"": {}},
        [[[1, [2, {"a": [None, {}]}]]]],
        {2: "int", 1.5: "float", True: "true", False: "false", None: "null", "x": "str"},
        {math.nan: 1, -math.inf: 2},
    ],
)
def test_edges(document: Any) -> None:
    assert dumps_indented(document) == _reference(document)


def _error(write: Any, value: Any) -> tuple[type[BaseException], str]:
    with pytest.raises((TypeError, ValueError)) as caught:
        write(value)
    return caught.type, str(caught.value)


@pytest.mark.parametrize(
    "document",
    [
        {"a": {1, 2}},  # not serializable
        [b"bytes"],
        {(1, 2): "a tuple key"},
        {frozenset(): 1},
    ],
)
def test_the_same_errors(document: Any) -> None:
    assert _error(dumps_indented, document) == _error(_reference, document)


def test_a_circular_reference_is_refused_as_json_refuses_it() -> None:
    looped: list[Any] = [1]
    looped.append({"back": looped})
    assert _error(dumps_indented, looped) == _error(_reference, looped)


def test_the_same_container_twice_is_no_circle() -> None:
    shared = {"a": [1, 2]}
    document = [shared, shared, {"again": shared}]
    assert dumps_indented(document) == _reference(document)


def _streamed(items: list[Any]) -> tuple[str, list[str]]:
    writes: list[str] = []
    write_indented_array(iter(items), writes.append)
    return "".join(writes), writes


@settings(max_examples=300)
@given(st.lists(_DOCUMENTS, max_size=6))
def test_a_streamed_array_is_the_array_dumped_whole(items: list[Any]) -> None:
    assert _streamed(items)[0] == _reference(items)


@pytest.mark.parametrize("count", [0, 1, 2, PIECES_PER_WRITE - 1, PIECES_PER_WRITE + 1])
def test_a_long_array_is_written_in_pieces_with_the_same_bytes(count: int) -> None:
    items: list[Any] = [{"id": f"r-{n}", "n": n, "tags": ["a", n]} for n in range(count)]
    text, writes = _streamed(items)
    assert text == _reference(items)
    if count < PIECES_PER_WRITE // 8:  # a short array is one write
        assert len(writes) == 1
    else:  # a long one several, none of them the whole
        assert len(writes) > 1 and max(map(len, writes)) < len(text) // 2


def test_a_streamed_array_writes_each_part_before_reading_further() -> None:
    """The items are consumed as they are written: the first part is out before the last
    item is made (a request list holds one Run at a time, not the history)."""
    writes: list[str] = []
    made: list[int] = []

    def items() -> Any:
        for n in range(PIECES_PER_WRITE):
            made.append(len(writes))  # how many writes happened before item n was made
            yield {"n": n, "text": "x"}

    write_indented_array(items(), writes.append)
    assert made[0] == 0 and made[-1] >= 1
    assert "".join(writes) == _reference([{"n": n, "text": "x"} for n in range(PIECES_PER_WRITE)])


def test_a_long_answer_is_made_in_parts_that_join_to_it() -> None:
    """``dumps_indented_parts``: the parts of a long document join to its bytes, and none is
    the whole (emit_json prints them one by one, never joined)."""
    document = {"requests": [{"id": f"r-{n}", "tags": ["a", {"n": n}]} for n in range(3000)]}
    parts = dumps_indented_parts(document)
    assert "".join(parts) == _reference(document) == dumps_indented(document)
    assert len(parts) > 2 and max(map(len, parts)) < len(_reference(document)) // 2
    assert dumps_indented_parts("lone") == ['"lone"'] and dumps_indented_parts([]) == ["[]"]
