"""The branch points' states the engine keeps: the longest usable prefix, cut where the request
is cut, and the least recently used out first."""

from __future__ import annotations

from localjudge.judge.engine.branches import Held, KeptStates, upto

TOKENS = tuple(range(100, 200))
POINTS = [10, 30, 60]


def held(n: int, points: list[int] = POINTS, logprobs: dict[int, float] | None = None) -> Held:
    return Held(TOKENS[:n], upto(points, n), logprobs or {})


def test_the_longest_prefix_cut_at_the_same_points_is_found() -> None:
    kept = KeptStates()
    kept.add(b"a" * 10, held(30))
    kept.add(b"b" * 10, held(60))
    found = kept.longest(TOKENS, POINTS, (), beyond=10)
    assert found is not None
    assert found.state == b"b" * 10
    # nothing longer than what the request already has
    assert kept.longest(TOKENS, POINTS, (), beyond=60) is None
    # another request's tokens, or other cuts below the prefix's end, never match
    other = (*TOKENS[:20], 0, *TOKENS[21:])
    assert kept.longest(other, POINTS, (), beyond=10) is None
    found = kept.longest(TOKENS, [10, 20, 30, 60], (), beyond=0)
    assert found is None
    # a prefix whose end is no cut of this request is not one it could compute itself
    assert kept.longest(TOKENS, [10, 60], (), beyond=0) is None


def test_a_prefix_without_the_read_positions_is_not_used() -> None:
    kept = KeptStates()
    kept.add(b"x", held(60, logprobs={25: -1.0}))
    assert kept.longest(TOKENS, POINTS, range(24, 27), beyond=0) is None
    kept.add(b"y", held(60, logprobs={24: -1.0, 25: -1.0, 26: -2.0}))
    found = kept.longest(TOKENS, POINTS, range(24, 27), beyond=0)
    assert found is not None
    assert found.state == b"y"
    assert len(kept) == 1
    assert kept.size == 1


def test_the_least_recently_used_go_first() -> None:
    kept = KeptStates(limit=25)
    kept.add(b"1" * 10, held(10))
    kept.add(b"2" * 10, held(30))
    kept.used(TOKENS[:10])
    kept.add(b"3" * 10, held(60))
    assert TOKENS[:30] not in kept
    assert TOKENS[:10] in kept
    assert TOKENS[:60] in kept
    assert kept.size == 20
    kept.limit = 1
    kept.add(b"4" * 10, held(60))
    assert len(kept) == 1
    assert kept.size == 10
    kept.clear()
    assert len(kept) == 0
    assert kept.size == 0
