"""Gate your RAG pipeline's retrieval in your own test suite, with the default judge.

    pytest examples/test_rag_quality.py

The judge is cached (as load_judge() is by default), so a rerun on unchanged data makes no
judge call. A failure lists each metric's mean, its threshold and the worst items with the
judge's reasons. Swap rag.jsonl for your pipeline's output (question, retrieved contexts,
reference answer) and the thresholds for yours.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from localjudge import evaluate, load_judge
from localjudge.testing import assert_scores

DATA = Path(__file__).with_name("rag.jsonl")


@pytest.fixture(scope="module")
def judge() -> Any:
    return load_judge(n_threads=2)


def test_retrieval_finds_what_the_answer_needs(judge: Any) -> None:
    records = [json.loads(line) for line in DATA.read_text("utf-8").splitlines()]
    results = evaluate(records, ["recall", "position"], judge)
    # your thresholds; the default judge is strict on "relevant" (it marks fewer passages
    # relevant than people do), so its position scores run low: calibrate on your own labels
    assert_scores(results, recall=0.6, position=0.4)
