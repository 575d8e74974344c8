"""Budgeted grammar mode on the real bundled judge: a schema we did not write (unbounded
strings and lists, as ragas' and deepeval's output models have) decodes under its grammar,
compact, with extra properties forbidden, inside a token budget; an output the budget cannot
hold is an OutputBudgetError, never a cut-off value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from localjudge.errors import OutputBudgetError
from localjudge.judge.protocol import JudgeRequest, generate_many
from localjudge.judge.schemas import UnboundedSchemaError, budgeted, json_schema, worst_case_tokens

pytestmark = pytest.mark.model


class Attribution(BaseModel):  # the shape of ragas' context-recall output, unbounded
    statement: str
    reason: str
    attributed: int


class Classifications(BaseModel):
    classifications: list[Attribution]


class Answer(BaseModel):  # unbounded strings
    answer: str
    reason: str


QUESTION = "Is Paris the capital of France? Reply as JSON with an answer and a short reason."
#: SmolLM2 repeats list entries until the budget runs out on this one
PROMPT = (
    "Context: Paris is the capital of France. It has 2 million people.\n"
    "Reference answer: Paris is France's capital. It lies on the Loire.\n"
    "For each sentence of the reference, say whether the context supports it (1) or not (0). "
    "Answer as JSON."
)


def test_an_unbounded_schema_is_refused_unless_budgeted() -> None:
    with pytest.raises(UnboundedSchemaError):
        worst_case_tokens(Classifications)
    js = json_schema(budgeted(Classifications, max_tokens=300))
    objects = [js, *js["$defs"].values()]
    assert all(o["additionalProperties"] is False for o in objects)
    assert js["x-localjudge-budget"] == 300
    assert json_schema(budgeted(Classifications))["x-localjudge-budget"] == "window"
    capped = json_schema(budgeted(Classifications, max_items=3, max_chars=50))
    assert capped["properties"]["classifications"]["maxItems"] == 3
    assert capped["$defs"]["Attribution"]["properties"]["statement"]["maxLength"] == 50
    assert "maxItems" not in json.dumps(json_schema(budgeted(Classifications)))
    with pytest.raises(ValueError, match="max_items"):
        budgeted(Classifications, max_items=0)


def test_a_budgeted_call_returns_a_validated_value_within_its_budget(judge: Any) -> None:
    gen = judge.generate(QUESTION, budgeted(Answer, max_tokens=300))
    assert isinstance(gen.value, Answer)
    assert gen.stats.completion_tokens <= 300
    assert gen.raw == json.dumps(json.loads(gen.raw), separators=(",", ":"), ensure_ascii=False)
    again = judge.generate(QUESTION, budgeted(Answer, max_tokens=300))
    assert again.raw == gen.raw  # deterministic


def test_the_rest_of_the_window_is_the_default_budget(judge: Any) -> None:
    gen = judge.generate(QUESTION, budgeted(Answer))
    assert isinstance(gen.value, Answer)
    assert gen.stats.prompt_tokens + gen.stats.completion_tokens <= judge.n_ctx


def test_a_budget_too_small_is_a_typed_error_never_a_cut_off_value(judge: Any) -> None:
    tight = budgeted(Classifications, max_tokens=120)
    with pytest.raises(OutputBudgetError, match="budget of 120 tokens") as caught:
        judge.generate(PROMPT, tight)  # a looping list never closes
    assert caught.value.kind == "output_budget"
    # in a batch it is that request's outcome; the others still finish
    roomy = budgeted(Answer, max_tokens=300)
    requests = [
        JudgeRequest([{"role": "user", "content": PROMPT}], tight),
        JudgeRequest([{"role": "user", "content": QUESTION}], roomy),
    ]
    outcomes = generate_many(judge, requests)
    assert isinstance(outcomes[0], OutputBudgetError)
    assert isinstance(outcomes[1].value, Answer)


def test_caps_close_a_list_the_judge_would_repeat_forever(judge: Any) -> None:
    capped = budgeted(Classifications, max_tokens=400, max_items=3, max_chars=80)
    gen = judge.generate(PROMPT, capped)  # the same call without caps runs out of budget
    assert isinstance(gen.value, Classifications)
    assert 1 <= len(gen.value.classifications) <= 3
    assert all(len(c.statement) <= 80 for c in gen.value.classifications)
