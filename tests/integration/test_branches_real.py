"""Branch points on the real engine (SmolLM2, whose CPU kernels give a sequence the same logits
whatever shares its batch): a prompt's openings (an item's shared text, then one passage) are
evaluated once and kept, every request that begins with one continues from it in any order,
and outputs are byte-identical to evaluating every request from its instructions on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from branch_walks import node_cost, one_by_one

from localjudge import load_judge
from localjudge.judge.protocol import JudgeRequest
from localjudge.metrics.instructions import GRADE, RELEVANT, USED

pytestmark = pytest.mark.model

SYSTEM = (
    "You judge one PASSAGE retrieved for a QUESTION. Answer each question about it in JSON, "
    "with the one key the question names."
)
ITEMS = [
    (
        "QUESTION: Who was the first person to walk on the Moon?\n"
        "EXPECTED ANSWER: Neil Armstrong\n",
        [
            "PASSAGE: Neil Armstrong stepped onto the lunar surface on 21 July 1969.\n",
            "PASSAGE: The Moon orbits the Earth once every 27.3 days.\n",
            "PASSAGE: Le Mont Blanc est le plus haut sommet des Alpes.\n",
        ],
    ),
    (
        "QUESTION: 日本で一番高い山は？\nEXPECTED ANSWER: 富士山\n",
        [
            "PASSAGE: 富士山は標高3776メートルで、日本の最高峰です。\n",
            "PASSAGE: 東京は日本の首都です。\n",
        ],
    ),
]
#: each passage's decisions: their own short endings, asked after its opening
ENDINGS = [
    (RELEVANT, "Is the PASSAGE relevant to the QUESTION? Answer yes or no."),
    (GRADE, "Grade the PASSAGE: 0, 1, 2 or 3?"),
    (USED, "Does the PASSAGE state the EXPECTED ANSWER? Answer yes or no."),
]


def tree(*, branched: bool = True) -> list[JudgeRequest]:
    """Every decision about every passage, ending by ending (so a passage's requests are far
    apart, and no slot still holds its opening when the next one comes): each request marks
    its item's shared text and its passage as branch points when ``branched``."""
    out = []
    for decision, ending in ENDINGS:
        for shared, passages in ITEMS:
            for passage in passages:
                points = (len(shared), len(shared) + len(passage)) if branched else ()
                out.append(
                    JudgeRequest(
                        [
                            {"role": "system", "content": SYSTEM},
                            {"role": "user", "content": shared + passage + ending},
                        ],
                        decision.schema(),
                        branch_chars=points,
                    )
                )
    return out


@pytest.fixture(scope="module")
def fresh(isolated_env: Path) -> Iterator[Any]:
    """A SmolLM2 judge of its own (its stats count this module's requests only)."""
    judge = load_judge("smollm2-135m", n_threads=2, cache=False)
    yield judge
    judge.engine.close()


def test_openings_are_tokenized_on_their_own(fresh: Any) -> None:
    """A branch point cuts the tokens: the same opening gives the same tokens whatever comes
    after it, so every request that begins with it can continue from its cells."""
    requests = tree()
    prepared = [fresh.render(r.messages, branch_chars=r.branch_chars) for r in requests]
    for p in prepared:
        assert len(p.branches) == 2
        assert p.fixed < p.branches[0] < p.branches[1] < len(p.tokens)
    # the first item's first passage, asked with each of the three endings
    firsts = [prepared[i * 5] for i in range(3)]
    openings = {tuple(p.tokens[: p.branches[1]]) for p in firsts}
    assert len(openings) == 1
    assert len({tuple(p.tokens) for p in firsts}) == 3
    # two passages of one item share the item's opening, not the passage's
    a, b = prepared[0], prepared[1]
    assert a.tokens[: a.branches[0]] == b.tokens[: b.branches[0]]
    assert a.tokens[: a.branches[1]] != b.tokens[: b.branches[1]]


@pytest.fixture(scope="module")
def alone(fresh: Any) -> list[Any]:
    """:func:`tree`'s outputs, each request evaluated from its instructions on."""
    return one_by_one(fresh, tree())


def test_each_opening_is_read_once_and_outputs_do_not_change(fresh: Any, alone: list[Any]) -> None:
    requests = tree()
    fresh.engine.kv.forget()
    stats = fresh.engine.stats
    before = (stats.prompt_tokens_evaluated, stats.branch_saves, stats.branch_loads)
    together = fresh.generate_many(requests)
    evaluated = stats.prompt_tokens_evaluated - before[0]
    saves, loads = stats.branch_saves - before[1], stats.branch_loads - before[2]

    assert [g.raw for g in together] == [g.raw for g in alone]
    assert [g.decisions for g in together] == [g.decisions for g in alone]
    # two items' openings and five passages' are kept once each ...
    assert saves == 2 + 5
    # ... and read back by the passages' second and third decisions (one slot: the first
    # item's opening is still there for its own next passage, never for the next ending)
    assert loads == 2 * 5
    # nothing but each opening once and each request's own ending is evaluated, where each
    # request evaluated from its instructions on costs far more
    assert evaluated == node_cost(fresh, requests)[0]
    assert evaluated < 0.6 * sum(g.stats.evaluated_prompt_tokens for g in alone)


def test_without_branch_points_nothing_is_kept(fresh: Any) -> None:
    """A request that marks no branch point runs as it always has: no state kept, none read,
    and the same outputs whatever ran before it."""
    requests = tree(branched=False)
    stats = fresh.engine.stats
    before = (stats.branch_saves, stats.branch_loads)
    fresh.engine.kv.forget()
    first = fresh.generate_many(requests)
    again = fresh.generate_many(requests)
    assert (stats.branch_saves, stats.branch_loads) == before
    assert [g.raw for g in again] == [g.raw for g in first]
    assert [g.decisions for g in again] == [g.decisions for g in first]
    assert fresh.engine.kv.branches.size == 0


def test_slots_continue_from_kept_openings(alone: list[Any], isolated_env: Path) -> None:
    """Three slots decoding together take each opening from a kept state or a slot that holds
    it: the same outputs as one request at a time."""
    requests = tree()
    batched = load_judge("smollm2-135m", n_threads=2, parallel=3, cache=False)
    try:
        together = batched.generate_many(requests)
        assert [g.raw for g in together] == [g.raw for g in alone]
        assert [g.decisions for g in together] == [g.decisions for g in alone]
        assert batched.engine.stats.branch_saves == 7
    finally:
        batched.engine.close()


def test_the_oldest_kept_states_go_first_and_are_evaluated_again(
    fresh: Any, alone: list[Any]
) -> None:
    """With room for about one kept state, the engine evicts the least recently used and
    evaluates an evicted opening again when asked: outputs unchanged."""
    requests = tree()
    kv = fresh.engine.kv
    kv.forget()
    kept_before = kv.branches.limit
    kv.branches.limit = 1
    try:
        saves = fresh.engine.stats.branch_saves
        squeezed = fresh.generate_many(requests)
        assert len(kv.branches) == 1
        assert fresh.engine.stats.branch_saves - saves > 7  # evicted ones kept again
    finally:
        kv.branches.limit = kept_before
        kv.forget()
    assert [g.raw for g in squeezed] == [g.raw for g in alone]
    assert [g.decisions for g in squeezed] == [g.decisions for g in alone]
