"""Fit a judge's cut-offs on the development sets and measure them on the halves held back.

    python fitting/convert.py llmjudge --limit 0 --per-query 4
    python fitting/convert.py wice --limit 150
    python fitting/convert.py ragbench --limit 6
    python fitting/fit_cutoffs.py benchmarks/data/llmjudge.jsonl benchmarks/data/wice.jsonl \\
        --ragbench benchmarks/data/ragbench.jsonl [-m qwen2.5-coder-1.5b] [--lists 50] \\
        [--claims 150] [--cache FILE] [-t 2] [--write]

One run per dataset through the product (``localjudge.run.calibrate``: one decision per call,
reasons off, no cut-offs), then per kind of decision: the two-fold check (cut-offs fitted on
half of the queries or claims, measured on the other half, and the other way round, with
bootstrap intervals over queries or claims), the storing rule, the cut-offs fitted on all of
it, s/item, and the share of items whose verdict vector is the most common one.

Kinds and their data: ``position.relevant`` (the question alone) on LLMJudge, whose *proxy*
response (the start of the best passage, see convert.py) is dropped for position;
``relevance.grade`` on LLMJudge with the proxy; ``recall.supported`` on WiCE, supported (1)
against not supported (0) (supported against partially + not is printed beside it: AUC only);
``position.relevant_answer`` (the phrasing with the EXPECTED ANSWER, which eval asks of every
item with a reference or a response) on RAGBench, whose per-document relevance labels were made
by GPT-4-class models, not people, with its responses as the expected answer.

``--write`` stores cut-offs in ``localjudge/judge/models/registry.json`` for the judge's sha256
under the one rule that ``localjudge calibrate`` uses too, fixed before it was applied
(:func:`localjudge.decisions.held_out_check`): a kind ships only when the paired held-out
difference, cut-offs fitted on the other half of the groups minus the baseline (the larger
probability) on the same groups, has a lower 95% bound (bootstrap over groups) above 0. Each shipped
kind keeps its provenance (file name, sha256, date, that held-out figure with its interval and the
groups it was measured on); a kind that does not ship is listed under ``not_shipped`` with the same
evidence.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from localjudge import load_judge
from localjudge.decisions import Provenance
from localjudge.decisions.fit import Observation, agreement, hard
from localjudge.run.calibrate.fitting import (
    Calibration,
    fit_cutoffs,
    judge_labelled,
    observations,
)
from localjudge.run.calibrate.table import calibration_table

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts beside this one

from common import REGISTRY, write_cutoffs


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


def origin_of(path: Path) -> Provenance:
    """The provenance template of cut-offs fitted on ``path``: its name (no directories), its
    sha256 and today's date."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Provenance("built-in", path.name, digest, datetime.date.today().isoformat())


def run(
    name: str, records: list[dict[str, Any]], judge: Any, metrics: list[str], origin: Provenance
) -> dict:
    start = time.perf_counter()
    results = judge_labelled(records, judge, metrics=metrics)
    wall = time.perf_counter() - start
    failed = [r for r in results if r.error is not None]
    calibration = fit_cutoffs(records, results, origin=origin)  # against the baseline
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
    graded = kind == "relevance.grade"
    argmax = [tuple(hard(obs, None, graded=graded)) for obs in found.values()]
    fitted = [tuple(hard(obs, cuts, graded=graded)) for obs in found.values()]
    people = [tuple(o.human for o in obs) for obs in found.values()]
    print(
        f"{kind}: most common verdict vector's share: judge baseline {mode_share(argmax):.2f}, "
        f"fitted {mode_share(fitted):.2f}, people {mode_share(people):.2f} ({len(found)} items)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("llmjudge", type=Path)
    parser.add_argument("wice", type=Path)
    parser.add_argument("--ragbench", type=Path, default=None, help="position with an answer")
    parser.add_argument("-m", "--model", default="qwen2.5-coder-1.5b")
    parser.add_argument(
        "--lists", type=int, default=50, help="LLMJudge lists, round-robin over queries (0: all)"
    )
    parser.add_argument("--claims", type=int, default=150, help="WiCE claims (0: all)")
    parser.add_argument("--cache", default=None, help="the judge-call cache (reruns are free)")
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--write", action="store_true", help="store the cut-offs in registry.json")
    parser.add_argument(
        "--no-partial",
        action="store_true",
        help="skip WiCE supported vs partially + not (its AUC only; 54 claims more to judge)",
    )
    args = parser.parse_args(argv)
    judge = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
    print(f"judge {judge.identity.model} ({judge.identity.sha256[:12]})")
    lists = spread(read(args.llmjudge, 0), args.lists)
    no_proxy = [{k: v for k, v in r.items() if k != "response"} for r in lists]
    claims = read(args.wice, args.claims)
    llmjudge, wice = origin_of(args.llmjudge), origin_of(args.wice)
    found = {
        "position.relevant": (
            run("LLMJudge dev, position", no_proxy, judge, ["position"], llmjudge),
            no_proxy,
            f"LLMJudge dev, {len(lists)} lists",
        ),
        "relevance.grade": (
            run("LLMJudge dev, relevance", lists, judge, ["relevance"], llmjudge),
            lists,
            f"LLMJudge dev, {len(lists)} lists",
        ),
    }
    binary = [r for r in claims if r["labels"].get("recall") in (0, 1)]
    found["recall.supported"] = (
        run("WiCE dev, recall (supported vs not)", binary, judge, ["recall"], wice),
        binary,
        f"WiCE dev, {len(binary)} claims, supported vs not",
    )
    if args.ragbench is not None:
        rag = read(args.ragbench, 0)
        found["position.relevant_answer"] = (
            run("RAGBench, position with the answer", rag, judge, ["position"],
                origin_of(args.ragbench)),
            rag,
            f"RAGBench test subsets, {len(rag)} items, LLM-made labels",
        )  # fmt: skip
    if not args.no_partial:
        partial_auc(claims, judge)
    shipped, kept = shipping(found)
    print(f"\ncut-offs shipped: {json.dumps(shipped['values'])}")
    print(f"not shipped: {', '.join(kept) or 'none'}")
    if args.write:
        write_cutoffs(REGISTRY, judge.identity.sha256, {**shipped, "not_shipped": kept})
        print(f"written to {REGISTRY}")


def partial_auc(claims: list[dict[str, Any]], judge: Any) -> None:
    """Print the soft value's AUC of WiCE's supported claims against partially + not."""
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


def shipping(
    found: dict[str, tuple[dict[str, Any], list[dict[str, Any]], str]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The registry entry of the kinds the rule ships (values and sources), and the evidence
    of each fitted kind it does not ship."""
    values: dict[str, Any] = {}
    sources: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    for name, (outcome, records, data) in found.items():
        calibration: Calibration = outcome["calibration"]
        fitted = calibration.cutoffs.values.get(name)
        if fitted is None:
            print(f"{name}: not fitted: {calibration.skipped.get(name, 'no decisions')}")
            continue
        item_vectors(outcome["results"], records, name, fitted)
        source = calibration.cutoffs.source(name).as_json()
        source["heldout"] = {**source["heldout"], "data": data}
        rule = calibration.rules[name]
        print(f"{name}: {'ships' if rule.store else 'not shipped'}: {source['heldout']}")
        if rule.store:
            values[name] = fitted[0] if len(fitted) == 1 else list(fitted)
            sources[name] = source
        else:
            kept[name] = source["heldout"]
    return {"values": values, "sources": sources}, kept


if __name__ == "__main__":
    main()
