"""Gemma 3 270M (a base model without a chat template): assembled from its chunk packages into
the session's cache directory, prompted with the plain layout, outputs valid by construction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localjudge import ContextPosition, ContextRecall, ContextRelevance, load_judge
from localjudge.data.item import make_item
from localjudge.judge.llama.prompting import plain_prompt
from localjudge.metrics import Metric

pytestmark = pytest.mark.model

ITEM = {
    "user_input": "Where is the Eiffel tower, and how tall is it?",
    "retrieved_contexts": [
        "Paris is the capital of France.",
        "The Eiffel tower stands in Paris, on the Champ de Mars.",
        'Le "tour Eiffel" mesure 330 m. 🗼',
    ],
    "reference": "The Eiffel tower is in Paris. It is 330 metres tall.",
    "response": "It is in Paris and is 330 m tall.",
}


@pytest.fixture(scope="module")
def gemma(isolated_env: Path) -> Any:
    return load_judge("gemma3-270m", n_threads=2, cache=False)


def test_gemma_is_assembled_into_the_cache_dir_and_checked(gemma: Any, isolated_env: Path) -> None:
    assert gemma.model.path == isolated_env / "models" / "gemma-3-270m-q4_k_m.gguf"
    assert gemma.sha256 == gemma.model.expected_sha256
    assert gemma.identity.model == "gemma3-270m"


def test_gemma_uses_the_plain_prompt(gemma: Any) -> None:
    assert gemma.identity.settings["chat_template"] is False
    assert gemma._formatter is None
    messages = [
        {"role": "system", "content": "Instructions."},
        {"role": "user", "content": "  The data.  "},
    ]
    prepared = gemma.render(messages)
    assert prepared.text == plain_prompt(messages) == "Instructions.\n\nThe data.\n\nJSON answer:\n"
    llm = gemma._model
    body = list(llm.tokenize(prepared.text.encode(), add_bos=False, special=True))
    if llm.add_bos_token():
        assert prepared.tokens == [llm.token_bos(), *body]
    else:
        assert prepared.tokens == body
    assert "<start_of_turn>" not in llm.detokenize(prepared.tokens, special=True).decode()


@pytest.mark.parametrize("metric_cls", [ContextRecall, ContextPosition, ContextRelevance])
def test_gemma_scores_one_item_per_metric(
    gemma: Any, check_call: Any, metric_cls: type[Metric]
) -> None:
    out = check_call(gemma, metric_cls(), ITEM)
    assert all(g.stats.prompt_tokens > 0 for g in out.generations)
    if metric_cls is not ContextRecall:
        assert len(out.result.verdicts) == 3


def test_a_long_item_does_not_change_the_next_short_ones_verdicts(gemma: Any) -> None:
    """Gemma 3's sliding-window attention: after an item far longer than its window, a short
    item gets exactly the output a freshly loaded model gives it (the prefix is never taken
    from a cache the window has cut)."""
    window = gemma._model.metadata().get("gemma3.attention.sliding_window")
    long_piece = " ".join(
        f"Fact {i}: the river Seine passes bridge number {i}." for i in range(150)
    )
    long_item = {**ITEM, "retrieved_contexts": [long_piece, *ITEM["retrieved_contexts"]]}
    metric = ContextPosition()
    # the first passage's call (after the item's baseline call)
    long_request = metric.build(make_item(long_item, index=0))[1].request  # the long passage
    short_request = metric.build(make_item(ITEM, index=1))[1].request
    assert window is not None
    assert len(gemma.render(long_request.messages).tokens) > 2 * int(window)
    gemma.generate(long_request.messages, long_request.schema)
    after_long = gemma.generate(short_request.messages, short_request.schema)
    fresh = load_judge("gemma3-270m", n_threads=2, cache=False)
    alone = fresh.generate(short_request.messages, short_request.schema)
    assert after_long.raw == alone.raw
    assert after_long.decisions == alone.decisions
