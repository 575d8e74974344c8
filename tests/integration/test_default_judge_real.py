"""The default judge as a new user gets it: installed by the README's install command, found
without ``-m``, and judging the plain cases right.

This is the focused set on the default (Qwen2.5-Coder-1.5B-Instruct); every other real-model
test names SmolLM2, which is several times faster. One model load for the module, two threads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localjudge import ContextPosition, ContextRecall, ContextRelevance, evaluate, load_judge
from localjudge.data.item import make_item
from localjudge.judge.models.registry import (
    DEFAULT_ALIAS,
    builtin_registry,
    model_sha256,
    resolve_model,
)
from localjudge.metrics import MetricResult

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
    default_judge: Any, check_call: Any, clear_verdicts: Any
) -> None:
    record = {
        "user_input": QUESTION,
        "retrieved_contexts": CONTEXTS,
        "reference": "The Eiffel Tower is in Paris. It was painted green in 2020.",
    }
    judged = check_call(default_judge, ContextRecall(), record)
    verdicts = [v["attributed"] for v in clear_verdicts(judged.result.verdicts, "attributed")]
    assert verdicts == [1, 0], judged.raw


def test_position_and_relevance_find_the_one_relevant_piece(
    default_judge: Any, check_call: Any, clear_verdicts: Any
) -> None:
    record = {
        "user_input": QUESTION,
        "retrieved_contexts": CONTEXTS,
        "reference": "The Eiffel Tower is in Paris.",
        "response": "The Eiffel Tower is in Paris.",
    }
    position = check_call(default_judge, ContextPosition(), record)
    found = clear_verdicts(position.result.verdicts, "relevant")
    assert [bool(v["relevant"]) for v in found] == [True, False]
    relevance = check_call(default_judge, ContextRelevance(), record)
    order = ["none", "low", "medium", "high"]
    levels = [
        order.index(v["relevance"]) for v in clear_verdicts(relevance.result.verdicts, "relevance")
    ]
    assert levels[0] > levels[1], relevance.raw  # the tower above the bananas


def test_relevance_sees_which_piece_the_response_repeats(
    default_judge: Any, check_call: Any
) -> None:
    """The response copies the first piece: used, the second: not (under an output key "used"
    this judge said "no" to both)."""
    record = {
        "user_input": QUESTION,
        "retrieved_contexts": CONTEXTS,
        "response": "The Eiffel Tower is a wrought-iron tower on the Champ de Mars in Paris.",
    }
    relevance = check_call(default_judge, ContextRelevance(), record)
    verdicts = relevance.result.verdicts
    # the piece the response repeats reads as more used: the log-odds are 0.6 apart, more than
    # two builds' largest move of each (0.24: docs/reliability.md, "Close calls")
    p_used = [v["probs"]["used"]["true"] for v in verdicts]
    assert p_used[0] > p_used[1], relevance.raw
    # `used` sits near one half for this judge: a verdict that is a close call is not pinned
    clear = [v for v in verdicts if "used" not in v.get("close_call", {})]
    assert [v["used"] for v in clear] == [v["index"] == 0 for v in clear], relevance.raw


def test_the_same_call_again_gives_the_same_bytes(default_judge: Any) -> None:
    record = {"user_input": QUESTION, "retrieved_contexts": CONTEXTS, "reference": "Paris."}
    asks = ContextPosition().build(make_item(record, index=0))
    assert not isinstance(asks, MetricResult)
    request = asks[0].request
    first = default_judge.generate(request.messages, request.schema)
    again = default_judge.generate(request.messages, request.schema)
    assert again.raw == first.raw


FOUR = [
    "The Eiffel Tower is a wrought-iron tower on the Champ de Mars in Paris, France.",
    "Bananas are rich in potassium and grow in tropical regions.",
    "Gustave Eiffel's company designed and built the tower for the 1889 World's Fair.",
    "The Louvre in Paris is the world's most-visited art museum.",
]


def _per_passage(verdict: dict[str, object]) -> dict[str, object]:
    """A passage's verdict without its place in the list (and without probabilities)."""
    return {k: v for k, v in verdict.items() if k not in ("index", "probs", "reason")}


