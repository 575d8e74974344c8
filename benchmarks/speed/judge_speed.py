"""Speed and memory of a judge as a user meets it: cold start to the first verdict, seconds per
item for each metric, items/s over all three, and peak RSS.

    python benchmarks/speed/judge_speed.py [-m MODEL ...] [--items 64] [-t THREADS] [-ngl N]

Two sets, each scored with recall, position and relevance through ``evaluate`` (no cache), in a
fresh process per judge and set, one after another (judges never share the cores):

- ``examples``: the 15 bundled examples (examples/rag.jsonl);
- ``synthetic-N``: ``--items`` distinct synthetic items of three short pieces (the items of
  ``benchmarks/speed/engine.py``).

``cold start`` is measured from the start of the process (before ``import localjudge``) to the
first verdict of a one-item position call, so it holds the import, the model load, the token
table and the first prompt. Seconds per item are the judge's own timing of each call (its
``stats.seconds``), per metric; items/s is the whole set's wall clock. Run it on an idle machine
and compare judges within one run (these machines vary about 3x between sessions).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from engine import items as synthetic_items  # noqa: E402
from workers import CLOCK, OPENING, run_worker  # noqa: E402

WORKER = (
    CLOCK
    + OPENING
    + r"""
import resource
from localjudge import evaluate, score
from localjudge.metrics import ContextPosition
judge = open_judge()
loaded = time.perf_counter()
first = records[0]
score(ContextPosition(), judge, user_input=first["user_input"],
      retrieved_contexts=first["retrieved_contexts"][:1], reference=first["reference"])
cold = time.perf_counter() - started
start = time.perf_counter()
results = list(evaluate(records, ["recall", "position", "relevance"], judge))
wall = time.perf_counter() - start
print(json.dumps({
    "model": judge.identity.model,
    "load": loaded - started,
    "cold": cold,
    "wall": wall,
    "n_items": len(records),
    "per_metric": per_metric(results, tokens="completion_tokens"),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""
)


def bundled() -> list[dict[str, Any]]:
    lines = (HERE.parents[1] / "examples" / "rag.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def measure(cfg: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = run_worker(WORKER, cfg, records)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", action="append", default=None,
                        help="judge alias or GGUF path (repeat; default: the default and "
                        "smollm2-135m)")  # fmt: skip
    parser.add_argument("--items", type=int, default=64)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("-ngl", "--n-gpu-layers", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    from localjudge.judge.models.registry import DEFAULT_ALIAS

    models = args.model or list(dict.fromkeys([DEFAULT_ALIAS, "smollm2-135m"]))
    sets = {"examples": bundled(), f"synthetic-{args.items}": synthetic_items(args.items)}
    header = (f"{'judge':<22} {'set':<13} {'cold s':>7} {'load s':>7} {'recall':>7} "
              f"{'position':>8} {'relevance':>9} {'items/s':>8} {'tok/s':>6} {'fail':>4} "
              f"{'MB':>6}")  # fmt: skip
    print("s/item per metric; items/s: the whole set, 3 metrics an item")
    print(header)
    figures = []
    for model in models:
        for name, records in sets.items():
            cfg = {"model": model, "threads": args.threads, "ngl": args.n_gpu_layers}
            r = measure(cfg, records)
            figures.append({"judge": model, "set": name, **r})
            pm = r["per_metric"]

            def s_item(metric: str, pm: dict[str, Any] = pm) -> str:
                m = pm.get(metric)
                return f"{m['seconds'] / m['n']:.2f}" if m and m["n"] else "-"

            seconds = sum(m["seconds"] for m in pm.values())
            tokens = sum(m["tokens"] for m in pm.values())
            fails = sum(m["errors"] for m in pm.values())
            print(
                f"{model[-22:]:<22} {name:<13} {r['cold']:>7.2f} {r['load']:>7.2f} "
                f"{s_item('recall'):>7} {s_item('position'):>8} {s_item('relevance'):>9} "
                f"{r['n_items'] / r['wall']:>8.3f} {tokens / seconds if seconds else 0:>6.1f} "
                f"{fails:>4} {r['peak_rss_mb']:>6.0f}",
                flush=True,
            )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
