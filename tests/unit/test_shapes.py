"""``benchmarks/quality/shapes.py``: the lists users meet, built from the validation part of
XQuAD and from the contrast items: each passage alone, lists where every passage states the
answer, lists where none does (other articles' paragraphs)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from benchmark_scripts import ROOT, load

devsets = load("fitting/devsets")
shapes = load("benchmarks/quality/shapes")

pytestmark = pytest.mark.skipif(
    not devsets.SHARED.is_dir(), reason=f"no development data at {devsets.SHARED}"
)
FOLDER = devsets.SHARED / "xquad-dev"


@pytest.fixture(scope="module")
def xquad():
    raw = {r["id"]: r for r in devsets.read_jsonl(FOLDER / "position_relevance.jsonl.gz")}
    short = {r["id"]: r for r in devsets.read_jsonl(FOLDER / "short.jsonl.gz")}
    lists = [x for x in devsets.xquad("xquad") if x["part"] == "validation"][:120]
    paragraphs = [{**raw[x["id"]], "lang": x["lang"]} for x in lists]
    article = {
        p: a
        for r in raw.values()
        for p, a in zip(r["retrieved_contexts"], r["source"]["context_articles"], strict=True)
    }
    return paragraphs, shapes.xquad_shapes(paragraphs, short), article


def test_every_paragraph_alone_and_both_other_shapes_per_list(xquad):
    paragraphs, cases, _ = xquad
    count = Counter(c["shape"] for c in cases)
    assert count["alone"] == 3 * len(paragraphs)
    assert count["every"] >= 0.8 * len(paragraphs)  # a few questions have no short list
    assert count["none"] >= 0.9 * len(paragraphs)
    assert all(len(c["record"]["retrieved_contexts"]) == len(c["roles"]) for c in cases)
    assert {c["lang"] for c in cases} == {p["lang"] for p in paragraphs}
    assert len({c["record"]["id"] for c in cases}) == len(cases)


def test_where_every_passage_answers_each_holds_the_answer(xquad):
    _, cases, _ = xquad
    for c in (c for c in cases if c["shape"] == "every"):
        first, second = c["record"]["retrieved_contexts"]
        assert second in first  # the answer's sentence of the answer's paragraph
        assert c["record"]["response"] in second


def test_where_none_answers_every_passage_is_of_another_validation_article(xquad):
    paragraphs, cases, article = xquad
    validation = {p["source"]["article"] for p in paragraphs}
    by_id = {p["id"]: p for p in paragraphs}
    for c in (c for c in cases if c["shape"] == "none"):
        own = by_id[c["record"]["id"].removesuffix("-none")]["source"]["article"]
        found = [article[p] for p in c["record"]["retrieved_contexts"]]
        assert own not in found
        assert set(found) <= validation


def test_asked_the_question_alone_with_the_answer_or_the_response(xquad):
    _, cases, _ = xquad
    alone = shapes.as_asked(cases[:3], None)
    assert all({"reference", "response"}.isdisjoint(c["record"]) for c in alone)
    answer = shapes.as_asked(cases[:3], "reference")
    assert [c["record"]["reference"] for c in answer] == [
        c["record"]["response"] for c in cases[:3]
    ]


def test_contrast_items_in_every_shape_per_kind_of_text():
    path = ROOT / "localjudge" / "run" / "calibrate" / "contrast_items.jsonl"
    items = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    cases = shapes.contrast_shapes(items)
    count = Counter((c["kind"], c["shape"]) for c in cases)
    for kind, n in Counter(r["source"]["kind"] for r in items).items():
        assert count[(kind, "alone")] == 2 * n
        assert count[(kind, "every")] == n
        assert count[(kind, "none")] == n
    for c in cases:
        if c["shape"] == "every":
            assert c["record"]["retrieved_contexts"][1] == c["record"]["reference"]
        if c["shape"] == "none":
            assert c["roles"] == ["other", "other"]


def test_the_table_counts_passages_and_lists_of_each_shape():
    def row(case, shape, role, relevant):
        return {"id": case, "shape": shape, "role": role, "lang": "en", "relevant": relevant}

    rows = [
        row("a", "alone", "answer", True),
        row("b", "alone", "other", True),
        row("c", "every", "answer", True),
        row("c", "every", "answer", False),
        row("d", "every", "answer", False),
        row("d", "every", "answer", False),
        row("e", "none", "other", False),
        row("e", "none", "other", True),
    ]
    en, overall = shapes.shape_lines(rows, "lang")
    assert (en[0], overall[0]) == ("en", "all")
    assert en[1:] == overall[1:]
    assert en[1:] == [
        "1.00 (1/1)",
        "0.00 (0/1)",
        "-",
        "0.25 (1/4)",
        "0.50 (1/2)",
        "0.50 (1/2)",
        "1.00 (1/1)",
    ]