def _close(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> bool:
    return a.keys() == b.keys() and all(
        a[k].keys() == b[k].keys() and all(abs(a[k][v] - b[k][v]) <= 1e-6 for v in a[k]) for k in a
    )


def test_content_not_place_a_passage_gets_the_same_decision_wherever_it_is_ranked(
    default_judge: Any,
) -> None:
    """Each passage is judged in a call that sees it alone, never its rank: the same item with
    its contexts reversed gives every passage the same decisions and the same probabilities."""
    record = {
        "id": "original",
        "user_input": "Who built the Eiffel Tower, and where is it?",
        "retrieved_contexts": FOUR,
        "reference": "Gustave Eiffel's company built the Eiffel Tower in Paris.",
        "response": "Gustave Eiffel's company built it; it stands in Paris.",
    }
    reversed_record = {**record, "id": "reversed", "retrieved_contexts": FOUR[::-1]}
    metrics = [ContextPosition(reasons=False), ContextRelevance(reasons=False)]
    results = list(evaluate([record, reversed_record], metrics, default_judge))
    assert [(r.id, r.metric) for r in results] == [
        ("original", "position"),
        ("original", "relevance"),
        ("reversed", "position"),
        ("reversed", "relevance"),
    ]
    assert all(r.result is not None for r in results), [r.error for r in results]
    n = len(FOUR)
    for original, moved in zip(results[:2], results[2:], strict=True):
        assert original.result is not None
        assert moved.result is not None
        first, second = original.result.verdicts, moved.result.verdicts
        assert len(first) == len(second) == n
        for i in range(n):
            a, b = first[i], second[n - 1 - i]
            assert _per_passage(a) == _per_passage(b), (original.metric, i, a, b)
            assert _close(a["probs"], b["probs"]), (original.metric, i, a["probs"], b["probs"])


MOON = "Who was the first person to walk on the Moon?"
ARMSTRONG = (
    "Neil Armstrong stepped onto the lunar surface on 20 July 1969, followed by Buzz Aldrin."
)
MOON_LISTS = {
    "alone": [ARMSTRONG],
    "beside the answer": [
        ARMSTRONG,
        "On 20 July 1969 Neil Armstrong became the first human to set foot on the Moon.",
    ],
    "beside others, last": [
        "Bananas are rich in potassium and grow in tropical regions.",
        "The Louvre in Paris is the world's most-visited art museum.",
        ARMSTRONG,
    ],
}


def test_a_passage_gets_the_same_verdict_alone_and_beside_any_neighbours(
    default_judge: Any,
) -> None:
    """A verdict about the passage, not its neighbours: the Armstrong passage alone, beside a
    passage that also answers and beside two that do not gets the same decisions and the same
    probabilities from position (question alone and with the expected answer) and relevance;
    and it is relevant, as a person says."""
    records = [
        {
            "id": f"{name} {with_answer}",
            "user_input": MOON,
            "retrieved_contexts": passages,
            "response": "Neil Armstrong.",
            **({"reference": "Neil Armstrong, in 1969."} if with_answer else {}),
        }
        for name, passages in MOON_LISTS.items()
        for with_answer in (False, True)
    ]
    metrics = [ContextPosition(reasons=False), ContextRelevance(reasons=False)]
    results = list(evaluate(records, metrics, default_judge))
    assert all(r.result is not None for r in results), [r.error for r in results]
    seen: dict[tuple[str, bool], dict[str, object]] = {}
    for r in results:
        assert r.result is not None
        record = next(x for x in records if x["id"] == r.id)
        at = record["retrieved_contexts"].index(ARMSTRONG)
        verdict = r.result.verdicts[at]
        key = (r.metric, "reference" in record)
        # pinned where it is clear on every machine: position asks with an expected answer
        # (the reference, else the response), whose margin is wide, and the Armstrong
        # passage's combined P(relevant), 0.55, is a close call (docs/reliability.md, "Close
        # calls"); its sameness in every list is still checked below
        if r.metric == "position" and "relevant" not in verdict.get("close_call", {}):
            assert verdict["relevant"], (r.id, verdict)
        elif r.metric != "position" and "relevance" not in verdict.get("close_call", {}):
            assert verdict["relevance"] in ("medium", "high"), (r.id, verdict)
        if key in seen:
            first = seen[key]
            assert _per_passage(verdict) == _per_passage(first), (r.id, verdict, first)
            assert _close(verdict["probs"], first["probs"]), (r.id, verdict, first)  # type: ignore[arg-type]
        else:
            seen[key] = verdict
