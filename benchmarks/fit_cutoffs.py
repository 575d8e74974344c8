"""Fit a judge's cut-offs on the development sets and measure them on the halves held back.

    python benchmarks/convert.py llmjudge --limit 0 --per-query 4 -o /work/runs/dev
    python benchmarks/convert.py wice --limit 150 -o /work/runs/dev
    python benchmarks/fit_cutoffs.py /work/runs/dev/llmjudge.jsonl /work/runs/dev/wice.jsonl \\
        [-m qwen2.5-coder-1.5b] [--lists 30] [--claims 150] [--cache FILE] [-t 2] [--write]

One run per dataset through the product (``localjudge.run.calibrate``: one decision per call,
reasons off, the judge's argmax), then per kind of decision: the two-fold check (cut-offs
fitted on half of the queries or claims, measured on the other half, and the other way round,
with bootstrap intervals over queries or claims), the cut-offs fitted on all of it, s/item, and
the share of items whose verdict vector is the most common one (judge and people).

LLMJudge items carry a *proxy* response (the start of the best passage, see convert.py): it is
dropped for position, which would otherwise be shown the answer as its EXPECTED ANSWER.
WiCE: recall is fitted and measured on supported (1) against not supported (0); supported
against partially + not is printed beside it (AUC of the soft value only: no cut-off is fitted
on it). ``--write`` stores the cut-offs in ``localjudge/judge/registry.json`` for the judge's
sha256, with this command line as their source: only those whose held-out figure (the mean of
the two folds: kappa, QWK, balanced accuracy) beats the judge's argmax on the same halves and
is more than 0.05 above chance (kappa and QWK 0, balanced accuracy 0.5); a kind left out keeps
the argmax.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from localjudge import load_judge
from localjudge.run.calibrate import (
    calibration_table,
    fit_cutoffs,
    judge_labelled,
    observations,
)
from localjudge.stats.cutoffs_fit import Observation, agreement, hard

REGISTRY = Path(__file__).resolve().parent.parent / "localjudge" / "judge" / "registry.json"
#: a held-out figure at chance (and up to MARGIN above it) ships no cut-off, whatever the argmax
CHANCE = {"kappa": 0.0, "qwk": 0.0, "balanced_accuracy": 0.5}
MARGIN = 0.05


def read(path: Path, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` records (0: all)."""
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]
    return records[:limit] if limit else records


