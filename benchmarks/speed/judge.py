"""Judge speed on this machine, for each bundled model.

Prints, per model:
- cold start: a fresh process importing localjudge, loading the model and building the grammars
  of every kind of call the metrics make (the four decisions, relevance's ``missing`` list and
  the reason) (first ever, with no cached token table, and again with it);
- constrained / unconstrained, per kind of call (one decision per call: recall's
  ``supported``, position's ``relevant``, relevance's ``grade`` and ``used``, the ``missing``
  list, and a reason): one judge call (grammar, forced tokens, validation and all) against a
  plain llama.cpp greedy generation of the same number of tokens from the same cached prefix
  (median of alternating repeats; the ratio is what the target is about, not the seconds).
  Fast-forwarded tokens make a constrained call cheaper than the plain one;
- prefix reuse: prompt tokens evaluated per item over 20 different recall items (one call per
  reference statement, an item's calls made together), against the item-specific tokens (the
  item's shared CONTEXT opening once plus each call's own STATEMENT part) and the whole prompts;
- tokens/s of generation over those calls.

Run on an otherwise idle machine:
    python benchmarks/speed/judge.py [--models smollm2-135m gemma3-270m] [--repeats 5] [--items 20]
                               [-t THREADS]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

COLD_START = """
import json, sys, time
t0 = time.perf_counter()
from localjudge import load_judge
from localjudge.metrics.asks import reason_schema
from localjudge.metrics.instructions import GRADE, RELEVANT, SUPPORTED, USED
from localjudge.metrics.relevance import missing_schema
judge = load_judge(sys.argv[1], n_threads=json.loads(sys.argv[2]), cache=False)
for decision in (SUPPORTED, RELEVANT, GRADE, USED):
    judge._grammar(decision.schema())
