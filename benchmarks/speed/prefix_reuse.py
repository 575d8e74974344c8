"""Prompt tokens read once: what shared openings and the stored instructions save, in one run.

    python benchmarks/speed/prefix_reuse.py [-m MODEL ...] [--before DIR] [-ngl -1] [-t THREADS]
                                      [--no-reasons] [--items 64] [--limit N]

For each judge (default: the default judge and SmolLM2), on the 15 bundled examples, on
benchmarks/speed/engine.py's 64 synthetic items (both with contexts of a sentence or two) and on 16
items the size of a web search's top 5 (``top5x16``: five passages of about 95 words), each x 3
metrics (``--limit N``: the first N items of each set):

- **prompt tokens evaluated per item** for one metric (recall), two (recall, position) and three,
  once the instructions are held, from the exact prompts the judge renders for every call (one
  decision per call; with reasons on, one reason call per decision too). Calls that share an
  opening (recall: the item's CONTEXT passages; position and relevance: a passage's QUESTION and
  PASSAGE, the same for both metrics) evaluate it once per pass, the decisions' then the
  reasons' (``shared``), against every call evaluating its whole part after the instructions
  (``unshared``); and the ratio of two metrics to one. ``calls``: the calls per item for the
  three metrics; ``instr``: the instruction tokens held (each distinct system text's, once);
- **cold start to first verdict**: a new process loads the judge and scores one item's recall,
  with an empty prefix store and with the instructions stored by an earlier process; the time
  after the load, and from process start;
- **items/s end to end**, each set in a new process without the judge-call cache, the stored
  instructions in place (every run after a machine's first), and with ``--before DIR`` the same
  through the localjudge checked out in DIR (a worktree of an earlier commit).

Beside each time it prints the bound prompt evaluation sets: the figure if evaluating prompt
tokens took no time at all (items/s over the time spent outside prompt evaluation). Every
process has the machine to itself (run it on an idle machine: llama.cpp's threads spin); the
cache directory is a temporary one that shares the real one's assembled models and token
tables, so nothing is downloaded or assembled. On a GPU box the same command with ``-ngl -1``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from engine import TOPICS, items  # noqa: E402 (the 64-item set of the engine benchmark)
from workers import CLOCK, OPENING, run_worker  # noqa: E402

EXAMPLES = HERE.parents[1] / "examples" / "rag.jsonl"

#: scores records x 3 metrics (or the first record's recall, for a cold start) in a new process
WORKER = (
    CLOCK
    + OPENING
    + r"""
import inspect
from localjudge import evaluate
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
kw = {}
if "store_prefix" in inspect.signature(load_judge).parameters:
    kw["store_prefix"] = cfg["store"]
judge = open_judge(**kw)
loaded = time.perf_counter()
r = cfg["reasons"]
metrics = [ContextRecall(reasons=r)] if cfg["first"] else [
    ContextRecall(reasons=r), ContextPosition(reasons=r), ContextRelevance(reasons=r)]
results = list(evaluate(records[:1] if cfg["first"] else records, metrics, judge))
end = time.perf_counter()
s = judge.engine.stats
print(json.dumps({
    "from_start": end - started, "load": loaded - started, "wall": end - loaded,
    "prompt_seconds": s.prompt_seconds, "prompt_tokens": s.prompt_tokens_evaluated,
    "errors": sum(r.error is not None for r in results),
    "calls": sum(r.result.calls for r in results if r.result is not None),
    "loads": getattr(s, "prefix_loads", 0),
}))
"""
)

#: the exact prompt tokens of every call of every item x metric, as the judge renders them:
#: per call [tokens, fixed, shared end, instructions key, opening key (per pass: decisions, then
#: reasons)]
TOKENS = (
    OPENING
    + r"""
import hashlib
from localjudge.data.item import make_item
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.metrics.asks import Answer, reason_request
judge = open_judge(n_threads=1, n_gpu_layers=0)


def key(tokens):
    return hashlib.sha256(json.dumps(tokens).encode()).hexdigest()[:16]


