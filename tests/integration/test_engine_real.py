"""The batched engine on the real default judge: outputs independent of --parallel, continuous
batching, forced tokens, soft verdicts, reasons off (the same decisions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localjudge import ContextOverflowError, evaluate, load_judge
from localjudge.data.item import make_item
from localjudge.judge.protocol import Generation, JudgeRequest
from localjudge.judge.schemas import parse_output
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance, MetricResult
from localjudge.metrics.asks import Ask
from localjudge.metrics.instructions import GRADE

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
RECORDS = [
    json.loads(line)
    for line in (ROOT / "examples" / "rag.jsonl").read_text("utf-8").splitlines()
    if line.strip()
][:5]


def asks(*metrics: Any, records: list[dict[str, Any]] = RECORDS) -> list[Ask]:
    """Every decision (and generated) call of ``metrics`` on ``records``, metric by metric."""
    out: list[Ask] = []
    for metric in metrics:
        for i, rec in enumerate(records):
            built = metric.build(make_item(rec, index=i))
            assert not isinstance(built, MetricResult)
            out.extend(built)
    return out


def requests(*metrics: Any, records: list[dict[str, Any]] = RECORDS) -> list[JudgeRequest]:
    return [a.request for a in asks(*metrics, records=records)]


@pytest.fixture(scope="module")
def batched(judge: Any, isolated_env: Path) -> Any:
    """The default judge with three requests decoded together (loaded after the default one)."""
    return load_judge("smollm2-135m", n_threads=2, parallel=3, cache=False)


def test_outputs_do_not_depend_on_parallel(judge: Any, batched: Any) -> None:
    """SmolLM2's kernels give a sequence the same logits whatever shares its batch, and the
    engine keeps each sequence's ubatches the shapes they have alone: byte-identical outputs."""
    batch = requests(ContextRecall(), ContextPosition(), ContextRelevance())
    one = judge.generate_many(batch)
    three = batched.generate_many(batch)
    assert [o.raw for o in three] == [o.raw for o in one]
    assert [o.decisions for o in three] == [o.decisions for o in one]
    assert batched.identity.settings["parallel"] == 3
    assert judge.identity.settings["parallel"] == 1
    assert batched.identity != judge.identity  # so they never share cache entries
    assert judge.batch_invariant
    assert not batched.batch_invariant


def test_more_requests_than_slots_come_back_in_order_with_an_overflow_in_place(
    batched: Any,
) -> None:
    # the passages' calls (each item's baseline call, which shows no passage, left out)
    batch = [r for a in asks(ContextPosition()) if not a.baseline for r in [a.request]]
    [_, too_long] = requests(
        ContextPosition(), records=[{**RECORDS[0], "retrieved_contexts": ["word " * 9000]}]
    )
    mixed = [*batch[:2], too_long, *batch[2:]]
    seen: list[int] = []
    out = batched.generate_many(mixed, on_outcome=lambda i, o: seen.append(i))
    assert isinstance(out[2], ContextOverflowError)
    assert sorted(seen) == list(range(len(mixed)))
    assert seen[0] == 2  # refused at once, before any decoding
    for request, outcome in zip([*batch[:2], *batch[2:]], [*out[:2], *out[3:]], strict=True):
        assert isinstance(outcome, Generation)
        assert parse_output(request.schema, outcome.raw) == outcome.value
        # one passage per call, and its one decision
        assert request.messages[-1]["content"].count("<<PASSAGE>>") == 1
        assert outcome.value.relevant in ("yes", "no")
        assert [d.key for d in outcome.decisions] == ["relevant"]


def test_forced_tokens_are_not_sampled(judge: Any) -> None:
    stats = judge.engine.stats
    before = (stats.sampled, stats.forced)
    outs = judge.generate_many(requests(ContextRelevance()))
    sampled, forced = stats.sampled - before[0], stats.forced - before[1]
    # every output token is either sampled or forced (the end of sequence is never emitted)
    assert sampled + forced == sum(o.stats.completion_tokens for o in outs)
    assert forced > sampled / 2  # the keys, indices and punctuation the grammar forces


