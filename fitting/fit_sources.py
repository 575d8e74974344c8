"""Choose and fit the passage decisions on several sources at once; report per source on the
halves no choice saw; ship only what passes the obvious cases and every source.

    python fitting/convert.py llmjudge --limit 0 --per-query 4 -o /work/runs/dev
    python fitting/convert.py trulens-msmarco --limit 0 -o /work/runs/dev
    python fitting/fit_sources.py judge /work/runs/dev /work/runs/sources [-t 2]
    python fitting/fit_sources.py report /work/runs/sources [--write]

**Sources and samples, fixed before anything was judged.** Every source is split by its groups
(LLMJudge: query; TruLens MS MARCO: query; XQuAD: the question id, so a question's languages
stay together): groups sorted by the sha256 of their name, the first half is the *choice half
A*, the rest the *report half B* (:func:`common.half_of`). Lists as a user's items hold them:

- ``llmjudge``: ``convert.py llmjudge --per-query 4`` (4 lists of 5 per query, 25 queries);
  relevant = TREC grade >= 2, the grade as labelled.
- ``trulens``: ``convert.py trulens-msmarco`` (one positive, one mined negative per query);
  A's first 30 queries, B's first 60 (sha256 order; 40 and 80 when the rule was committed,
  cut for time before any row was judged). Binary labels only. Not judged in the first run
  (the judge made about one call a second on that VM; dropped before any row was seen): the
  rule then pools the sources that were judged.
- ``xquad``: ``xquad-dev/position_relevance.jsonl.gz`` (answer paragraph high, another
  article's none, same article's without the answer low); per language, A's questions 3 at a
  time and B's 6 at a time (4 and 10 when the rule was committed, cut for time before any
  row was judged), language k taking the k-th slice of the half's sha256 order, so every list
  is a different question.
- ``xquadshort``: the same with ``short.jsonl.gz``, 4 and 12 per language.

**Judging** (``judge``): per list, the product's own calls for position with the QUESTION alone
(the baseline call, one call per passage) and relevance's grade call per passage, reasons off,
no cut-offs. A row per passage keeps the raw figures every candidate is computed from: the
position call's log-odds, the grade call's expected grade and the mean log-probability of the
QUESTION after the passage and after no passage (:func:`judge_rows`).

**Readings** (:func:`reading_values`): ``judged`` (the call's own soft value); ``question``
(the QUESTION after the passage minus after none: what shipped); ``question_centred`` (the
QUESTION after the passage minus its mean after each passage of the same list: independent of
the list's order, and of what the language and form of the QUESTION make likely, since every
passage of a list is read with the same QUESTION; 0 for a list of one).

**The rule, fixed before the rows were looked at** (:func:`choose`, :func:`verdict`):

1. Candidates per kind: ``judged`` (its cut-off fitted), ``judged+question_centred`` (a
   fitted combination and cut-off); the unfitted decision (``neutral``: the call's own
   soft value, P(yes) >= 0.5 or the rounded expected grade) is what a fit must beat, and the
   shipped product (``today``) is shown beside them.
2. Fitting on the A halves of every source together, each source weighing the same (its rows
   repeated to the largest source's count); the candidate with the best mean, over sources, of
   the A figure wins (position: kappa; grade: QWK; sources without grades are left out of the
   grade's), fewer readings winning ties within 0.02.
3. The chosen fit ships when, on the B halves: the obvious targets hold (:data:`OBVIOUS`:
   XQuAD answer paragraph relevant >= 0.95 and another article's not relevant >= 0.95 overall,
   >= 0.90 of both in every language; same article's without the answer not relevant >= 0.80;
   short lists: another article's sentence not relevant >= 0.95, answer sentence scored above
   it >= 0.95; grade: answer paragraph medium or high >= 0.90, another article's none >= 0.90);
   no source's paired difference against ``neutral`` has its lower 95% bound below -0.02; and
   the pooled figure (the mean over sources) gains on ``neutral`` with a lower bound above 0.
   Otherwise the kind ships ``neutral`` (no cut-off, no combination).
   Intervals: bootstrap over the groups of each source (paired), 2,000 draws, seeded.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts beside this one

from common import (
    REGISTRY,
    ROLES,
    entry_tables,
    judge_each,
    passage_asks,
    samples,
    write_cutoffs,
)

# --------------------------------------------------------------------------- judging


def judge_rows(lists: list[dict[str, Any]], judge: Any) -> list[dict[str, Any]]:
    """One row per passage of each list: labels and the raw figures of every reading."""
    from localjudge.decisions import Cutoffs, decide_all
    from localjudge.run.evaluate.grouping import ask_grouped

    all_asks = [passage_asks(x["question"], x["passages"], x["answer"]) for x in lists]
    outcomes = ask_grouped(judge, [[a.request for a in asks] for asks in all_asks])
    rows = []
    for x, asks, gens in zip(lists, all_asks, outcomes, strict=True):
        answers = decide_all(asks, gens, Cutoffs())
        base = next(g.reading for a, g in zip(asks, gens, strict=True) if a.baseline)
        per: dict[int, dict[str, Any]] = defaultdict(dict)
        for ask, gen, answer in zip(asks, gens, answers, strict=True):
            if ask.baseline or ask.decision is None:
                continue
            if ask.decision.graded:
                per[ask.at]["grade_soft"] = answer.soft
            elif ask.decision.kind == "position.relevant_answer":
                per[ask.at]["answer_judged"] = answer.readings["judged"]
            else:
                per[ask.at]["judged"] = answer.readings["judged"]
                per[ask.at]["q"] = gen.reading.mean
                per[ask.at]["q_tokens"] = gen.reading.tokens
        for i, text in enumerate(x["passages"]):
            grade = x["grades"][i] if x["grades"] else None
            rows.append(
                {
                    "source": x["source"],
                    "id": x["id"],
                    "group": x["group"],
                    "half": x["half"],
                    "lang": x["lang"],
                    "piece": i,
                    "n": len(x["passages"]),
                    "relevant": x["relevant"][i],
                    "grade": grade,
                    "role": ROLES.get(grade, "") if x["source"].startswith("xquad") else "",
                    "chars": len(text),
                    "base": base.mean,
                    **per[i],
                }
            )
    return rows


def judge_command(args: argparse.Namespace) -> None:
    from localjudge import load_judge

    judge = load_judge(args.model, n_threads=args.threads, cache=args.cache or True)
    jobs = {
        name: (lambda lists=lists: judge_rows(lists, judge))
        for name, lists in samples(args.dev).items()
    }
    judge_each(args.out, jobs, args.only)


def resolve_sha256(model: str | None) -> str:
    """The sha256 a judge's registry entry is keyed by."""
    from localjudge.canonical import file_sha256
    from localjudge.judge.models.registry import resolve_model

    resolved = resolve_model(model)
    return resolved.expected_sha256 or file_sha256(resolved.path)


