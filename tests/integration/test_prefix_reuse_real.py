"""Every prompt token read once, on the real engine (SmolLM2, and Gemma for its sliding window):
an opening (the item's contexts, or its question and one passage) evaluated once for all the
calls that share it, the instructions stored for the next process, any shared opening reused,
and verdicts that do not depend on any of it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from localjudge import evaluate, load_judge
from localjudge.data.item import make_item
from localjudge.judge.engine.prefix_file import PREFIX_DIR
from localjudge.judge.protocol import JudgeRequest
from localjudge.judge.schemas import StrictModel
from localjudge.metrics import (
    ContextPosition,
    ContextRecall,
    ContextRelevance,
    Metric,
    MetricResult,
)

pytestmark = pytest.mark.model

SMOLLM2 = "smollm2-135m"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "rag.jsonl"

RECORDS = [json.loads(line) for line in EXAMPLES.read_text("utf-8").splitlines() if line.strip()]
#: items with every field, for all three metrics
FULL = [r for r in RECORDS if r.get("reference") and r.get("response")][:5]
#: the three metrics with reasons on (off by default): the reason calls, whose prompts extend
#: their decisions', are compared too
THREE: list[Metric] = [
    ContextRecall(reasons=True),
    ContextPosition(reasons=True),
    ContextRelevance(reasons=True),
]


def raws(judge: Any, metrics: list[Metric], records: list[dict[str, Any]]) -> dict[Any, str]:
    out = {}
    for r in evaluate(records, metrics, judge):
        assert r.result is not None, r.error
        assert r.result.raw is not None
        out[(r.index, r.metric)] = r.result.raw
    return out


#: an item of none of the measured ones
OTHER = next(r for r in RECORDS if r not in FULL and r.get("reference"))


def requests_of(metric: Metric, record: dict[str, Any], index: int = 0) -> list[JudgeRequest]:
    """The decision (and generated) calls ``metric`` makes for ``record``."""
    asks = metric.build(make_item(record, index=index))
    assert not isinstance(asks, MetricResult)
    return [a.request for a in asks]


def read_once(judge: Any, metrics: list[Metric], records: list[dict[str, Any]]) -> int:
    """The prompt tokens ``records`` x ``metrics`` (reasons off) cost when every token is read
    once: each instruction text other than recall's (held by :func:`evaluated`) once, each
    distinct opening (the item's contexts; one passage and its question) once, and each call's
    own tail (a call two metrics ask alike, the item's baseline call, is made once)."""
    held = judge.render(requests_of(ContextRecall(), OTHER)[0].messages)
    instructions = {tuple(held.tokens[: held.fixed])}
    openings: set[tuple[int, ...]] = set()
    asked: set[str] = set()
    cost = 0
    for i, record in enumerate(records):
        for metric in metrics:
            for request in requests_of(metric, record, i):
                key = json.dumps([request.messages, request.read_chars])
                if key in asked:
                    continue
                asked.add(key)
                p = judge.render(
                    request.messages,
                    shared_chars=request.shared_chars,
                    read_chars=request.read_chars,
                )
                shared = p.shared if p.shared is not None else p.fixed
                fixed, opening = tuple(p.tokens[: p.fixed]), tuple(p.tokens[:shared])
                cost += (fixed not in instructions) * len(fixed)
                cost += (opening not in openings) * (shared - p.fixed)
                cost += len(p.tokens) - shared
                instructions.add(fixed)
                openings.add(opening)
    return cost


def evaluated(judge: Any, metrics: list[Metric], records: list[dict[str, Any]]) -> int:
    """Prompt tokens the engine evaluated for ``records`` x ``metrics``, with the instructions
    held and none of the records' own tokens."""
    raws(judge, [ContextRecall()], [OTHER])
    before = judge.engine.stats.prompt_tokens_evaluated
    raws(judge, metrics, records)
    return int(judge.engine.stats.prompt_tokens_evaluated - before)


@pytest.fixture(scope="module")
def warm(judge: Any) -> Any:
    """The session's SmolLM2 judge with the instructions evaluated (they cost once per
    process, or nothing with the stored prefix: not what this module measures)."""
    raws(judge, [ContextRecall()], RECORDS[:1])
    return judge


def test_a_second_metric_costs_its_tail_not_the_contexts_again(warm: Any) -> None:
    """An opening is evaluated once for every call that shares it: recall's statements read
    their item's contexts once, and relevance's calls on a passage reuse the question and
    passage that position's call on it evaluated (relevance alone reads them again)."""
    recall = [ContextRecall(reasons=False)]
    position = [ContextPosition(reasons=False)]
    relevance = [ContextRelevance(reasons=False)]
    one = evaluated(warm, recall, FULL)
    assert one == read_once(warm, recall, FULL)
    fresh = sum(  # every call from its instructions on
        len(p.tokens) - p.fixed
        for i, r in enumerate(FULL)
        for p in (warm.render(q.messages) for q in requests_of(recall[0], r, i))
    )
    assert one < fresh
    alone = evaluated(warm, position, FULL) + evaluated(warm, relevance, FULL)
    both = evaluated(warm, position + relevance, FULL)
    assert both == read_once(warm, position + relevance, FULL)
    # what sharing saved: at least each passage's question and text, read once and not twice
    passages = sum(len(r["retrieved_contexts"]) for r in FULL)
    assert alone - both >= passages * 10, (alone, both)


def test_verdicts_do_not_depend_on_the_metrics_run_together_or_on_parallel(
    warm: Any, isolated_env: Path
) -> None:
    """Each metric alone (after other items), all three together, and three requests decoded at
    once give byte-identical outputs: a reused prefix holds exactly what the request would
    compute itself."""
    alone: dict[Any, str] = {}
    for metric in THREE:
        alone.update(raws(warm, [metric], FULL))
    assert raws(warm, THREE, FULL) == alone
    batched = load_judge(SMOLLM2, n_threads=2, parallel=3, cache=False)
    assert raws(batched, THREE, FULL) == alone
    assert batched.engine.stats.prompt_tokens_reused > 0


def test_a_prompt_after_other_calls_gives_what_a_fresh_context_gives(warm: Any) -> None:
    """Whatever the cells hold from earlier calls, a prompt's output is the one it gets in a new
    context (every prompt is cut at the same points, whichever part is reused)."""
    request = requests_of(ContextRelevance(), FULL[0])[-1]  # the generated `missing` call
    warm.engine.close()
    fresh = warm.generate_many([request])[0].raw
    for _ in range(2):  # now with this very prompt held, and after other items
        assert warm.generate_many([request])[0].raw == fresh
        raws(warm, THREE, FULL[1:3])


class Verdict(StrictModel):
    polite: bool


OPENING = (
    "You grade answers. Read the rules. "
    + " ".join(
        f"Rule {i}: an answer must be short, polite and about the question." for i in range(30)
    )
    + "\n\nThe case: "
)


def test_any_shared_opening_is_reused_for_direct_calls(judge: Any) -> None:
    """Prompts written elsewhere (an adapter's, a user's) share a long opening in one user
    message: a call after the first evaluates at most a quarter of its prompt, and the same
    prompt again gives the same output."""
    judge.engine.close()
    prompts = [OPENING + f"question {i} was answered with answer {i * 11}." for i in range(6)]
    stats = []
    outputs = []
    for prompt in prompts:
        gen = judge.generate(prompt, Verdict)
        stats.append(gen.stats)
        outputs.append(gen.raw)
    assert stats[0].prompt_tokens > 400
    assert stats[0].evaluated_prompt_tokens == stats[0].prompt_tokens
    for s in stats[1:]:
        assert s.evaluated_prompt_tokens <= s.prompt_tokens / 4, s
    assert judge.generate(prompts[2], Verdict).raw == outputs[2]
    judge.engine.close()
    assert judge.generate(prompts[4], Verdict).raw == outputs[4]


# --------------------------------------------------------------------------- the stored prefix

STORE_CODE = """
import json, sys
from localjudge import load_judge
from localjudge.metrics import ContextRecall
from localjudge.data.item import make_item
judge = load_judge(sys.argv[1], n_threads=1, cache=False, store_prefix=True)
request = ContextRecall().build(make_item(json.loads(sys.argv[2]), index=0))[0].request
gen = judge.generate_many([request])[0]
s = judge.engine.stats
fixed = judge.render(request.messages, shared_chars=request.shared_chars).fixed
print(json.dumps({"raw": gen.raw, "evaluated": gen.stats.evaluated_prompt_tokens,
                  "prompt": gen.stats.prompt_tokens, "loads": s.prefix_loads,
                  "evaluations": s.prefix_evaluations, "fixed": fixed}))
"""


def stored_run(runner: Any, cache_dir: Path, model: str = SMOLLM2) -> tuple[dict[str, Any], str]:
    env = {**os.environ, "LOCALJUDGE_CACHE_DIR": str(cache_dir)}
    proc = runner(STORE_CODE, model, json.dumps(FULL[1]), env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "stored instruction prefix" in line]


def test_the_next_process_reads_the_instructions_instead_of_evaluating_them(
    tmp_path: Path, cache_root: Path, python_runner: Any
) -> None:
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    for name in ("tokens", "models", "sha256.json"):  # the session's, but not its prefixes
        if (cache_root / name).exists():
            (cache_dir / name).symlink_to(cache_root / name)
    first, err = stored_run(python_runner, cache_dir)
    assert (first["loads"], first["evaluations"]) == (0, 1)
    assert first["evaluated"] == first["prompt"]
    assert not warnings(err)
    [stored] = (cache_dir / PREFIX_DIR).glob("*.kv")
    second, err = stored_run(python_runner, cache_dir)
    assert (second["loads"], second["evaluations"]) == (1, 0)
    # the instructions are read, not evaluated: exactly the rest of the prompt is
    assert second["fixed"] > 50, second
    assert second["evaluated"] == second["prompt"] - second["fixed"], second
    assert second["raw"] == first["raw"]
    assert not warnings(err)

    good = stored.read_bytes()
    damaged = {
        "truncated": good[: len(good) // 2],
        "corrupt": good[:-100] + bytes(b ^ 0xFF for b in good[-100:]),
        "not ours": b"GGUF" + good[4:],
        "foreign": good.replace(b'"sha256"', b'"sha256x"', 1),
    }
    for what, blob in damaged.items():
        stored.write_bytes(blob)
        again, err = stored_run(python_runner, cache_dir)
        assert (again["loads"], again["evaluations"]) == (0, 1), what
        assert again["raw"] == first["raw"], what
        assert len(warnings(err)) == 1, (what, err)
        assert stored.read_bytes() == good, what  # recomputed and replaced
    # a stored prefix of another model is never taken for this one's
    other, _ = stored_run(python_runner, cache_dir, "gemma3-270m")
    assert other["evaluations"] == 1
    assert len(list((cache_dir / PREFIX_DIR).glob("*.kv"))) == 2


def test_no_cache_leaves_the_stored_prefixes_alone(tmp_path: Path, cli: Any) -> None:
    cache_dir = Path(os.environ["LOCALJUDGE_CACHE_DIR"])
    store = cache_dir / PREFIX_DIR
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in store.glob("*.kv")}
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(FULL[2], ensure_ascii=False) + "\n", "utf-8")
    out = tmp_path / "out"
    proc = cli("eval", str(data), "-m", SMOLLM2, "--metric", "recall", "-t", "1", "-q",
               "--no-cache", "-o", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in store.glob("*.kv")}
    assert after == before
    # without --no-cache the run stores its instructions beside the cache
    proc = cli("eval", str(data), "-m", SMOLLM2, "--metric", "recall", "-t", "1", "-q",
               "--cache", str(tmp_path / "c"), "-o", str(tmp_path / "out2"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "c" / PREFIX_DIR).glob("*.kv"))) == 1


