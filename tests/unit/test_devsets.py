"""``fitting/devsets.py``: every development source split in three parts by its unit of
dependence, no unit in two parts, an XQuAD article in one part across its three files and
every translation, and the samples as they were fixed before any row was judged."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from benchmark_scripts import load

devsets = load("fitting/devsets")

pytestmark = pytest.mark.skipif(
    not devsets.SHARED.is_dir(), reason=f"no development data at {devsets.SHARED}"
)


@pytest.fixture(scope="module")
def samples():
    return {name: sample(devsets.SHARED) for name, sample in devsets.SAMPLES.items()}


def test_parts_are_thirds_of_the_units_in_sha256_order():
    units = [f"u{n}" for n in range(10)]
    found = devsets.parts("x", units)
    assert Counter(found.values()) == {"choice": 3, "validation": 3, "test": 4}
    assert devsets.parts("x", reversed(units)) == found
    assert devsets.parts("y", units) != found  # the family is part of the hash


def test_no_unit_falls_in_two_parts(samples):
    for name, sample in samples.items():
        seen = defaultdict(set)
        for x in sample:
            seen[x["unit"]].add(x["part"])
        assert all(len(p) == 1 for p in seen.values()), name
        assert {x["part"] for x in sample} == set(devsets.PARTS), name


def test_an_xquad_article_lies_in_one_part_in_every_file_and_language(samples):
    part_of = defaultdict(set)
    for name in ("xquad", "xquadshort", "xquadrecall"):
        for x in samples[name]:
            part_of[x["unit"]].add(x["part"])
    assert all(len(p) == 1 for p in part_of.values())
    every = devsets.xquad_every("xquad")
    by_question = defaultdict(set)
    for x in every:
        by_question[devsets.question_id(x)].add(x["part"])
    assert all(len(p) == 1 for p in by_question.values())  # a question's translations too


def test_no_sampled_paragraph_list_holds_another_parts_article(samples):
    crossing = devsets.crossing()
    # most lists hold another article of another part: the samples take none of those
    assert all(crossing[p] > 0 for p in devsets.PARTS), crossing
    every = {x["id"]: x for x in devsets.xquad_every("xquad")}
    assert not any(every[x["id"]]["crosses"] for x in samples["xquad"])


def test_the_samples_are_as_fixed(samples):
    counts = {
        name: dict(sorted(Counter(x["part"] for x in sample).items()))
        for name, sample in samples.items()
    }
    assert counts == {
        "llmjudge": {"choice": 32, "test": 36, "validation": 32},
        "trulens": {"choice": 64, "test": 66, "validation": 64},
        "ragbench": {"choice": 28, "test": 28, "validation": 28},
        "xquad": {"choice": 60, "test": 60, "validation": 60},
        "xquadshort": {"choice": 60, "test": 60, "validation": 60},
        "xquadrecall": {"choice": 58, "test": 54, "validation": 60},
        "wice": {"choice": 18, "test": 32, "validation": 36},
    }
