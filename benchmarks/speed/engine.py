"""The judge engine's speed: eval items/s and tokens/s for --parallel 1..N, in one run.

    python benchmarks/speed/engine.py [-m MODEL] [--items 64] [--parallel 1 2 4 8 16] [-ngl -1]

A fixed set of ``--items`` synthetic RAG items x 3 metrics (recall, position, relevance) is
scored end to end with ``evaluate`` (no cache) once per configuration, each in a fresh process
(so each has its own memory figure and no warm state):

- ``base``: one request at a time without fast-forward: the previous engine's equivalent
  (it samples every output token, as ``Llama.create_completion`` did, with the same outputs);
- ``N=k``: k requests decoded together, tokens the grammar forces appended without sampling;
- ``today`` (with ``--today DIR``): the same items through the localjudge checked out in DIR,
  e.g. a worktree of the release before this engine (``Llama.create_completion``, outlines'
  processor, statements written by the judge): items/s only, as that code keeps no counters.

Per configuration it prints items/s, aggregate generated tokens/s, sampled and forced tokens per
judge call (one per decision, one per reason), the share of time in prompt evaluation and the
speed-up batching could give at most with that share (prompt evaluation is not batched across
requests), the grammar's share of the time, peak RSS, and how many item x metric rows' raw
outputs (all their calls' outputs) differ from N=1. Run it on an idle machine; on a GPU box the same
command with ``-ngl -1``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from workers import OPENING, run_worker

WORKER = (
    OPENING
    + r"""
