"""``list``'s page budget: measuring the whole page at once gives the very page that
measuring entry by entry gives, at the 512 KiB limit and one byte past it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from artifactize.domain.text import compact_json_size
from artifactize.domain.tools.builtins.list_page import entries_within, page_within
from artifactize.domain.tools.results import BUILTIN_RESULT_MAX_BYTES


def entry(name: str, parent: str = "") -> dict[str, str]:
    return {"name": name, "path": f"{parent}/{name}" if parent else name, "kind": "file"}


def cost(page: list[dict[str, str]]) -> int:
    return sum(compact_json_size(data) + 1 for data in page)


def test_a_page_that_fits_exactly_is_whole_and_one_byte_more_drops_its_last_entry() -> None:
    page = [entry(f"{n:03d}-" + "é" * 200, "deep/" * 300) for n in range(200)]
    spent = BUILTIN_RESULT_MAX_BYTES - cost(page)
    assert spent > 0
    assert page_within(page, spent) == page
    assert page_within(page, spent + 1) == page[:-1]
    assert entries_within(page, spent + 1) == page[:-1]


def test_an_empty_page_stays_empty() -> None:
    assert page_within([], BUILTIN_RESULT_MAX_BYTES + 5) == []


@settings(max_examples=300, deadline=None)
@given(
    names=st.lists(st.text(min_size=1, max_size=40), max_size=30),
    parent=st.text(max_size=20),
    slack=st.integers(min_value=-400, max_value=400),
)
def test_the_whole_page_check_agrees_with_entry_by_entry(
    names: list[str], parent: str, slack: int
) -> None:
    page = [entry(name, parent) for name in names]
    spent = BUILTIN_RESULT_MAX_BYTES - cost(page) + slack
    assert page_within(page, spent) == entries_within(page, spent)