# --------------------------------------------------------------------------- sliding window

LONG = {
    "user_input": "What do the notes say about the harbour of Lunport?",
    "retrieved_contexts": [
        " ".join(
            f"Note {i}.{k}: the harbour of Lunport had {i * k} ships in year {k}."
            for k in range(20)
        )
        for i in range(3)
    ],
    "reference": "Lunport had a busy harbour. Its ships were counted every year.",
    "response": "The notes count the ships of Lunport's harbour.",
}


def test_a_sliding_window_model_reuses_only_whole_prefixes(isolated_env: Path) -> None:
    """Gemma 3 attends over a 512-token window in most layers. Its items here run past that
    window, and an item's metrics together, or in two slots, give what each gives alone in a
    new context."""
    gemma = load_judge("gemma3-270m", n_threads=2, cache=False)
    records = [LONG, {**LONG, "user_input": "How many ships were in Lunport in year 3?"}]
    request = requests_of(ContextRelevance(), LONG)[-1]  # all the contexts
    assert len(gemma.render(request.messages).tokens) > 1200
    alone: dict[Any, str] = {}
    for metric in THREE:
        for i, record in enumerate(records):
            gemma.engine.close()
            [r] = list(evaluate([make_item(record, index=i)], [metric], gemma))
            assert r.result is not None, r.error
            alone[(i, metric.name)] = r.result.raw or ""
    gemma.engine.close()
    assert raws(gemma, THREE, records) == alone
    batched = load_judge("gemma3-270m", n_threads=2, parallel=2, cache=False)
    assert raws(batched, THREE, records) == alone
