"""The bundled obvious items: each a passage that states the answer and one about something
else, valid input for every metric, across languages and kinds of text."""

from __future__ import annotations

from collections import Counter

from localjudge.data.item import make_item
from localjudge.run.calibrate.contrast_items import contrast_items


def test_every_item_pairs_an_answer_with_another_subject() -> None:
    items = contrast_items()
    assert len({r["id"] for r in items}) == len(items)
    for n, r in enumerate(items):
        assert sorted(r["labels"]["relevant"]) == [False, True], r["id"]
        levels = dict(zip(r["labels"]["relevant"], r["labels"]["levels"], strict=True))
        assert levels == {True: "high", False: "none"}, r["id"]
        item = make_item(r, index=n)  # valid for all three metrics
        assert item.text("reference")
        assert item.text("response")
        assert len(item.contexts()) == 2


def test_they_cover_languages_and_kinds_of_text() -> None:
    items = contrast_items()
    langs = Counter(r["source"]["lang"] for r in items)
    kinds = Counter(r["source"]["kind"] for r in items)
    assert len(langs) >= 10
    assert {"short fact", "config", "code", "chat", "web", "table"} <= set(kinds)
    # the answer is not always first: a verdict by place would miss half
    first = Counter(r["labels"]["relevant"][0] for r in items)
    assert abs(first[True] - first[False]) <= 1


def test_target_shares_count_a_role_per_language_and_miss_without_rows():
    from localjudge.decisions import groups_met, target_shares  # noqa: PLC0415

    rows = [
        {"source": "xquad", "role": "answer", "lang": "en"},
        {"source": "xquad", "role": "answer", "lang": "de"},
        {"source": "xquad", "role": "other", "lang": "en"},
        {"source": "xquadshort", "role": "answer", "lang": "en"},  # another source: not counted
    ]
    found = target_shares("position.relevant", rows, [1, 0, 0, 0])
    assert found["answer relevant"] == {"share": 0.5, "target": 0.95, "met": False}
    assert found["answer relevant [en]"]["met"] is True
    assert found["answer relevant [de]"]["share"] == 0.0
    assert found["other article not relevant"]["met"] is True
    assert found["answer relevant [zh]"] == {"share": None, "target": 0.90, "met": False}
    groups = groups_met("position.relevant", found)
    assert groups["[en]"] is True  # answer relevant and other article not, in English
    assert groups["[de]"] is False
    # a verdict that says relevant to everything meets its answer targets but no group
    everything = target_shares("position.relevant", rows, [1, 1, 1, 1])
    assert everything["answer relevant [en]"]["met"] is True
    assert not any(groups_met("position.relevant", everything).values())
    grade = target_shares("relevance.grade", rows, [2, 3, 0, 0])
    assert grade["answer medium or high"]["share"] == 1.0
