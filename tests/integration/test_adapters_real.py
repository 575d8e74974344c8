"""The ragas and deepeval adapters on both bundled judges, with the real ragas 0.4 and deepeval
packages and the network forbidden (pytest-socket): ragas' own ContextRecall example and every
example item with a reference get a score in [0, 1], with no parse failure, no budget failure
and no NaN; deepeval's ContextualRecallMetric scores the same way; a repeated call is answered
by the judge's cache."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest
from deepeval.metrics import ContextualRecallMetric
from deepeval.test_case import LLMTestCase
from ragas.metrics.collections import ContextRecall

from localjudge import load_judge
from localjudge.integrations.deepeval import LocalJudgeModel
from localjudge.integrations.ragas import LocalJudgeLLM
from localjudge.judge.schemas import json_schema

pytestmark = pytest.mark.model

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "rag.jsonl"

#: ragas' docs example for ContextRecall (ragas/metrics/collections/context_recall)
DOCS = {
    "id": "ragas-docs",
    "user_input": "What is the capital of France?",
    "retrieved_contexts": ["Paris is the capital of France."],
    "reference": "Paris is the capital and largest city of France.",
}
RECORDS = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
ITEMS = [DOCS] + [r for r in RECORDS if r.get("reference")]


@pytest.fixture(scope="module", params=["smollm2-135m", "gemma3-270m"])
def bundled(request: pytest.FixtureRequest, isolated_env: Path) -> Any:
    """Each bundled judge with a cache file of its own (the adapters' default is cache=True)."""
    return load_judge(request.param, n_threads=2, cache=isolated_env / "adapters.sqlite")


def ragas_recall(llm: LocalJudgeLLM, item: dict[str, Any]) -> float:
    metric = ContextRecall(llm=llm)
    fields = {k: item[k] for k in ("user_input", "retrieved_contexts", "reference")}
    return float(asyncio.run(metric.ascore(**fields)).value)


def test_ragas_context_recall_scores_every_example_item(bundled: Any) -> None:
    llm = LocalJudgeLLM(bundled)
    scores = {item["id"]: ragas_recall(llm, item) for item in ITEMS}  # any failure raises
    assert len(scores) == len(ITEMS) >= 10
    bad = {k: v for k, v in scores.items() if math.isnan(v) or not 0.0 <= v <= 1.0}
    assert not bad, bad
    # every call was decoded under the budgeted grammar of ragas' own output model
    js = json_schema(llm.judge.schema(ContextRecall(llm=llm).prompt.output_model))
    assert js["properties"]["classifications"]["minItems"] == 1
    calls_before = bundled.calls
    assert ragas_recall(llm, DOCS) == scores["ragas-docs"]  # deterministic, from the cache
    assert bundled.calls == calls_before
    assert bundled.hits >= 1


def test_deepeval_contextual_recall_scores_example_items(bundled: Any) -> None:
    model = LocalJudgeModel(bundled)
    for item in ITEMS[:4]:
        case = LLMTestCase(
            input=item["user_input"],
            actual_output=item.get("response") or item["reference"],
            expected_output=item["reference"],
            retrieval_context=item["retrieved_contexts"],
        )
        metric = ContextualRecallMetric(model=model, async_mode=False, verbose_mode=False)
        score = metric.measure(case)
        assert 0.0 <= score <= 1.0, (item["id"], score)
        assert metric.reason, item["id"]


def test_an_alias_loads_the_judge_with_the_cache_and_load_options(tmp_path: Path) -> None:
    llm = LocalJudgeLLM("smollm2-135m", n_threads=2, n_ctx=4096, cache=tmp_path / "c.sqlite")
    assert llm.judge.judge.n_ctx == 4096
    first = ragas_recall(llm, DOCS)
    assert 0.0 <= first <= 1.0
    assert ragas_recall(llm, DOCS) == first
    assert llm.judge.judge.calls == 1  # the second answer came from the cache file
    assert (tmp_path / "c.sqlite").stat().st_size > 0