def test_soft_verdicts_come_with_every_decision(judge: Any) -> None:
    """Each decision call gives one soft verdict on its one key, over exactly its allowed values,
    whose chosen value is the value decoded; the generated ``missing`` call gives none."""
    item_asks = asks(ContextRelevance(), records=RECORDS[:1])
    outs = judge.generate_many([a.request for a in item_asks])
    n = len(RECORDS[0]["retrieved_contexts"])
    assert len(outs) == 1 + 2 * n + 1  # the baseline call, two per passage, the missing call
    assert item_asks[0].baseline
    for ask, out in zip(item_asks, outs, strict=True):
        assert isinstance(out, Generation)
        if ask.decision is None:
            assert out.decisions == ()
            continue
        [d] = out.decisions
        assert d.key == ask.decision.key
        assert sum(d.probs.values()) == pytest.approx(1.0)
        assert d.chosen in d.probs
        assert json.loads(d.chosen) == getattr(out.value, d.key)
        assert {json.loads(v) for v in d.probs} == set(ask.decision.values)
    grade = next(o for a, o in zip(item_asks, outs, strict=True) if a.decision is GRADE)
    assert set(grade.decisions[0].probs) == {"0", "1", "2", "3"}


def test_without_reasons_only_decisions_are_decoded(judge: Any) -> None:
    record = RECORDS[1]
    [full] = evaluate([record], [ContextPosition(reasons=True)], judge)
    [bare] = evaluate([record], [ContextPosition(reasons=False)], judge)
    assert full.result is not None
    assert bare.result is not None
    n = len(record["retrieved_contexts"])
    # reasons off: the item's baseline call (a grade, not used), then one output per passage,
    # each its decision alone
    baseline, *lines = bare.result.raw.split("\n")
    assert set(json.loads(baseline)) == {"grade"}
    assert len(lines) == n
    assert all(set(json.loads(line)) == {"relevant"} for line in lines)
    assert all("reason" not in v for v in bare.result.verdicts)
    # reasons on: a reason call after each decision (none for the baseline call)
    assert len(full.result.raw.split("\n")) == 1 + 2 * n
    assert all("reason" in v for v in full.result.verdicts)
    assert bare.result.stats is not None
    assert full.result.stats is not None
    # the same decisions decoded, and nothing else: no reason call, no reason tokens
    assert full.result.raw.split("\n")[1 : n + 1] == lines
    assert bare.result.stats.completion_tokens < full.result.stats.completion_tokens
    # the reason calls (each its decision's prompt and more) add more than half of what the
    # decisions cost (those and the item's baseline call, the shortest of them)
    added = full.result.stats.prompt_tokens - bare.result.stats.prompt_tokens
    assert added > bare.result.stats.prompt_tokens / 2
    assert bare.result.reason.endswith(".")  # still built from the verdicts
    assert bare.result.soft_value is not None


def _without_reasons(verdicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in verdict.items() if k != "reason"} for verdict in verdicts]


def test_no_reasons_gives_the_same_decisions_and_soft_values(judge: Any) -> None:
    """A reason is asked after its decision, in a call of its own: turning reasons off
    (``--no-reasons``) leaves every decision, its probabilities and the scores as they were."""
    records = RECORDS[:3]
    names = [ContextRecall, ContextPosition, ContextRelevance]
    on = list(evaluate(records, [m(reasons=True) for m in names], judge))
    off = list(evaluate(records, [m(reasons=False) for m in names], judge))
    assert len(on) == len(off) == len(records) * len(names)
    for a, b in zip(on, off, strict=True):
        assert (a.index, a.metric) == (b.index, b.metric)
        assert a.result is not None, a.error
        assert b.result is not None, b.error
        assert all("reason" in v for v in a.result.verdicts), a.metric
        assert all("reason" not in v for v in b.result.verdicts), b.metric
        assert _without_reasons(a.result.verdicts) == b.result.verdicts, a.metric
        assert a.result.value == b.result.value
        assert a.result.soft_value is not None
        assert a.result.soft_value == b.result.soft_value