def write(
    results: dict[str, Any],
    model: str | None = None,
    digest: str = "",
    script: str = "fit_sources.py",
) -> None:
    """Store, for the default judge, each kind's fit where the rule ships it, and remove what
    shipped before where it does not (the kind then takes the neutral cut-off)."""
    import fit_sources_rule as rule

    from localjudge.decisions import Provenance

    sha256 = resolve_sha256(model)
    shipped = entry_tables(sha256)
    values, sources, combinations = shipped["values"], shipped["sources"], shipped["combinations"]
    not_combined, not_shipped = shipped["not_combined"], shipped["not_shipped"]
    date = datetime.date.today().isoformat()
    for kind, result in results.items():
        for table in (values, sources, combinations, not_shipped, not_combined):
            table.pop(kind, None)
        chosen, fit_ = result["chosen"], result["fit"]
        judged = list(result["B"][chosen])
        pooled = result["paired"]["pooled"]
        evidence = {
            "figure": "qwk" if rule.KINDS[kind][0] else "kappa",
            "readings": list(rule.CANDIDATES[chosen]),
            "rule": f"fitting/{script}: obvious targets met, no source worse than the "
            "neutral cut-off (paired lower bound >= -0.02), pooled gain (lower bound > 0)",
            "why": result["why"],
            "per_source_B": {s: f["value"] for s, f in result["B"][chosen].items()},
            "per_source_B_neutral": {s: f["value"] for s, f in result["B"]["neutral"].items()},
            "against": "the neutral cut-off, paired, pooled over sources",
            "difference": pooled["value"],
            "difference_ci95": pooled["ci95"],
            "difference_per_source": result["paired"],
            "obvious_B": {t: f["value"] for t, f in result["obvious"][chosen].items()},
            "data": "chosen and fitted on the A halves of "
            + ", ".join(judged)
            + "; measured on their B halves (split by query / question id)",
        }
        if not result["ships"]:
            not_shipped[kind] = evidence
            continue
        values[kind] = fit_.cuts[0] if len(fit_.cuts) == 1 else list(fit_.cuts)
        # the fit's soft value is its combination's (one of ``judged`` alone too), and the
        # cut-offs were fitted on that
        combinations[kind] = fit_.combination.as_json()
        sources[kind] = Provenance("built-in", script, digest, date, evidence).as_json()
    write_cutoffs(REGISTRY, sha256, shipped)
    print(
        f"registry.json: {sha256[:12]}: cut-offs {sorted(values)}, combined {sorted(combinations)}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    j = sub.add_parser("judge", help="judge every source's sample, a rows file per source")
    j.add_argument("dev", type=Path, help="the folder of convert.py's llmjudge and trulens files")
    j.add_argument("out", type=Path)
    j.add_argument("-m", "--model", default=None)
    j.add_argument("-t", "--threads", type=int, default=None)
    j.add_argument("--cache", default=None)
    j.add_argument("--only", nargs="*", help="judge only these sources")
    r = sub.add_parser("report", help="choose on A, report on B, ship what the rule lets through")
    r.add_argument("rows", type=Path)
    r.add_argument("-m", "--model", default=None, help="the judge the rows are of (--write)")
    r.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "judge":
        judge_command(args)
    else:
        from fit_sources_rule import report_command

        report_command(args)


if __name__ == "__main__":
    main()
