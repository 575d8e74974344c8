"""The batched engine on the real default judge: outputs independent of --parallel, continuous
batching, forced tokens, soft verdicts, reasons off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localjudge import ContextOverflowError, load_judge
from localjudge.data.items import make_item
from localjudge.judge.protocol import Generation, JudgeRequest
from localjudge.judge.schemas import parse_output
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
RECORDS = [
    json.loads(line)
    for line in (ROOT / "examples" / "rag.jsonl").read_text("utf-8").splitlines()
    if line.strip()
][:5]


def requests(*metrics: Any) -> list[JudgeRequest]:
    out = []
    for metric in metrics:
        for i, rec in enumerate(RECORDS):
            request = metric.build(make_item(rec, index=i))
            assert isinstance(request, JudgeRequest)
            out.append(request)
    return out


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
    batch = requests(ContextPosition())
    too_long = ContextPosition().build(
        make_item({**RECORDS[0], "retrieved_contexts": ["word " * 9000]}, index=9)
    )
    assert isinstance(too_long, JudgeRequest)
    mixed = [*batch[:2], too_long, *batch[2:]]
    seen: list[int] = []
    out = batched.generate_many(mixed, on_outcome=lambda i, o: seen.append(i))
    assert isinstance(out[2], ContextOverflowError)
    assert sorted(seen) == list(range(len(mixed)))
    assert seen[0] == 2  # refused at once, before any decoding
    for request, outcome in zip([*batch[:2], *batch[2:]], [*out[:2], *out[3:]], strict=True):
        assert isinstance(outcome, Generation)
        assert parse_output(request.schema, outcome.raw) == outcome.value
        n = len(request.messages[-1]["content"].split("<<CONTEXT ")) - 1
        assert len(outcome.value.verdicts) == n


def test_forced_tokens_are_not_sampled(judge: Any) -> None:
    stats = judge.engine.stats
    before = (stats.sampled, stats.forced)
    outs = judge.generate_many(requests(ContextRelevance()))
    sampled, forced = stats.sampled - before[0], stats.forced - before[1]
    # every output token is either sampled or forced (the end of sequence is never emitted)
    assert sampled + forced == sum(o.stats.completion_tokens for o in outs)
    assert forced > sampled / 2  # the keys, indices and punctuation the grammar forces


def test_soft_verdicts_come_with_every_decision(judge: Any) -> None:
    [request] = requests(ContextRelevance())[:1]
    out = judge.generate_many([request])[0]
    assert isinstance(out, Generation)
    pieces = out.value.pieces
    levels = [d for d in out.decisions if d.key == "relevance"]
    used = [d for d in out.decisions if d.key == "used"]
    assert len(levels) == len(used) == len(pieces)
    for d in out.decisions:
        assert sum(d.probs.values()) == pytest.approx(1.0)
        assert d.chosen in d.probs
    assert [json.loads(d.chosen) for d in levels] == [p.relevance for p in pieces]
    assert [d.chosen == "true" for d in used] == [p.used for p in pieces]
    assert set(levels[0].probs) == {'"high"', '"medium"', '"low"', '"none"'}


def test_without_reasons_only_decisions_are_decoded(judge: Any) -> None:
    record = RECORDS[1]
    with_reasons = requests(ContextPosition())[1]
    plain = ContextPosition(reasons=False).build(make_item(record, index=1))
    assert isinstance(plain, JudgeRequest)
    full, bare = judge.generate_many([with_reasons, plain])
    assert isinstance(full, Generation)
    assert isinstance(bare, Generation)
    assert all("reason" not in v for v in json.loads(bare.raw)["verdicts"])
    assert bare.stats.completion_tokens < full.stats.completion_tokens / 2
    item = make_item(record, index=1)
    result = ContextPosition(reasons=False).finish(item, bare.value, bare.decisions)
    assert result.reason.endswith(".")  # still built from the verdicts
    assert result.soft_value is not None