for schema in (missing_schema(), reason_schema()):
    judge._grammar(schema)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def cold_start(alias: str, cache_dir: str, threads: int | None = None) -> float:
    env = {**os.environ, "LOCALJUDGE_CACHE_DIR": cache_dir}
    out = subprocess.run(
        [sys.executable, "-c", COLD_START, alias, json.dumps(threads)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def items(n: int) -> list[dict[str, object]]:
    topics = [
        ("the Nile", "Africa", "about 6,650 km long"),
        ("Mount Everest", "Nepal and China", "8,849 m high"),
        ("the Amazon", "South America", "the largest river by discharge"),
        ("Lake Baikal", "Siberia", "the deepest lake on Earth"),
        ("the Sahara", "North Africa", "the largest hot desert"),
    ]
    out = []
    for i in range(n):
        name, where, fact = topics[i % len(topics)]
        out.append(
            {
                "user_input": f"Question {i}: where is {name} and what is notable about it?",
                "retrieved_contexts": [
                    f"{name} lies in {where}. Record {i}.",
                    f"It is {fact}. Source number {i * 7}.",
                    f"Unrelated note {i}: trains run on time in Switzerland.",
                ],
                "reference": f"{name} is in {where} and is {fact}.",
                "response": f"{name} is in {where}; it is {fact}.",
            }
        )
    return out


class Unconstrained:
    """Plain greedy llama.cpp decoding on the judge's model, as the engine decodes (the prompt's
    fixed prefix evaluated once into a holder sequence and copied), but without a grammar and
    sampling every token: what a judge call would cost unconstrained."""

    def __init__(self, judge: Any) -> None:
        import llama_cpp as ll
        import numpy as np

        self.ll, self.np = ll, np
        model = judge._model.model  # the benchmark compares against raw llama.cpp
        p = ll.llama_context_default_params()
        p.n_ctx, p.n_batch, p.n_ubatch, p.n_seq_max = 8192, 4096, 512, 2
        p.kv_unified = False
        p.n_threads = p.n_threads_batch = judge.engine.n_threads
        p.flash_attn_type = ll.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self.ctx = ll.llama_init_from_model(model, p)
        self.mem = ll.llama_get_memory(self.ctx)
        self.batch = ll.llama_batch_init(4096, 0, 1)
        self.n_vocab = ll.llama_vocab_n_tokens(ll.llama_model_get_vocab(model))
        self.prefix: tuple[int, ...] = ()

    def _decode(self, tokens: list[int], pos: int, seq: int) -> None:
        b = self.batch
        for i, t in enumerate(tokens):
            b.token[i], b.pos[i], b.n_seq_id[i] = t, pos + i, 1
            b.seq_id[i][0] = seq
            b.logits[i] = i == len(tokens) - 1
        b.n_tokens = len(tokens)
        assert self.ll.llama_decode(self.ctx, b) == 0

    def __call__(self, tokens: list[int], fixed: int, n: int) -> float:
        fixed = max(1, min(fixed, len(tokens) - 1))
        ll, np = self.ll, self.np
        if tuple(tokens[:fixed]) != self.prefix:
            ll.llama_memory_seq_rm(self.mem, 1, -1, -1)
            self.prefix = tuple(tokens[:fixed])
            for k in range(0, fixed, 512):
                self._decode(tokens[k : min(fixed, k + 512)], k, 1)
        start = time.perf_counter()
        ll.llama_memory_seq_rm(self.mem, 0, -1, -1)
        ll.llama_memory_seq_cp(self.mem, 1, 0, -1, -1)
        rest, pos = tokens[fixed:], fixed
        for k in range(0, len(rest), 512):
            self._decode(rest[k : k + 512], pos + k, 0)
        pos += len(rest)
        for _ in range(n):
            logits = np.ctypeslib.as_array(
                ll.llama_get_logits_ith(self.ctx, -1), shape=(self.n_vocab,)
            )
            self._decode([int(np.argmax(logits))], pos, 0)
            pos += 1
        return time.perf_counter() - start


def kinds_of_call(judge: Any, item: Any) -> dict[str, Any]:
    """One request of each kind the metrics make for ``item``: the first ask of each decision
    kind, relevance's ``missing`` call, and the reason call for recall's first decision (its
    verdict the value the judge chooses)."""
    from localjudge.decisions import decide
    from localjudge.metrics import METRICS
    from localjudge.metrics.asks import reason_request

    out: dict[str, Any] = {}
    for cls in METRICS.values():
        asks = cls().build(item)
        assert isinstance(asks, list)
        for ask in asks:
            kind = ask.decision.kind if ask.decision else f"{cls.name}.missing"
            out.setdefault(kind, ask)
    first = out["recall.supported"]
    [gen] = judge.generate_many([first.request])
    out["reason"] = reason_request(first, decide(first, gen))
    return {k: v if k == "reason" else v.request for k, v in out.items()}


def per_call_ratio(judge: Any, repeats: int) -> dict[str, dict[str, float]]:
    from localjudge.data.item import make_item

    out = {}
    item = make_item(items(1)[0], index=0)
    unconstrained = Unconstrained(judge)
    for kind, request in kinds_of_call(judge, item).items():
        prepared = judge.render(request.messages, shared_chars=request.shared_chars)
        [first] = judge.generate_many([request])
        n = first.stats.completion_tokens
        constrained_s, plain_s = [], []
        for _ in range(repeats):
            [gen] = judge.generate_many([request])
            constrained_s.append(gen.stats.seconds)
            # the plain call holds the prefix the judge's call did not evaluate
            held = len(prepared.tokens) - gen.stats.evaluated_prompt_tokens
            plain_s.append(unconstrained(prepared.tokens, held, n))
        c, p = statistics.median(constrained_s), statistics.median(plain_s)
        out[kind] = {"tokens": n, "constrained_s": c, "unconstrained_s": p, "ratio": c / p}
    return out


def prefix_reuse(judge: Any, n_items: int) -> dict[str, float]:
    """Per item (the first one left out: it also reads the instructions), the prompt tokens its
    recall calls evaluated, made together as the runner makes them, against its specific
    tokens: its CONTEXT opening once, then each call's own part."""
    from localjudge.data.item import make_item
    from localjudge.metrics.recall import ContextRecall

    metric = ContextRecall(reasons=False)
    evaluated, specific, prompt, tokens, seconds = [], [], [], 0, 0.0
    for i, record in enumerate(items(n_items)):
        asks = metric.build(make_item(record, index=i))
        assert isinstance(asks, list)
        requests = [a.request for a in asks]
        gens = judge.generate_many(requests)
        rendered = [judge.render(r.messages, shared_chars=r.shared_chars) for r in requests]
        if i > 0:
            evaluated.append(sum(g.stats.evaluated_prompt_tokens for g in gens))
            opening = rendered[0].shared - rendered[0].fixed
            specific.append(opening + sum(len(p.tokens) - p.shared for p in rendered))
            prompt.append(sum(g.stats.prompt_tokens for g in gens))
        tokens += sum(g.stats.completion_tokens for g in gens)
        seconds += sum(g.stats.seconds for g in gens)
    excess = [e - s for e, s in zip(evaluated, specific, strict=True)]
    return {
        "prompt_tokens_mean": statistics.mean(prompt),
        "evaluated_mean": statistics.mean(evaluated),
        "item_specific_mean": statistics.mean(specific),
        "max_evaluated_minus_specific": max(excess),
        "tokens_per_s": tokens / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--items", type=int, default=20, help="recall items (at least 2)")
    parser.add_argument("-t", "--threads", type=int, default=None)
    args = parser.parse_args()
    from localjudge import load_judge

    report = {}
    for alias in args.models:
        with tempfile.TemporaryDirectory() as tmp:
            # the assembled gemma file must not count in its cold start: assemble it first
            # in the shared cache and point the fresh cache at the same models/ folder
            from localjudge.judge.models.registry import resolve_model

            model_path = resolve_model(alias).path
            (Path(tmp) / "models").mkdir()
            (Path(tmp) / "models" / model_path.name).symlink_to(model_path)
            first = cold_start(alias, tmp, args.threads)
            again = cold_start(alias, tmp, args.threads)
        judge = load_judge(alias, n_threads=args.threads, cache=False)
        report[alias] = {
            "cold_start_first_s": first,
            "cold_start_s": again,
            "per_call": per_call_ratio(judge, args.repeats),
            "prefix": prefix_reuse(judge, args.items),
        }
        del judge
    print(json.dumps(report, indent=2))
    print()
    for alias, r in report.items():
        print(f"== {alias}")
        print(
            f"cold start (load + 6 grammars): {r['cold_start_s']:.2f} s "
            f"(first ever, building the token table: {r['cold_start_first_s']:.2f} s)"
        )
        for kind, c in r["per_call"].items():
            print(
                f"  {kind:<18} {c['tokens']:>4} tokens  constrained {c['constrained_s']:.3f} s  "
                f"unconstrained {c['unconstrained_s']:.3f} s  ratio {c['ratio']:.2f}"
            )
        p = r["prefix"]
        print(
            f"  prefix reuse over {args.items} recall items, per item: "
            f"prompt {p['prompt_tokens_mean']:.0f} tokens, "
            f"evaluated {p['evaluated_mean']:.1f}, item-specific {p['item_specific_mean']:.1f}, "
            f"worst evaluated - specific = {p['max_evaluated_minus_specific']}"
        )
        print(f"  generation: {p['tokens_per_s']:.1f} tokens/s")


if __name__ == "__main__":
    main()
