"""The default judge as a new user gets it: installed by the README's install command, found
without ``-m``, and judging the plain cases right.

This is the focused set on the default (Qwen2.5-Coder-1.5B-Instruct); every other real-model
test names SmolLM2, which is several times faster. One model load for the module, two threads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localjudge import ContextPosition, ContextRecall, ContextRelevance, load_judge
from localjudge.data.items import make_item
from localjudge.judge.registry import DEFAULT_ALIAS, builtin_registry, model_sha256, resolve_model

pytestmark = pytest.mark.model

CONTEXTS = [
    "The Eiffel Tower is a wrought-iron tower on the Champ de Mars in Paris, France.",
    "Bananas are rich in potassium and grow in tropical regions.",
]
QUESTION = "Where is the Eiffel Tower?"


@pytest.fixture(scope="module")
def default_judge(isolated_env: Path) -> Any:
    return load_judge(n_threads=2, cache=False)


def test_the_default_is_the_registered_qwen_judge_and_its_file_is_whole(isolated_env: Path) -> None:
    resolved = resolve_model()
    assert resolved.alias == DEFAULT_ALIAS == "qwen2.5-coder-1.5b"
    registered = next(j for j in builtin_registry() if j.alias == DEFAULT_ALIAS)
    assert resolved.expected_sha256 == registered.sha256
    assert model_sha256(resolved.path) == registered.sha256


def test_recall_tells_a_supported_statement_from_an_unsupported_one(
    default_judge: Any, check_call: Any
) -> None:
    record = {
        "user_input": QUESTION,
        "retrieved_contexts": CONTEXTS,
        "reference": "The Eiffel Tower is in Paris. It was painted green in 2020.",
    }
    judged = check_call(default_judge, ContextRecall(), record)
    verdicts = [v["attributed"] for v in judged.result.verdicts]
    assert verdicts == [1, 0], judged.generation.raw


def test_position_and_relevance_find_the_one_relevant_piece(
    default_judge: Any, check_call: Any
) -> None:
    record = {
        "user_input": QUESTION,
        "retrieved_contexts": CONTEXTS,
        "reference": "The Eiffel Tower is in Paris.",
        "response": "The Eiffel Tower is in Paris.",
    }
    position = check_call(default_judge, ContextPosition(), record)
    assert [bool(v["relevant"]) for v in position.result.verdicts] == [True, False]
    relevance = check_call(default_judge, ContextRelevance(), record)
    order = ["none", "low", "medium", "high"]
    levels = [order.index(v["relevance"]) for v in relevance.result.verdicts]
    assert levels[0] > levels[1], relevance.generation.raw  # the tower above the bananas


def test_the_same_call_again_gives_the_same_bytes(default_judge: Any) -> None:
    record = {"user_input": QUESTION, "retrieved_contexts": CONTEXTS, "reference": "Paris."}
    request = ContextPosition().build(make_item(record, index=0))
    first = default_judge.generate(request.messages, request.schema)
    again = default_judge.generate(request.messages, request.schema)
    assert again.raw == first.raw
