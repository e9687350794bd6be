"""``--shard I/N``: the parse and its limits, and that shards are disjoint, cover the
selection and do not move when evals are added elsewhere."""

from __future__ import annotations

import pytest

from artifactize.domain.reviews.run.shards import SHARDS_MAX, Shard, ShardError, shard_of

IDS = [f"m{n:05d}/check" for n in range(1000)]


def test_a_shard_parses_up_to_the_limit_and_not_past_it() -> None:
    assert Shard.parse(f"{SHARDS_MAX}/{SHARDS_MAX}") == Shard(SHARDS_MAX, SHARDS_MAX)
    with pytest.raises(ShardError, match=r"--shard takes I/N with 1 <= I <= N <= 1024"):
        Shard.parse(f"1/{SHARDS_MAX + 1}")


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "1", "a/b", "1/2/3", "-1/2", ""])
def test_a_malformed_shard_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ShardError) as raised:
        Shard.parse(text)
    assert repr(text) in str(raised.value)


def test_two_shards_of_a_thousand_evals_cover_each_once() -> None:
    first = [i for i in IDS if Shard(1, 2).holds(i)]
    second = [i for i in IDS if Shard(2, 2).holds(i)]
    assert sorted(first + second) == IDS
    assert not set(first) & set(second)
    assert 400 < len(first) < 600  # about half each


@pytest.mark.parametrize("count", [1, 3, 7, 64])
def test_every_eval_lands_in_exactly_one_of_n_shards(count: int) -> None:
    for qualified in IDS[:200]:
        holders = [index for index in range(1, count + 1) if Shard(index, count).holds(qualified)]
        assert holders == [shard_of(qualified, count)]


def test_adding_evals_elsewhere_moves_no_eval() -> None:
    before = {i: shard_of(i, 4) for i in IDS[:500]}
    after = {i: shard_of(i, 4) for i in [*IDS[:500], *(f"new{n}/e" for n in range(500))]}
    assert all(after[i] == shard for i, shard in before.items())
