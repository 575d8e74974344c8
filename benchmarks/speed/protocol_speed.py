"""Speed of each protocol against its floor, and of each later one against protocol 1: the
prompt tokens each evaluates.

    python benchmarks/speed/protocol_speed.py [-m MODEL] [--lists FILE] [--n-lists 20] [-t THREADS]
                                        [-ngl N] [--reasons off|on|both] [--protocols 1 3]
                                        [--sets examples top5]

Each decision is a few forced tokens, so evaluating prompts is the floor of a run's time. For
each set, in a fresh process per set (no cache, the stored instruction prefix cleared first,
and nothing kept from one run to the next, so every prompt token is counted), with reasons off
and on, each protocol runs in turn, and the script prints per run:

- prompt tokens evaluated per item, per metric (the rows' ``evaluated_prompt_tokens``);
- s/item per metric (the rows' ``seconds``, which cover all the work done for them);
- items/s over the three metrics, from the wall clock;
- the items' own tokens (each question, passage, reference and response once, the judge's
  tokenizer) and the evaluated prompt tokens over them: how often the protocol reads a token;
- the bound: the evaluated prompt tokens at the machine's measured prompt throughput (a
  ~500-token prompt evaluated alone, best of three, as `localjudge doctor` measures it), and
  the wall clock over that bound;

and then each later protocol against protocol 1 with the same reasons: the evaluated tokens'
ratio and how many times faster the wall clock is (issue 66's targets, default judge, reasons
off: on the LLMJudge lists at most 2.5x their own tokens and 1.8x faster, on the examples at
most 5x and 1.6x faster, each within 1.15x of its floor; reasons on, 1.5x faster).

Sets: ``examples``, the 15 bundled examples (examples/rag.jsonl); ``top5``, LLMJudge dev lists
of five passages (``--lists``: a file written by ``fitting/convert.py llmjudge``; their
proxy response is also the reference, so recall has statements to check). Run it on an idle
machine; compare within one run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workers import OPENING, run_worker  # noqa: E402

WORKER = (
    OPENING
    + r"""
import shutil, tempfile, time
from localjudge import evaluate
try:
    from localjudge.doctor import prompt_rate
except ImportError:  # an older checkout (run from its root) has no doctor rate: the same way
    def prompt_rate(judge, runs=3):
        text = " ".join(f"word{i} is a token of a long prompt about nothing." for i in range(42))
        outs = [judge.generate([{"role": "user", "content": f"{k} {text} Is it?"}], Yes)
                for k in range(runs)]
        return max(o.stats.evaluated_prompt_tokens / o.stats.seconds for o in outs)
from localjudge.metrics import METRICS, MetricSettings
from localjudge.judge.schemas import StrictModel
from typing import Literal

cache_dir = tempfile.mkdtemp()
judge = open_judge(cache=f"{cache_dir}/calls.sqlite3")
bare = judge.inner if hasattr(judge, "inner") else judge


class Yes(StrictModel):
    answer: Literal["yes", "no"]


rate = prompt_rate(bare, runs=3)  # as `localjudge doctor` measures it
# the items' own tokens: each text of each item (question, passages, reference, response) once
own = sum(
    bare.count_tokens(text)
    for r in records
    for text in [r.get("user_input"), *r.get("retrieved_contexts", []), r.get("reference"),
                 r.get("response")]
    if text
)
report = {"prompt_tokens_per_s": rate, "own_tokens": own, "runs": {}}
for reasons in [r == "on" for r in cfg["reasons"]]:
    for protocol in cfg["protocols"]:
        settings = MetricSettings(reasons=reasons, protocol=protocol)
        metrics = [cls.from_settings(settings) for cls in METRICS.values()]
        engine = getattr(bare, "engine", None)
        if engine is not None:  # nothing kept from the run before: every prompt token counted
            engine.kv.forget()
        bare.generate([{"role": "user", "content": "warm up"}], Yes)
        start = time.perf_counter()
        # a run without the cache: every call made, its seconds its own
        results = list(evaluate(records, metrics, bare))
        wall = time.perf_counter() - start
        per = per_metric(results, evaluated="evaluated_prompt_tokens")
        name = f"p{protocol} {'on' if reasons else 'off'}"
        report["runs"][name] = {"wall": wall, "per_metric": per}
