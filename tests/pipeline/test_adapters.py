"""The ragas and deepeval adapters (localjudge.integrations) with the real ragas and deepeval
packages and the scripted judge: their metrics get validated instances of their own output
models, decoded under the budgeted grammar (caps, at least one verdict, ragas' binary verdicts
held to 0 and 1); calls run one at a time however the framework schedules them; the judge's
cache answers a repeated call; a ragas EvaluationDataset is an input of evaluate()."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest
from deepeval.metrics import ContextualRecallMetric, FaithfulnessMetric
from deepeval.test_case import LLMTestCase
from pipeline_rules import rule_reply
from ragas import EvaluationDataset, SingleTurnSample
from ragas.metrics.collections import ContextRecall, Faithfulness

from localjudge import evaluate
from localjudge.errors import ConstraintError, UsageError
from localjudge.integrations import MAX_ITEMS, BudgetedJudge
from localjudge.integrations.deepeval import LocalJudgeModel
from localjudge.integrations.ragas import LocalJudgeLLM
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import Cache
from localjudge.judge.schemas import json_schema
from localjudge.testing import ScriptedJudge

#: ragas' own docs example for ContextRecall
DOCS = {
    "user_input": "What is the capital of France?",
    "retrieved_contexts": ["Paris is the capital of France."],
    "reference": "Paris is the capital and largest city of France.",
}


@pytest.fixture(autouse=True)
def close_leftover_event_loop():
    """deepeval's async mode makes a new event loop the thread's current one and never closes
    it; close it after each test, as an application's shutdown would (its self-pipe sockets
    would otherwise be collected as unclosed in a later test)."""
    yield
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # none set
        return
    loop.close()
    asyncio.set_event_loop(None)


def recall_reply(*attributed):
    return {
        "classifications": [
            {"statement": f"statement {i}", "reason": "because", "attributed": a}
            for i, a in enumerate(attributed)
        ]
    }


def ascore(metric, **fields):
    return asyncio.run(metric.ascore(**fields)).value


def test_ragas_context_recall_scores_what_the_judge_attributed():
    judge = ScriptedJudge([recall_reply(1, 0, 1, 1)])
    assert ascore(ContextRecall(llm=LocalJudgeLLM(judge)), **DOCS) == 0.75
    [call] = judge.calls
    assert "Paris is the capital and largest city of France." in call.messages[-1]["content"]
    js = json_schema(call.schema)
    assert js["x-localjudge-budget"] == "window"
    item = next(d for d in js["$defs"].values() if "attributed" in d["properties"])
    assert item["properties"]["attributed"]["enum"] == [0, 1]
    assert item["properties"]["statement"]["maxLength"] > 0
    assert item["additionalProperties"] is False
    assert js["properties"]["classifications"]["minItems"] == 1
    assert js["properties"]["classifications"]["maxItems"] == MAX_ITEMS


@pytest.mark.parametrize(
    ("reply", "where"),
    [
        (recall_reply(1, 4), "attributed"),  # ragas' plain int would give recall 2.5
        (recall_reply(), "classifications"),  # ragas would give NaN
        (recall_reply(*[1] * (MAX_ITEMS + 1)), "classifications"),
    ],
)
def test_an_output_the_grammar_never_produces_is_refused_not_scored(reply, where):
    metric = ContextRecall(llm=LocalJudgeLLM(ScriptedJudge([reply])))
    with pytest.raises(ConstraintError, match=where):
        ascore(metric, **DOCS)


def test_ragas_faithfulness_runs_its_two_calls_through_the_judge():
    def reply(messages, schema):
        if "statements" in schema.model_fields and "verdict" not in str(json_schema(schema)):
            return {"statements": ["Paris is the capital.", "It is large."]}
        return {
            "statements": [
                {"statement": "Paris is the capital.", "reason": "said", "verdict": 1},
                {"statement": "It is large.", "reason": "not said", "verdict": 0},
            ]
        }

    judge = ScriptedJudge(reply)
    value = ascore(
        Faithfulness(llm=LocalJudgeLLM(judge)),
        user_input=DOCS["user_input"],
        response="Paris is the capital. It is large.",
        retrieved_contexts=DOCS["retrieved_contexts"],
    )
    assert value == 0.5
    assert len(judge.calls) == 2


class OneAtATime(ScriptedJudge):
    """Fails a call that starts while another is running (the real judge is not reentrant)."""

    def __init__(self, replies):
        super().__init__(replies)
        self.running = 0
        self.threads = set()

    def generate(self, prompt, schema):
        self.running += 1
        self.threads.add(threading.get_ident())
        try:
            assert self.running == 1, "two judge calls at once"
            time.sleep(0.02)
            return super().generate(prompt, schema)
        finally:
            self.running -= 1


def test_concurrent_ragas_calls_reach_the_judge_one_at_a_time():
    judge = OneAtATime(lambda messages, schema: recall_reply(1, 0))
    metric = ContextRecall(llm=LocalJudgeLLM(judge))

    async def many():
        return await asyncio.gather(*(metric.ascore(**DOCS) for _ in range(6)))

    assert [r.value for r in asyncio.run(many())] == [0.5] * 6
    assert len(judge.calls) == 6
    assert threading.get_ident() not in judge.threads  # off the event loop's thread


def test_the_judges_cache_answers_a_repeated_ragas_call(tmp_path):
    inner = ScriptedJudge([recall_reply(1, 1, 0)])  # one reply: a second judge call would fail
    with Cache(tmp_path / "cache.sqlite") as cache:
        llm = LocalJudgeLLM(CachingJudge(inner, cache))
        first = ascore(ContextRecall(llm=llm), **DOCS)
        second = ascore(ContextRecall(llm=llm), **DOCS)  # a worker thread again
    assert first == second == pytest.approx(2 / 3)
    assert len(inner.calls) == 1


def test_a_ragas_evaluation_dataset_is_an_input_of_evaluate():
    samples = [
        SingleTurnSample(
            user_input=f"question {i}?",
            retrieved_contexts=[f"yes fact {i}.", f"noise {i}"],
            reference=f"yes fact {i}. unknown {i}.",
            response=f"yes fact {i}.",
        )
        for i in range(3)
    ]
    dataset = EvaluationDataset(samples=samples)
    as_dicts = [s.model_dump(exclude_none=True) for s in samples]
    got = evaluate(dataset, ["recall", "position"], ScriptedJudge(rule_reply)).to_pandas()
    want = evaluate(as_dicts, ["recall", "position"], ScriptedJudge(rule_reply)).to_pandas()
    assert got.drop(columns="seconds", errors="ignore").equals(
        want.drop(columns="seconds", errors="ignore")
    )
    assert got["recall"].tolist() == [0.5, 0.5, 0.5]


def verdicts_reply(messages, schema):
    fields = schema.model_fields
    if "verdicts" in fields:
        return {
            "verdicts": [
                {"verdict": "yes", "reason": "in the context"},
                {"verdict": "no", "reason": "not in it"},
            ]
        }
    if "claims" in fields:
        return {"claims": ["Paris is the capital."]}
    if "truths" in fields:
        return {"truths": ["Paris is the capital of France."]}
    return {"reason": "one of two sentences is supported"}


CASE = LLMTestCase(
    input=DOCS["user_input"],
    actual_output="Paris is the capital.",
    expected_output="Paris is the capital. It lies on the Loire.",
    retrieval_context=DOCS["retrieved_contexts"],
)


@pytest.mark.parametrize("async_mode", [False, True])
def test_deepeval_contextual_recall_scores_the_judges_verdicts(async_mode):
    judge = ScriptedJudge(verdicts_reply)
    model = LocalJudgeModel(judge)
    metric = ContextualRecallMetric(model=model, async_mode=async_mode, verbose_mode=False)
    assert metric.measure(CASE) == 0.5
    assert metric.reason == "one of two sentences is supported"
    assert model.get_model_name() == "localjudge:scripted"
    verdicts = next(c for c in judge.calls if "verdicts" in c.schema.model_fields)
    js = json_schema(verdicts.schema)
    assert js["properties"]["verdicts"]["minItems"] == 1
    assert js["x-localjudge-budget"] == "window"


def test_deepeval_faithfulness_decodes_every_step_under_a_schema():
    judge = ScriptedJudge(verdicts_reply)
    metric = FaithfulnessMetric(model=LocalJudgeModel(judge), async_mode=False, verbose_mode=False)
    assert 0.0 <= metric.measure(CASE) <= 1.0
    assert len(judge.calls) >= 3  # truths, claims, verdicts (and the reason)


def test_deepeval_free_text_is_refused_with_a_clear_error():
    model = LocalJudgeModel(ScriptedJudge([]))
    with pytest.raises(UsageError, match="output schema"):
        model.generate("Say something.")


@pytest.mark.parametrize("option", [{"n_ctx": 512}, {"cache": False}])
def test_load_options_need_a_model_name_not_a_loaded_judge(option):
    with pytest.raises(TypeError, match=next(iter(option))):
        BudgetedJudge(ScriptedJudge([]), **option)


def test_a_ragas_and_a_deepeval_adapter_on_one_judge_never_decode_at_once():
    def reply(messages, schema):
        if "classifications" in schema.model_fields:
            return recall_reply(1)
        return verdicts_reply(messages, schema)

    judge = OneAtATime(reply)
    ragas_metric = ContextRecall(llm=LocalJudgeLLM(judge))
    deepeval_metric = ContextualRecallMetric(
        model=LocalJudgeModel(judge), async_mode=False, verbose_mode=False
    )

    async def both():
        return await asyncio.gather(
            ragas_metric.ascore(**DOCS),
            asyncio.to_thread(deepeval_metric.measure, CASE),
            ragas_metric.ascore(**DOCS),
        )

    first, recall, second = asyncio.run(both())
    assert (first.value, recall, second.value) == (1.0, 0.5, 1.0)


def test_the_frameworks_telemetry_is_off():
    assert os.environ["RAGAS_DO_NOT_TRACK"] == "true"
    assert os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] == "1"