def spread(records: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` records taken round-robin over their queries (``source.qid``): the
    first list of every query, then the second, ..., so that a few lists still span the
    queries (agreement varies more between queries than within one)."""
    by_query: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_query.setdefault(str(r.get("source", {}).get("qid")), []).append(r)
    rounds = max(len(v) for v in by_query.values())
    ordered = [q[k] for k in range(rounds) for q in by_query.values() if k < len(q)]
    return ordered[:limit] if limit else ordered


def mode_share(vectors: list[tuple[Any, ...]]) -> float | None:
    """The share of items whose vector is the most common one."""
    if not vectors:
        return None
    return Counter(vectors).most_common(1)[0][1] / len(vectors)


def run(name: str, records: list[dict[str, Any]], judge: Any, metrics: list[str]) -> dict:
    start = time.perf_counter()
    results = judge_labelled(records, judge, metrics=metrics)
    wall = time.perf_counter() - start
    failed = [r for r in results if r.error is not None]
    calibration = fit_cutoffs(records, results, source=f"benchmarks/fit_cutoffs.py {name}")
    print(f"\n## {name}: {len(records)} items, {len(failed)} failed, {wall:.0f} s")
    for metric in metrics:
        rows = [r for r in results if r.metric == metric and r.result is not None]
        seconds = sum(r.result.stats.seconds for r in rows if r.result.stats)
        if rows:
            print(f"{metric}: {len(rows)} items, {seconds / len(rows):.2f} s/item (rows' seconds)")
    print(calibration_table(calibration))
    found = observations(records, results)
    for kind, obs in found.items():
        if not obs or kind not in calibration.cutoffs.values:
            continue
        cuts = calibration.cutoffs.values[kind]
        graded = kind == "relevance.grade"
        whole = agreement(obs, cuts, graded=graded)
        print(
            f"{kind}: fitted on all {len(obs)}: cut-offs {list(cuts)}; judge shares "
            f"{[round(x, 2) for x in whole['judge_shares']]} people "
            f"{[round(x, 2) for x in whole['human_shares']]}"
        )
    return {"calibration": calibration, "results": results, "found": found}


def item_vectors(results: list, records: list, kind: str, cuts: Any) -> None:
    """Print the verdict-vector mode share of ``kind``'s metric, judge (argmax and fitted) and
    people."""
    found: dict[int, list[Observation]] = {}
    for res in results:
        one = observations(records, [res]).get(kind) or []
        if one:
            found[res.index] = one
    if not found:
        return
    argmax = [tuple(hard(obs, None)) for obs in found.values()]
    fitted = [tuple(hard(obs, cuts)) for obs in found.values()]
    people = [tuple(o.human for o in obs) for obs in found.values()]
    print(
        f"{kind}: most common verdict vector's share: judge argmax {mode_share(argmax):.2f}, "
        f"fitted {mode_share(fitted):.2f}, people {mode_share(people):.2f} ({len(found)} items)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("llmjudge", type=Path)
    parser.add_argument("wice", type=Path)
    parser.add_argument("-m", "--model", default="qwen2.5-coder-1.5b")
    parser.add_argument(
        "--lists", type=int, default=50, help="LLMJudge lists, round-robin over queries (0: all)"
    )
    parser.add_argument("--claims", type=int, default=150, help="WiCE claims (0: all)")
    parser.add_argument("--cache", default=None, help="the judge-call cache (reruns are free)")
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--write", action="store_true", help="store the cut-offs in registry.json")
    args = parser.parse_args(argv)
    judge = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
    print(f"judge {judge.identity.model} ({judge.identity.sha256[:12]})")
    lists = spread(read(args.llmjudge, 0), args.lists)
    no_proxy = [{k: v for k, v in r.items() if k != "response"} for r in lists]
    claims = read(args.wice, args.claims)
    position = run("LLMJudge dev, position", no_proxy, judge, ["position"])
    relevance = run("LLMJudge dev, relevance", lists, judge, ["relevance"])
    binary = [r for r in claims if r["labels"].get("recall") in (0, 1)]
    recall = run("WiCE dev, recall (supported vs not)", binary, judge, ["recall"])
    partial = [
        {**r, "labels": {"recall": 0 if r["labels"]["recall"] == 0.5 else r["labels"]["recall"]}}
        for r in claims
    ]
    obs = observations(partial, judge_labelled(partial, judge, metrics=["recall"]))
    whole = agreement(obs["recall.supported"], None, graded=False)
    print(
        f"\nWiCE supported vs partially + not ({len(partial)} claims): "
        f"AUC {whole['auc']['value']:.3f} {whole['auc']['ci95']}"
    )
    cutoffs: dict[str, Any] = {}
    shipped: list[str] = []
    left: list[str] = []
    for name, found, objective in (
        ("position.relevant", position, "kappa"),
        ("relevance.grade", relevance, "qwk"),
        ("recall.supported", recall, "balanced_accuracy"),
    ):
        fitted = found["calibration"].cutoffs.values.get(name)
        if fitted is None:
            continue
        source = lists if name != "recall.supported" else binary
        item_vectors(found["results"], source if name != "position.relevant" else no_proxy,
                     name, fitted)  # fmt: skip
        mean = found["calibration"].checks[name]["mean"]
        before, after = mean["argmax"][objective], mean["fitted"][objective]
        figures = f"held-out {objective} {_num(after)} against argmax {_num(before)}"
        if (
            before is not None
            and after is not None
            and after > max(before, CHANCE[objective] + MARGIN)
        ):
            cutoffs[name] = fitted[0] if len(fitted) == 1 else list(fitted)
            shipped.append(f"{name} ({figures})")
        else:  # a cut-off that does worse on held-out data than the argmax is not shipped
            print(f"{name}: not shipped: {figures}")
            left.append(f"{name} ({figures})")
    print(f"\ncut-offs shipped: {json.dumps(cutoffs)}")
    if args.write:
        command = " ".join(["benchmarks/fit_cutoffs.py", *(argv or sys.argv[1:])])
        source = (
            f"{command}: LLMJudge dev ({len(lists)} lists), WiCE dev ({len(binary)} claims, "
            f"supported vs not); shipped: {', '.join(shipped) or 'none'}; "
            f"argmax kept: {', '.join(left) or 'none'}"
        )
        write_cutoffs(REGISTRY, judge.identity.sha256, {"values": cutoffs, "source": source})
        print(f"written to {REGISTRY}")


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def write_cutoffs(registry: Path, sha256: str, entry: dict[str, Any]) -> None:
    """Store ``entry`` under ``sha256`` in the registry's top-level ``cutoffs`` object, the rest
    of the file left as it is written (only that object is re-serialised)."""
    text = registry.read_text("utf-8")
    table = json.loads(text).get("cutoffs", {})
    table[sha256] = entry
    block = json.dumps(table, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    key = '"cutoffs": '
    start = text.find(key)
    if start < 0:  # none yet: the object opens the file
        text = text.replace("{", "{\n  " + key + block + ",", 1)
    else:
        _, length = json.JSONDecoder().raw_decode(text[start + len(key) :])
        end = start + len(key) + length
        text = text[: start + len(key)] + block + text[end:]
    json.loads(text)  # still one valid registry
    registry.write_text(text, "utf-8")


if __name__ == "__main__":
    main()
