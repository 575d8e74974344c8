"""Protocols 2 and 3 on the real engine (SmolLM2, whose CPU kernels give a sequence the same
logits whatever shares its batch): every ask of three items, all three metrics, reads each node
of the protocol's tree once, and every output, probability and reading is the one the ask gets
when it is evaluated from its instructions on with nothing kept (what lets a row judged under
one protocol stand for another's same request: ``fitting/carry.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from branch_walks import node_cost, one_by_one

from localjudge import load_judge
from localjudge.data.item import make_item
from localjudge.judge.protocol import JudgeRequest
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance

pytestmark = pytest.mark.model

ITEMS = [
    {
        "user_input": "Who was the first person to walk on the Moon?",
        "retrieved_contexts": [
            "The Apollo program was run by NASA between 1961 and 1972.",
            "Neil Armstrong stepped onto the lunar surface on 20 July 1969.",
        ],
        "reference": "Neil Armstrong was the first, in July 1969.",
        "response": "Neil Armstrong.",
    },
    {
        "user_input": "Quel est le plus long fleuve de France ?",
        "retrieved_contexts": [
            "La Loire est le plus long fleuve de France.",
            "La Seine traverse Paris.",
            "Le Mont Blanc est le plus haut sommet des Alpes.",
        ],
        "reference": "La Loire.",
        "response": "La Seine.",
    },
    {
        "user_input": "日本で一番高い山は？",
        "retrieved_contexts": ["富士山は日本の最高峰です。", "東京は日本の首都です。"],
        "response": "富士山です。",
    },
]


@pytest.fixture(scope="module")
def fresh(isolated_env: Path) -> Iterator[Any]:
    """A SmolLM2 judge of its own (its stats count this module's requests only)."""
    judge = load_judge("smollm2-135m", n_threads=2, cache=False)
    yield judge
    judge.engine.close()


def requests_of(protocol: str) -> list[JudgeRequest]:
    """Every distinct request of the three items' asks, in the runner's order (metric by
    metric), as the runner sends them (an ask two metrics share is sent once)."""
    out: list[JudgeRequest] = []
    for metric in (
        ContextRecall(protocol=protocol),
        ContextPosition(protocol=protocol),
        ContextRelevance(protocol=protocol),
    ):
        for index, record in enumerate(ITEMS):
            if not set(metric.required) <= set(record):  # recall: the items with a reference
                continue
            built = metric.build(make_item(record, index=index))
            assert isinstance(built, list)
            out.extend(a.request for a in built if a.request not in out)
    return out


#: per protocol, the distinct requests that read the QUESTION: the three items' baselines and the
#: seven passages' grades; under protocol 3 also each passage's position and ``used``
READ = {"2": 3 + 7, "3": 3 + 7 * 3}


@pytest.mark.parametrize("protocol", ["2", "3"])
def test_a_protocol_reads_each_node_once_and_changes_no_output(fresh: Any, protocol: str) -> None:
    requests = requests_of(protocol)
    alone = one_by_one(fresh, requests)
    stats = fresh.engine.stats
    before = (stats.prompt_tokens_evaluated, stats.branch_loads)
    together = fresh.generate_many(requests)
    evaluated = stats.prompt_tokens_evaluated - before[0]

    assert [g.raw for g in together] == [g.raw for g in alone]
    assert [g.decisions for g in together] == [g.decisions for g in alone]
    assert [g.reading for g in together] == [g.reading for g in alone]
    assert sum(g.reading is not None for g in together) == READ[protocol]
    assert stats.branch_loads - before[1] > 0
    floor, instructions = node_cost(fresh, requests)
    assert floor <= evaluated <= floor + instructions  # each node once (instructions held)


@pytest.mark.parametrize("protocol", ["2", "3"])
def test_a_later_protocol_reads_fewer_tokens_than_protocol_1(fresh: Any, protocol: str) -> None:
    one, _ = node_cost(fresh, requests_of("1"))
    later, _ = node_cost(fresh, requests_of(protocol))
    assert later < 0.8 * one