out = []
for i, record in enumerate(records):
    row = {}
    r = cfg["reasons"]
    for metric in (ContextRecall(reasons=r), ContextPosition(reasons=r),
                   ContextRelevance(reasons=r)):
        try:
            asks = metric.build(make_item(record, index=i))
        except Exception:
            continue
        if not isinstance(asks, list):
            continue
        requests = [(a.request, "") for a in asks]
        if r:  # one reason call per decision, its verdict the decision's first value; the
            # runner asks them after every decision: their openings are read again
            requests += [(reason_request(a, Answer(a.decision.values[0])), "reason:")
                         for a in asks if a.decision is not None and a.explain]
        calls = []
        for q, step in requests:
            p = judge.render(q.messages, shared_chars=q.shared_chars)
            shared = p.shared if p.shared is not None else p.fixed
            calls.append([len(p.tokens), p.fixed, shared, key(p.tokens[:p.fixed]),
                          step + key(p.tokens[:shared])])
        row[metric.name] = calls
    out.append(row)
print(json.dumps(out))
"""
)


def long_items(n: int) -> list[dict[str, Any]]:
    """``n`` items the size of a web search's top 5 (five passages of about 95 words each, as
    the LLMJudge development lists have), the same on every run."""
    out = []
    for i in range(n):
        name, where, fact = TOPICS[i % len(TOPICS)]
        passages = [
            " ".join(
                f"Passage {k} of item {i}, sentence {j}: {name} lies in {where} and is {fact}; "
                f"surveys in year {1900 + 7 * j + k} recorded it."
                for j in range(4)
            )
            for k in range(5)
        ]
        out.append(
            {
                "id": f"long-{i}",
                "user_input": f"Where is {name} and what is notable about it? (case {i})",
                "retrieved_contexts": passages,
                "reference": f"{name[0].upper()}{name[1:]} is in {where}. It is {fact}.",
                "response": f"{name[0].upper()}{name[1:]} is in {where}; it is {fact}.",
            }
        )
    return out


def run(code: str, cfg: dict[str, Any], records: list[Any], env: dict[str, str]) -> Any:
    return run_worker(code, cfg, records, env=env, cwd=env.get("LJ_CWD"))


def per_item(rows: list[dict[str, list[list[Any]]]]) -> dict[str, float]:
    """Prompt tokens evaluated per item with the instructions held, for 1, 2 and 3 metrics:
    each distinct opening of the item's calls once (its shared part: recall's CONTEXT passages,
    a passage's QUESTION and PASSAGE, which position's and relevance's calls share) plus each
    call's own tail (``shared``), against every call evaluating its whole part after the
    instructions (``unshared``)."""
    full = [r for r in rows if len(r) == 3]
    n = max(len(full), 1)

    def shared(names: tuple[str, ...]) -> float:
        total = 0
        for r in full:
            calls = [c for m in names for c in r[m]]
            openings = {c[4]: c[2] - c[1] for c in calls}
            total += sum(openings.values()) + sum(c[0] - c[2] for c in calls)
        return total / n

    def unshared(names: tuple[str, ...]) -> float:
        return sum(c[0] - c[1] for r in full for m in names for c in r[m]) / n

    one, two, three = ("recall",), ("recall", "position"), ("recall", "position", "relevance")
    instructions = {c[3]: c[1] for r in full for calls in r.values() for c in calls}
    return {
        "items": len(full),
        "calls": sum(len(calls) for r in full for calls in r.values()) / n,
        "instructions": sum(instructions.values()),
        "one": shared(one),
        "two": shared(two),
        "three": shared(three),
        "unshared_one": unshared(one),
        "unshared_two": unshared(two),
        "unshared_three": unshared(three),
    }


def scratch_cache(real: Path) -> Path:
    """A temporary cache directory sharing the real one's models, token tables and sha256 memo
    (its own prefix store, its own call cache)."""
    tmp = Path(tempfile.mkdtemp(prefix="lj-prefix-bench-"))
    for name in ("models", "tokens", "sha256.json"):
        if (real / name).exists():
            (tmp / name).symlink_to(real / name)
    return tmp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", action="append", default=None)
    parser.add_argument("--before", default=None, metavar="DIR")
    parser.add_argument("-ngl", "--n-gpu-layers", type=int, default=0)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None, help="at most N items of each set")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    parser.add_argument("--no-reasons", action="store_true", help="metrics without reasons")
    args = parser.parse_args(argv)
    from localjudge.judge.cache.database import default_cache_dir

    models = args.model or ["qwen2.5-coder-1.5b", "smollm2-135m"]
    sets = {
        "examples": [json.loads(x) for x in EXAMPLES.read_text("utf-8").splitlines() if x],
        f"synthetic{args.items}": items(args.items),
        "top5x16": long_items(16),
    }
    first = sets["examples"][1:2]  # the cold start's item
    sets = {name: records[: args.limit or None] for name, records in sets.items()}
    real = default_cache_dir()
    figures: dict[str, Any] = {}
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, -ngl {args.n_gpu_layers}, threads "
          f"{args.threads or 'default'}, reasons {'off' if args.no_reasons else 'on'}, "
          f"before: {args.before or '-'}")  # fmt: skip
    for model in models:
        cache = scratch_cache(real)
        env = {**os.environ, "LOCALJUDGE_CACHE_DIR": str(cache)}
        base = {
            "model": model,
            "threads": args.threads,
            "ngl": args.n_gpu_layers,
            "reasons": not args.no_reasons,
        }
        fig: dict[str, Any] = figures.setdefault(model, {})
        print(f"\n## {model}")
        print("\nprompt tokens evaluated per item (instructions held), unshared -> shared:")
        print(f"{'set':<12} {'items':>5} {'calls':>5} {'instr':>5} {'1 metric':>14} "
              f"{'2 metrics':>16} {'3 metrics':>16} {'2 vs 1':>12}")  # fmt: skip
        for name, records in sets.items():
            t = per_item(run(TOKENS, base, records, env))
            fig[f"tokens_{name}"] = t
            print(
                f"{name:<12} {t['items']:>5} {t['calls']:>5.1f} {t['instructions']:>5} "
                f"{t['unshared_one']:>6.0f} -> {t['one']:>4.0f} "
                f"{t['unshared_two']:>6.0f} -> {t['two']:>6.0f} "
                f"{t['unshared_three']:>6.0f} -> {t['three']:>6.0f} "
                f"{t['unshared_two'] / t['unshared_one']:>5.2f} -> {t['two'] / t['one']:.2f}"
            )
        # cold start: an empty store, then the store the first process left
        cold = run(WORKER, {**base, "first": True, "store": True}, first, env)
        warm = run(WORKER, {**base, "first": True, "store": True}, first, env)
        fig["cold"], fig["warm"] = cold, warm
        print("\ncold start to the first verdict (one item's recall, a new process):")
        print(f"{'prefix':<8} {'after load s':>12} {'bound s':>8} {'from start s':>12} "
              f"{'load s':>7} {'prompt tok':>10}")  # fmt: skip
        for label, f in (("computed", cold), ("stored", warm)):
            print(
                f"{label:<8} {f['wall']:>12.2f} {f['wall'] - f['prompt_seconds']:>8.2f} "
                f"{f['from_start']:>12.2f} {f['load']:>7.2f} {f['prompt_tokens']:>10}"
            )
        print(
            f"stored / computed: {cold['wall'] / warm['wall']:.1f}x shorter after the load, "
            f"{cold['from_start'] / warm['from_start']:.1f}x from process start"
        )
        print("\nend to end, x 3 metrics, a new process each, no call cache:")
        print(f"{'set':<12} {'code':<7} {'items/s':>8} {'bound':>8} {'prompt%':>7} "
              f"{'prompt tok':>10} {'speed-up':>8}")  # fmt: skip
        for name, records in sets.items():
            now = run(WORKER, {**base, "first": False, "store": True}, records, env)
            rows = [("after", now)]
            if args.before:
                env_before = {
                    **env,
                    "PYTHONPATH": str(Path(args.before).resolve()),
                    "LJ_CWD": str(Path(args.before).resolve()),
                }
                then = run(WORKER, {**base, "first": False, "store": False}, records, env_before)
                rows.insert(0, ("before", then))
                fig[f"before_{name}"] = then
            fig[f"after_{name}"] = now
            for label, f in rows:
                n = len(records)
                ips = n / f["wall"]
                bound = n / max(f["wall"] - f["prompt_seconds"], 1e-9)
                speed = (rows[0][1]["wall"] / f["wall"]) if args.before else 1.0
                print(
                    f"{name:<12} {label:<7} {ips:>8.3f} {bound:>8.3f} "
                    f"{100 * f['prompt_seconds'] / f['wall']:>6.0f}% {f['prompt_tokens']:>10} "
                    f"{speed:>7.2f}x"
                )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