shutil.rmtree(cache_dir, ignore_errors=True)
print(json.dumps(report))
"""
)


def top5(path: Path, n: int) -> list[dict[str, Any]]:
    """``n`` LLMJudge lists, their proxy response also the reference."""
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line][:n]
    return [
        {
            "id": r["id"],
            "user_input": r["user_input"],
            "retrieved_contexts": r["retrieved_contexts"],
            "response": r["response"],
            "reference": r["response"],
        }
        for r in rows
    ]


def compare(report: dict[str, Any]) -> None:
    """Each later protocol against protocol 1 with the same reasons: evaluated tokens and wall
    clock."""
    runs = report["runs"]
    for which in ("off", "on"):
        old = runs.get(f"p1 {which}")
        for name, new in runs.items():
            protocol, reasons = name.removeprefix("p").split()
            if old is None or reasons != which or protocol == "1":
                continue
            t_old, t_new = (
                sum(m["evaluated"] for m in r["per_metric"].values()) for r in (old, new)
            )
            print(
                f"reasons {which} | protocol {protocol} against 1 | tokens {t_new} / {t_old} = "
                f"{t_new / t_old:.2f} | wall {new['wall']:.1f} s / {old['wall']:.1f} s: "
                f"{old['wall'] / new['wall']:.2f}x faster"
            )


def table(name: str, n_items: int, report: dict[str, Any]) -> None:
    rate, own = report["prompt_tokens_per_s"], report["own_tokens"]
    print(f"\n{name}: {n_items} items; measured prompt throughput {rate:.0f} tokens/s")
    print(f"the items' own tokens (each text once): {own}, {own / n_items:.0f}/item")
    print("run | metric | prompt tokens/item | s/item | bound s/item | ratio")
    for which, run in report["runs"].items():
        total_tokens = 0
        for metric, m in run["per_metric"].items():
            n = max(m["n"], 1)
            total_tokens += m["evaluated"]
            bound = m["evaluated"] / rate / n
            ratio = (m["seconds"] / n) / bound if bound else float("nan")
            print(
                f"{which} | {metric} | {m['evaluated'] / n:.0f} | {m['seconds'] / n:.2f} | "
                f"{bound:.2f} | {ratio:.2f}"
            )
        bound = total_tokens / rate
        print(
            f"{which} | all three | {total_tokens / n_items:.0f} | wall {run['wall']:.1f} s, "
            f"{n_items / run['wall']:.3f} items/s | bound {bound:.1f} s | "
            f"{run['wall'] / bound:.2f}"
        )
        times = total_tokens / own if own else float("nan")
        print(f"{which} | evaluated / own tokens | {total_tokens} / {own} = {times:.1f}x")
    compare(report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--lists", type=Path, default=HERE.parent / "data" / "llmjudge.jsonl")
    parser.add_argument("--n-lists", type=int, default=20)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("-ngl", "--n-gpu-layers", type=int, default=0)
    parser.add_argument(
        "--reasons", choices=("off", "on", "both"), default="both", help="which runs to make"
    )
    parser.add_argument(
        "--sets", nargs="+", choices=("examples", "top5"), default=["examples", "top5"]
    )
    parser.add_argument(
        "--protocols",
        nargs="+",
        choices=("1", "2", "3"),
        default=["1", "3"],
        help="the protocols to run, one after the other in each set's process",
    )
    args = parser.parse_args()
    reasons = ["off", "on"] if args.reasons == "both" else [args.reasons]
    cfg = {"model": args.model, "threads": args.threads, "ngl": args.n_gpu_layers}
    cfg["reasons"] = reasons
    cfg["protocols"] = args.protocols
    examples = [
        json.loads(line)
        for line in (HERE.parents[1] / "examples" / "rag.jsonl").read_text("utf-8").splitlines()
        if line
    ]
    sets = [("examples", examples)] if "examples" in args.sets else []
    if "top5" in args.sets and args.lists.is_file():
        sets.append((f"top5 ({args.n_lists} LLMJudge dev lists)", top5(args.lists, args.n_lists)))
    print(f"judge {args.model}, threads {args.threads or 'default'}, -ngl {args.n_gpu_layers}")
    for name, records in sets:
        report = run_worker(WORKER, cfg, records)
        table(name, len(records), report)


if __name__ == "__main__":
    main()