import resource, time
from localjudge import evaluate
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
judge = open_judge(parallel=cfg["parallel"], fast_forward=cfg["ff"], n_ctx=cfg["n_ctx"])
metrics = [ContextRecall(), ContextPosition(), ContextRelevance()]
start = time.perf_counter()
results = list(evaluate(records, metrics, judge, chunk_size=cfg["chunk"]))
wall = time.perf_counter() - start
s = judge.engine.stats
print(json.dumps({
    "wall": wall,
    "errors": sum(r.error is not None for r in results),
    "raws": [r.result.raw if r.result else None for r in results],
    "calls": sum(r.result.calls for r in results if r.result),
    "sampled": s.sampled, "forced": s.forced, "decode_calls": s.decode_calls,
    "decode_seconds": s.decode_seconds, "prompt_seconds": s.prompt_seconds,
    "grammar_seconds": s.grammar_seconds, "prompt_tokens": s.prompt_tokens_evaluated,
    "argmax_accepted": s.argmax_accepted, "full_masks": s.full_masks,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""
)

TODAY_WORKER = (
    OPENING
    + r"""
import resource, time
from localjudge import evaluate
judge = open_judge(n_ctx=cfg["n_ctx"])
metrics = ["recall", "position", "relevance"]
start = time.perf_counter()
results = list(evaluate(records, metrics, judge, chunk_size=cfg["chunk"]))
wall = time.perf_counter() - start
print(json.dumps({
    "wall": wall, "errors": sum(r.error is not None for r in results),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""
)

CEILING_WORKER = (
    OPENING
    + r"""
import time
judge = open_judge(parallel=max(cfg["rows"]), n_ctx=cfg["n_ctx"])
kv = judge.engine.kv
kv.ensure_context(1024)
def best(entries, reps=5):
    times = []
    for _ in range(reps):
        for seq in range(kv.parallel + 1):
            kv.drop(seq)
        start = time.perf_counter()
        kv.decode(entries)
        times.append(time.perf_counter() - start)
    return min(times)
prompt = best([(100 + k % 50, k, 0, k == 255) for k in range(256)])
rows = {n: best([(100, 0, s, True) for s in range(n)]) for n in cfg["rows"]}
print(json.dumps({"prompt_tps": 256 / prompt, "rows_tps": {n: n / t for n, t in rows.items()}}))
"""
)

TOPICS = [
    ("the Nile", "Africa", "about 6,650 km long"),
    ("Mount Everest", "Nepal and China", "8,849 m high"),
    ("the Amazon", "South America", "the largest river by discharge"),
    ("Lake Baikal", "Siberia", "the deepest lake on Earth"),
    ("the Sahara", "North Africa", "the largest hot desert"),
    ("the Danube", "Central Europe", "flowing through ten countries"),
    ("Mont Blanc", "France and Italy", "4,806 m high"),
    ("the Gobi", "Mongolia and China", "a cold desert"),
]


def items(n: int) -> list[dict[str, Any]]:
    """``n`` distinct items (three pieces, one of them off-topic), the same on every run."""
    out = []
    for i in range(n):
        name, where, fact = TOPICS[i % len(TOPICS)]
        out.append(
            {
                "id": f"item-{i}",
                "user_input": f"Question {i}: where is {name} and what is notable about it?",
                "retrieved_contexts": [
                    f"{name[0].upper()}{name[1:]} lies in {where}. Record {i}.",
                    f"It is {fact}. Source number {i * 7}.",
                    f"Unrelated note {i}: trains in Switzerland run on time.",
                ],
                "reference": f"{name[0].upper()}{name[1:]} is in {where}. It is {fact}.",
                "response": f"{name[0].upper()}{name[1:]} is in {where}; it is {fact}.",
            }
        )
    return out


def run(
    cfg: dict[str, Any],
    records: list[dict[str, Any]],
    code: str | None = None,
    worker: str = WORKER,
) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": code} if code else None
    out: dict[str, Any] = run_worker(
        TODAY_WORKER if code else worker, cfg, records, env=env, cwd=code
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("-ngl", "--n-gpu-layers", type=int, default=0)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("-c", "--n-ctx", type=int, default=4096)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    parser.add_argument(
        "--today", default=None, metavar="DIR", help="also time the localjudge checked out in DIR"
    )
    args = parser.parse_args(argv)
    records = items(args.items)
    base = {
        "model": args.model,
        "threads": args.threads,
        "ngl": args.n_gpu_layers,
        "n_ctx": args.n_ctx,
        "chunk": max(16, *args.parallel),
    }
    configs = [("base", {**base, "parallel": 1, "ff": False})]
    configs += [(f"N={n}", {**base, "parallel": n, "ff": True}) for n in args.parallel]
    figures: dict[str, dict[str, Any]] = {}
    started = time.strftime("%Y-%m-%d %H:%M")
    for name, cfg in configs:
        figures[name] = run(cfg, records)
        print(f"  {name} done in {figures[name]['wall']:.1f} s", file=sys.stderr)
    today = None
    if args.today:
        today = run({**base, "model": args.model}, records, code=str(Path(args.today).resolve()))
        print(f"  today done in {today['wall']:.1f} s", file=sys.stderr)
    ref = figures.get("N=1", figures["base"])["raws"]
    calls = max(figures["base"]["calls"], 1)  # judge calls: one per decision, one per reason
    header = (
        f"{'config':<6} {'items/s':>8} {'x base':>7} {'gen tok/s':>9} {'x base':>7} "
        f"{'sampled':>7} {'forced':>7} {'prompt%':>7} {'bound':>6} {'grammar%':>8} "
        f"{'MB':>6} {'differ':>6}"
    )
    print(
        f"# {args.items} items x 3 metrics, {calls} calls, model {args.model or 'default'}, "
        f"-ngl {args.n_gpu_layers}, {started}"
    )
    print(header)
    print("-" * len(header))
    b = figures["base"]
    base_ips = args.items / b["wall"]
    base_tps = (b["sampled"] + b["forced"]) / b["wall"]
    for name, f in figures.items():
        n = int(name.split("=")[1]) if "=" in name else 1
        tokens = f["sampled"] + f["forced"]
        ips = args.items / f["wall"]
        tps = tokens / f["wall"]
        prompt_share = f["prompt_seconds"] / f["wall"]
        # batching shares out generation steps only: the most it can give with this share
        bound = 1.0 / (prompt_share + (1.0 - prompt_share) / n)
        differ = sum(a != c for a, c in zip(f["raws"], ref, strict=True))
        print(
            f"{name:<6} {ips:>8.3f} {ips / base_ips:>7.2f} {tps:>9.1f} {tps / base_tps:>7.2f} "
            f"{f['sampled'] / calls:>7.1f} {f['forced'] / calls:>7.1f} {100 * prompt_share:>6.0f}% "
            f"{bound:>6.2f} {100 * f['grammar_seconds'] / f['wall']:>7.1f}% "
            f"{f['peak_rss_mb']:>6.0f} {differ:>6}"
        )
    if today is not None:
        ips = args.items / today["wall"]
        print(
            f"{'today':<6} {ips:>8.3f} {ips / base_ips:>7.2f} {'-':>9} {'-':>7} {'-':>7} "
            f"{'-':>7} {'-':>7} {'-':>6} {'-':>8} {today['peak_rss_mb']:>6.0f} {'-':>6}"
        )
        best = max((k for k in figures if k != "base"), key=lambda k: figures[k]["wall"] * -1)
        print(
            f"end to end against today ({args.today}): "
            + ", ".join(
                f"{k} {today['wall'] / figures[k]['wall']:.2f}x" for k in figures if k != "base"
            )
            + f"; fastest {best}"
        )
    ff = figures.get("N=1")
    if ff is not None:
        share = ff["forced"] / (ff["sampled"] + ff["forced"])
        print(
            f"fast-forward at N=1: {100 * share:.0f}% of output tokens forced; decode calls "
            f"{b['decode_calls']} -> {ff['decode_calls']}; argmax accepted without a mask at "
            f"{100 * ff['argmax_accepted'] / max(ff['sampled'], 1):.0f}% of sampled positions"
        )
        grammar = ff["grammar_seconds"] / ff["wall"]
        print(
            f"grammar overhead at N=1: {100 * grammar:.1f}% of the time "
            f"(constrained / unconstrained <= {1 / (1 - grammar):.3f})"
        )
    # the hardware's own limit: one decode of n single-token rows (one a sequence) against one
    ceiling = run({**base, "rows": [1, *args.parallel]}, [], worker=CEILING_WORKER)
    one = ceiling["rows_tps"]["1"]
    rows = [f"{n} rows {v / one:.2f}x" for n, v in ceiling["rows_tps"].items() if n != "1"]
    print(
        f"hardware ceiling (one llama_decode, best of 5): prompt {ceiling['prompt_tps']:.0f} "
        f"tok/s; one row {one:.0f} tok/s"
        + (f"; {', '.join(rows)}" if rows else "")
        + f"; batched generation can reach at most ~{ceiling['prompt_tps'] / one:.1f}x one row"
    )
    figures["ceiling"] = ceiling
    if args.json:
        kept = {k: {kk: vv for kk, vv in v.items() if kk != "raws"} for k, v in figures.items()}
        Path(args.json).write_text(json.dumps(kept, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
