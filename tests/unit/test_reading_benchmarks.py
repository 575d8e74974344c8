"""The pure parts of the reading benchmarks: the yes/no choice rule, the spans they read and the
lists they show."""

from __future__ import annotations

import random
from typing import Any

from benchmark_scripts import load

from localjudge.data.items import make_item
from localjudge.metrics import ContextRelevance

binary_choice = load("binary_choice")
statement_reading = load("statement_reading")
answer_reading = load("answer_reading")
phrasings_view = load("phrasings_view")
recall_phrasings = load("recall_phrasings")
used_phrasings = load("used_phrasings")


def _rows(seed: int = 0, groups: int = 40) -> list[dict[str, Any]]:
    """Groups of three decisions: ``signal`` separates the labels, ``noise`` does not."""
    rng = random.Random(seed)
    rows = []
    for g in range(groups):
        for k in range(3):
            label = (g + k) % 2
            rows.append(
                {
                    "id": f"g{g}",
                    "label": label,
                    "signal": label * 2.0 + rng.gauss(0, 0.3),
                    "noise": rng.gauss(0, 1),
                    "product": 1,
                }
            )
    return rows


def _human(r: dict[str, Any]) -> int:
    return int(r["label"])


def test_the_rule_picks_the_reading_that_carries_the_labels() -> None:
    candidates = {"noise": ("noise",), "signal": ("signal",), "both": ("noise", "signal")}
    chosen, means = binary_choice.choose(_rows(), candidates, _human, "kappa", "t")
    assert chosen == "signal"  # "both" ties with it and has more readings
    assert means["signal"] > 0.8
    assert abs(means["noise"]) < 0.3


def test_a_tie_goes_to_the_earlier_candidate_of_the_same_size() -> None:
    rows = [{**r, "copy": r["signal"]} for r in _rows(1)]
    candidates = {"copy": ("copy",), "signal": ("signal",)}
    chosen, means = binary_choice.choose(rows, candidates, _human, "balanced_accuracy", "t")
    assert means["copy"] == means["signal"]
    assert chosen == "copy"


def test_the_report_measures_each_candidate_and_the_product_on_the_other_half() -> None:
    rows = _rows(2, groups=60)
    train = [r for r in rows if int(r["id"][1:]) < 30]
    test = [r for r in rows if int(r["id"][1:]) >= 30]
    found = binary_choice.report(
        train, test, {"signal": ("signal",), "noise": ("noise",)}, _human, "kappa"
    )
    assert found["signal"]["kappa"]["value"] > 0.8
    assert found["signal"]["auc"]["value"] > 0.95
    assert found["the product now"]["kappa"]["value"] == 0.0  # it says yes to everything
    assert "auc" not in found["the product now"]
    assert found["signal"]["n"] == len(test)


def _read(ask: Any) -> str:
    start, end = ask.request.read_chars
    return str(ask.request.messages[-1]["content"][start:end])


def test_the_statement_and_the_answer_are_what_the_calls_read() -> None:
    statement = "Paris is <<big>> and {old}."
    ask = statement_reading.statement_ask(["ctx one", "ctx two"], statement, 0, baseline=False)
    assert _read(ask) == "Paris is < <big> > and ｛old｝."  # as delimit shows it
    assert ask.request.shared_chars == ask.request.messages[-1]["content"].index("Do the")
    ask = answer_reading.answer_ask("who?", "a passage", "Mary Shelley", 3, baseline=True)
    assert _read(ask) == "Mary Shelley"
    assert ask.baseline
    assert ask.at == 3


def test_a_list_in_view_does_not_depend_on_the_retrieval_order() -> None:
    passages = [f"passage number {i}" for i in range(12)]
    shuffled = passages[::-1]
    lists = phrasings_view.lists(passages)
    assert [len(x) for x in lists] == [5, 5, 2]
    same = [[shuffled.index(passages[i]) for i in x] for x in lists]
    assert phrasings_view.lists(shuffled) == same
    asks = phrasings_view.list_asks("q?", passages, lists[0])
    assert len(asks) == 2 * len(lists[0])
    opening = {a.request.messages[-1]["content"][: a.request.shared_chars] for a in asks}
    assert len(opening) == 1  # one shared opening for the whole list
    assert [a.at for a in asks[::2]] == lists[0]


def test_the_paired_difference_is_zero_for_a_copy_and_positive_for_the_signal() -> None:
    rows = [{**r, "copy": r["noise"]} for r in _rows(3, groups=60)]
    train = [r for r in rows if int(r["id"][1:]) < 30]
    test = [r for r in rows if int(r["id"][1:]) >= 30]
    same = binary_choice.paired(train, test, ("copy",), ("noise",), _human, "balanced_accuracy")
    assert same["auc"]["value"] == 0.0
    assert same["balanced_accuracy"]["ci95"] == [0.0, 0.0]
    better = binary_choice.paired(train, test, ("signal",), ("noise",), _human, "balanced_accuracy")
    assert better["auc"]["ci95"][0] > 0.3
    assert better["balanced_accuracy"]["ci95"][0] > 0.3


def _opening(ask: Any) -> str:
    return str(ask.request.messages[-1]["content"][: ask.request.shared_chars])


def test_a_statements_phrasings_share_one_opening_that_ends_on_the_statement() -> None:
    asks = recall_phrasings.phrasing_asks(["ctx one", "ctx two"], "Paris is big.", 2)
    assert len(asks) == len(recall_phrasings.PHRASINGS)
    [opening] = {_opening(a) for a in asks}
    assert opening.endswith("<<STATEMENT>>\nParis is big.\n<</STATEMENT>>\n")
    assert all(a.at == 2 and not a.explain for a in asks)
    rows = [{"id": "x", "at": 0, "label": 1.0, "judged": 1.0}, {"id": "y", "at": 0}]
    merged = recall_phrasings.merged([{"id": "x", "at": 0, "stated": 2.0}], rows)
    assert merged == [{"id": "x", "at": 0, "label": 1.0, "judged": 1.0, "stated": 2.0}]


def test_the_used_benchmarks_judged_call_is_the_products_own() -> None:
    record = {"user_input": "who?", "retrieved_contexts": ["p0", "p1"], "response": "Mary."}
    product = ContextRelevance().build(make_item(record, index=0))
    used = [a for a in product if a.decision is not None and a.decision.kind == "relevance.used"]
    asks = used_phrasings.passage_asks("who?", "p1", "Mary.", 1)
    assert asks[0].request == used[1].request
    assert len({_opening(a) for a in asks[1:]}) == 1
    assert _opening(asks[1]).endswith("<<RESPONSE>>\nMary.\n<</RESPONSE>>\n")
